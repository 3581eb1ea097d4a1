// `tether hub` serves the addon conversion webhook when given its certificate, and a webhook flag
// that cannot work stops startup with a message naming the flag. The hub's kubeconfig points at a
// closed port: the webhook does not depend on the apiserver being reachable.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/localenv/process.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/index.ts';
import { pollUntil } from '../../src/wait.ts';

const dir = mkdtempSync(join(tmpdir(), 'tether-hub-webhook-'));
const children: ChildProcess[] = [];
let caPem = '';
let certFile = '';
let keyFile = '';
let otherKeyFile = '';
let kubeconfig = '';

beforeAll(async () => {
  const ca = await createCertificateAuthority('hub-webhook-test-ca');
  caPem = ca.certPem;
  const serving = await issueCertificate(ca, {
    commonName: 'webhook',
    usage: 'server',
    ipAddresses: ['127.0.0.1'],
  });
  const other = await issueCertificate(ca, { commonName: 'other', usage: 'server' });
  certFile = join(dir, 'tls.crt');
  keyFile = join(dir, 'tls.key');
  otherKeyFile = join(dir, 'other.key');
  writeFileSync(certFile, serving.certPem);
  writeFileSync(keyFile, serving.keyPem);
  writeFileSync(otherKeyFile, other.keyPem);
  kubeconfig = join(dir, 'hub.kubeconfig');
  const closed = await freePort();
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: hub, cluster: {server: "https://127.0.0.1:${closed}", insecure-skip-tls-verify: true}}]`,
      'users: [{name: admin, user: {token: not-used}}]',
      'contexts: [{name: hub, context: {cluster: hub, user: admin}}]',
      'current-context: hub',
    ].join('\n'),
  );
});

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function startHub(args: string[]): {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
} {
  const child = spawn(
    process.execPath,
    ['bin/tether.js', 'hub', `--kubeconfig=${kubeconfig}`, '--no-leader-elect', '--ops-port=0', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TETHER_LOG_LEVEL: 'error' } },
  );
  children.push(child);
  let output = '';
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

function convert(port: number): Promise<{ status: number; body: Record<string, unknown> }> {
  const review = JSON.stringify({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'ConversionReview',
    request: {
      uid: 'abc',
      desiredAPIVersion: 'addon.open-cluster-management.io/v1beta1',
      objects: [
        {
          apiVersion: 'addon.open-cluster-management.io/v1alpha1',
          kind: 'ClusterManagementAddOn',
          metadata: { name: 'a' },
          spec: { supportedConfigs: [{ group: '', resource: 'configmaps', defaultConfig: { name: 'x' } }] },
        },
      ],
    },
  });
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/convert', ca: caPem }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }),
      );
    });
    req.on('error', reject);
    req.end(review);
  });
}

describe('tether hub --webhook-*', () => {
  it('serves POST /convert on --webhook-port with the given certificate', async () => {
    const port = await freePort();
    const hub = startHub([
      '--webhook-bind-address=127.0.0.1',
      `--webhook-port=${port}`,
      `--webhook-tls-cert-file=${certFile}`,
      `--webhook-tls-private-key-file=${keyFile}`,
    ]);
    const reply = await pollUntil(() => convert(port).catch(() => undefined), {
      timeoutMs: 30_000,
      intervalMs: 200,
      description: `tether hub to serve the webhook on ${port} (output: ${hub.output()})`,
    });
    expect(reply.status).toBe(200);
    const response = reply.body['response'] as { uid: string; convertedObjects: { spec: unknown }[] };
    expect(response.uid).toBe('abc');
    expect(response.convertedObjects[0]?.spec).toEqual({
      defaultConfigs: [{ group: '', resource: 'configmaps', name: 'x' }],
    });
  });

  it.each([
    ['a certificate without its key', () => [`--webhook-tls-cert-file=${certFile}`], /go together/],
    [
      'a missing certificate file',
      () => [`--webhook-tls-cert-file=${join(dir, 'nope.crt')}`, `--webhook-tls-private-key-file=${keyFile}`],
      /--webhook-tls-cert-file .*no such file/,
    ],
    [
      'a key that does not match the certificate',
      () => [`--webhook-tls-cert-file=${certFile}`, `--webhook-tls-private-key-file=${otherKeyFile}`],
      /not a usable certificate and key/,
    ],
    ['a port out of range', () => ['--webhook-port=70000'], /--webhook-port must be a whole number/],
  ])('refuses %s', async (_, args, message) => {
    const hub = startHub(args());
    expect(await hub.exited).not.toBe(0);
    expect(hub.output()).toMatch(message);
  });

  it('refuses a port that is taken', async () => {
    const port = await freePort();
    const first = startHub([
      '--webhook-bind-address=127.0.0.1',
      `--webhook-port=${port}`,
      `--webhook-tls-cert-file=${certFile}`,
      `--webhook-tls-private-key-file=${keyFile}`,
    ]);
    await pollUntil(() => convert(port).catch(() => undefined), {
      timeoutMs: 30_000,
      intervalMs: 200,
      description: `the first tether hub to serve on ${port} (output: ${first.output()})`,
    });
    const second = startHub([
      '--webhook-bind-address=127.0.0.1',
      `--webhook-port=${port}`,
      `--webhook-tls-cert-file=${certFile}`,
      `--webhook-tls-private-key-file=${keyFile}`,
    ]);
    expect(await second.exited).not.toBe(0);
    expect(second.output()).toMatch(/--webhook-port .*cannot listen \(EADDRINUSE\)/);
  });
});

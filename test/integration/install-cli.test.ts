// `tether init` / `tether join` without a cluster: bad flags stop with a message that says what to
// fix before anything is contacted, and `tether join --dry-run` prints the agent's manifests (no
// cluster needed: it reads only the CA files) with the flags carried into the Deployment.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { createCertificateAuthority } from '../../src/pki/index.ts';

const exec = promisify(execFile);
let dir: string;
let caFile: string;
let kubeconfig: string;

async function tether(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await exec(process.execPath, ['bin/tether.js', ...args], { timeout: 30_000 });
    return { code: 0, ...r };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tether-install-cli-'));
  const ca = await createCertificateAuthority('test-ca');
  caFile = join(dir, 'ca.crt');
  writeFileSync(caFile, ca.certPem);
  kubeconfig = join(dir, 'hub.kubeconfig');
  // nothing listens there: every check below must stop before a connection is tried
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: hub, cluster: {server: "https://127.0.0.1:1", certificate-authority-data: "' +
        Buffer.from(ca.certPem).toString('base64') +
        '"}}]',
      'users: [{name: admin, user: {token: abc}}]',
      'contexts: [{name: hub, context: {cluster: hub, user: admin}}]',
      'current-context: hub',
      '',
    ].join('\n'),
  );
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const join_ = (extra: string[]) => [
  'join',
  '--hub-token=t0ken',
  '--hub-apiserver=https://10.244.1.1:6443',
  `--ca-file=${caFile}`,
  '--cluster-name=c1',
  ...extra,
];

describe('tether init / join flags', () => {
  it('init refuses a NodePort outside 30000-32767 (agent endpoint, user-server, frontend), a user-server NodePort without its host, and a LoadBalancer without --proxy-server-host', async () => {
    const port = await tether(['init', `--kubeconfig=${kubeconfig}`, '--agent-endpoint-node-port=8443']);
    expect(port.code).not.toBe(0);
    expect(port.stderr).toContain(
      '--agent-endpoint-node-port must be in the NodePort range 30000-32767, got 8443',
    );
    for (const flag of ['--user-server-node-port=9092', '--connect-node-port=8090']) {
      const r = await tether(['init', `--kubeconfig=${kubeconfig}`, '--user-server-host=10.0.0.5', flag]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(`${flag.split('=')[0]} must be in the NodePort range 30000-32767`);
    }
    const noHost = await tether(['init', `--kubeconfig=${kubeconfig}`, '--user-server-node-port=31092']);
    expect(noHost.code).not.toBe(0);
    expect(noHost.stderr).toContain('--user-server-node-port needs --user-server-host');
    const lb = await tether(['init', `--kubeconfig=${kubeconfig}`, '--agent-endpoint-type=LoadBalancer']);
    expect(lb.code).not.toBe(0);
    expect(lb.stderr).toContain('--agent-endpoint-type LoadBalancer needs --proxy-server-host');
    const policy = await tether(['init', `--kubeconfig=${kubeconfig}`, '--image-pull-policy=Sometimes']);
    expect(policy.code).not.toBe(0);
    expect(policy.stderr).toMatch(/--image-pull-policy.*Sometimes.*Always, IfNotPresent, Never/s);
  });

  it('join refuses a tunnel without its CA, a malformed --proxy-server, and --dry-run with --bootstrap-only', async () => {
    const noCa = await tether(join_(['--proxy-server=10.244.1.2:31091', '--dry-run']));
    expect(noCa.stderr).toContain('--proxy-server and --proxy-server-ca-file go together');
    const bad = await tether(
      join_(['--proxy-server=https://hub:31091', `--proxy-server-ca-file=${caFile}`, '--dry-run']),
    );
    expect(bad.stderr).toContain('--proxy-server must be host:port, got "https://hub:31091"');
    const both = await tether(join_(['--dry-run', '--bootstrap-only']));
    expect(both.stderr).toContain('--bootstrap-only applies; drop --dry-run/--output-file');
    for (const r of [noCa, bad, both]) expect(r.code).not.toBe(0);
  });

  it('join --dry-run prints the agent manifests with the tunnel, the forward proxy and the image', async () => {
    const r = await tether(
      join_([
        '--proxy-server=10.244.1.2:31091',
        `--proxy-server-ca-file=${caFile}`,
        '--proxy-url=http://10.244.2.1:3128',
        `--proxy-ca-file=${caFile}`,
        '--image=registry.example/tether:1.2.3',
        '--dry-run',
      ]),
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const objects = parseAllDocuments(r.stdout).map((d) => d.toJS()) as Array<{
      kind: string;
      metadata: { name: string };
      spec?: { template?: { spec: { containers: Array<{ image: string; args: string[] }> } } };
      stringData?: Record<string, string>;
    }>;
    const kinds = objects.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(kinds).toContain('CustomResourceDefinition/appliedmanifestworks.work.open-cluster-management.io');
    expect(kinds).toContain('Deployment/klusterlet-agent');
    const container = objects.find((o) => o.kind === 'Deployment')?.spec?.template?.spec.containers[0];
    expect(container?.image).toBe('registry.example/tether:1.2.3');
    expect(container?.args).toEqual(
      expect.arrayContaining([
        '--cluster-name=c1',
        '--proxy-server=10.244.1.2:31091',
        '--proxy-url=http://10.244.2.1:3128',
      ]),
    );
    const bootstrap = objects.find((o) => o.metadata.name === 'bootstrap-hub-kubeconfig')?.stringData
      ?.kubeconfig;
    expect(bootstrap).toContain('proxy-url: http://10.244.2.1:3128');
    expect(bootstrap).toContain('server: https://10.244.1.1:6443');
    // the plain CRD manifests, not client-node's models
    expect(r.stdout).not.toMatch(/x_kubernetes|_default/);
  });
});

// `tether console` against the real hub: the page carries its CSP and token (and the URL none), the
// API is forwarded as the viewer (lists, watches streaming live, apiserver errors passed through)
// only with the token, from the console's own Host and origin, and read-only; and the console adds
// no rights: a user allowed only the ManifestWorks of one namespace gets the apiserver's 403 for
// ManagedClusters through it, and 200 for its own namespace's ManifestWorks.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { type IncomingHttpHeaders, request } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ManagedCluster, managedClusterResource } from '../../src/api/index.ts';
import { CONSOLE_TOKEN_HEADER, ConsoleServer } from '../../src/console/index.ts';
import {
  type KubeObject,
  kubeconfigFromParts,
  loadKubeconfig,
  ResourceClient,
} from '../../src/kube/index.ts';
import { issueCertificate, loadCertificateAuthority } from '../../src/pki/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';
import { Cleanups } from './fixtures/registration-hub.ts';
import { scratchNamespace } from './fixtures/scratch-namespace.ts';

const env = testEnv();
const hubKc = adminKubeConfig(env.hub);
const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
const ns = scratchNamespace(hubKc, 'console');
const cleanups = new Cleanups();
afterEach(() => cleanups.run());

/** A Role or RoleBinding, as this file writes them. */
type RbacObject = KubeObject & { rules?: unknown[]; roleRef?: unknown; subjects?: unknown[] };

const MANAGED_CLUSTERS = '/apis/cluster.open-cluster-management.io/v1/managedclusters';

let admin: ConsoleServer;
let createdCluster1 = false;

beforeAll(async () => {
  // Other files may own ManagedCluster cluster1: create it only if absent, and then delete it after.
  if (!(await clusters.get('cluster1'))) {
    await clusters.create({ metadata: { name: 'cluster1' }, spec: { hubAcceptsClient: true } });
    createdCluster1 = true;
  }
  // the kubeconfig the CLI would load for `tether console --kubeconfig <admin kubeconfig>`
  admin = new ConsoleServer({ kubeConfig: loadKubeconfig(env.hub.kubeconfigPath, { proxyEnv: false }) });
  await admin.start();
});

afterAll(async () => {
  await admin?.stop();
  if (createdCluster1) await clusters.delete('cluster1', undefined, { ignoreNotFound: true });
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Ask {
  method?: string;
  token?: string | null;
  host?: string;
  headers?: Record<string, string>;
}

/** One request to `console`; `token` defaults to the console's own, `null` sends none. */
function ask(console: ConsoleServer, path: string, opts: Ask = {}): Promise<Answer> {
  const token = opts.token === undefined ? console.token : opts.token;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: console.port,
        path,
        method: opts.method ?? 'GET',
        headers: {
          host: opts.host ?? `127.0.0.1:${console.port}`,
          ...(token === null ? {} : { [CONSOLE_TOKEN_HEADER]: token }),
          ...opts.headers,
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function statusMessage(answer: Answer): string {
  const status = JSON.parse(answer.body) as { kind: string; message: string };
  expect(status.kind).toBe('Status');
  return status.message;
}

describe('tether console as the hub admin', () => {
  it('serves index.html with its CSP and the token meta, and prints a URL without the token', async () => {
    expect(admin.url).toBe(`http://127.0.0.1:${admin.port}/`);
    expect(admin.url).not.toContain(admin.token);
    const page = await ask(admin, '/', { token: null });
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.headers['cross-origin-opener-policy']).toBe('same-origin');
    expect(page.headers['set-cookie']).toBeUndefined();
    expect(page.body).toContain(`<meta name="tether-console-token" content="${admin.token}">`);
    const js = await ask(admin, '/app.js', { token: null });
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toMatch(/^text\/javascript/);
    expect(js.headers['content-security-policy']).toBeDefined();
    expect((await ask(admin, '/app.css', { token: null })).status).toBe(200);
  });

  it('lists ManagedClusters with the token, as the kubeconfig user', async () => {
    const list = await ask(admin, MANAGED_CLUSTERS);
    expect(list.status).toBe(200);
    expect(list.headers['cache-control']).toBe('no-store');
    expect(list.headers['content-security-policy']).toBeDefined();
    expect(list.headers['set-cookie']).toBeUndefined();
    const names = (JSON.parse(list.body) as { items: ManagedCluster[] }).items.map((c) => c.metadata.name);
    expect(names).toContain('cluster1');
    const version = await ask(admin, '/version');
    expect(version.status).toBe(200);
    expect(JSON.parse(version.body).gitVersion).toMatch(/^v1\./);
  });

  it("a web page the viewer visits cannot ride the viewer's credentials: a missing or wrong token, a DNS-rebound Host, a foreign Origin and a cross-site fetch are refused", async () => {
    const noToken = await ask(admin, MANAGED_CLUSTERS, { token: null });
    expect(noToken.status).toBe(403);
    expect(statusMessage(noToken)).toContain(CONSOLE_TOKEN_HEADER);
    expect((await ask(admin, MANAGED_CLUSTERS, { token: `${admin.token}x` })).status).toBe(403);
    const rebound = await ask(admin, MANAGED_CLUSTERS, { host: `attacker.example:${admin.port}` });
    expect(rebound.status).toBe(403);
    expect(statusMessage(rebound)).toContain('attacker.example');
    expect((await ask(admin, '/', { host: `attacker.example:${admin.port}` })).status).toBe(403);
    const foreign = await ask(admin, MANAGED_CLUSTERS, { headers: { origin: 'http://attacker.example' } });
    expect(foreign.status).toBe(403);
    expect(
      (await ask(admin, MANAGED_CLUSTERS, { headers: { origin: `http://127.0.0.1:${admin.port}` } })).status,
    ).toBe(200);
    expect((await ask(admin, MANAGED_CLUSTERS, { headers: { 'sec-fetch-site': 'cross-site' } })).status).toBe(
      403,
    );
  });

  it('nothing writes through the console, and no path escapes what it checks: writes 405, dot segments and encoded separators 400', async () => {
    const post = await ask(admin, MANAGED_CLUSTERS, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET');
    expect(statusMessage(post)).toContain('read-only');
    expect((await ask(admin, `${MANAGED_CLUSTERS}/cluster1`, { method: 'DELETE' })).status).toBe(405);
    expect(await clusters.get('cluster1')).toBeDefined();
    expect((await ask(admin, '/api/v1/namespaces/default/../../../apis')).status).toBe(400);
    expect((await ask(admin, '/api/v1/namespaces/kube-system%2Fsecrets')).status).toBe(400);
  });

  it('streams a watch: a label put on cluster1 arrives as a MODIFIED event', async () => {
    const list = await ask(admin, MANAGED_CLUSTERS);
    const rv = (JSON.parse(list.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    let received = '';
    const watch = request({
      host: '127.0.0.1',
      port: admin.port,
      path: `${MANAGED_CLUSTERS}?watch=1&allowWatchBookmarks=1&resourceVersion=${rv}`,
      headers: { host: `127.0.0.1:${admin.port}`, [CONSOLE_TOKEN_HEADER]: admin.token },
    });
    cleanups.add(async () => watch.destroy());
    const status = new Promise<number>((resolve, reject) => {
      watch.on('response', (res) => {
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          received += d;
        });
        resolve(res.statusCode ?? 0);
      });
      watch.on('error', reject);
    });
    watch.end();
    expect(await status).toBe(200);
    const label = `console-e2e-${process.pid}`;
    await clusters.patchMerge('cluster1', { metadata: { labels: { [label]: 'seen' } } });
    cleanups.add(() => clusters.patchMerge('cluster1', { metadata: { labels: { [label]: null } } }));
    const event = await pollUntil(
      () =>
        received
          .split('\n')
          .filter((line) => line.trim() !== '')
          .map((line) => JSON.parse(line) as { type: string; object: ManagedCluster })
          .find((e) => e.type === 'MODIFIED' && e.object.metadata.labels?.[label] === 'seen'),
      { timeoutMs: 10_000, description: 'the label to arrive through the console watch' },
    );
    expect(event.object.metadata.name).toBe('cluster1');
    expect(admin.upstreamOpen).toBeGreaterThanOrEqual(1);
  });

  it('answers 429 beyond its limit of concurrent upstream requests', async () => {
    const small = new ConsoleServer({ kubeConfig: hubKc, maxConcurrentUpstream: 1 });
    await small.start();
    cleanups.add(() => small.stop());
    const watch = request({
      host: '127.0.0.1',
      port: small.port,
      path: `${MANAGED_CLUSTERS}?watch=1`,
      headers: { host: `127.0.0.1:${small.port}`, [CONSOLE_TOKEN_HEADER]: small.token },
    });
    cleanups.add(async () => watch.destroy());
    const status = new Promise<number>((resolve, reject) => {
      watch.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      watch.on('error', reject);
    });
    watch.end();
    expect(await status).toBe(200);
    const refused = await ask(small, MANAGED_CLUSTERS);
    expect(refused.status).toBe(429);
    expect(statusMessage(refused)).toContain('1 requests');
    watch.destroy();
    await pollUntil(() => small.upstreamOpen === 0, {
      timeoutMs: 10_000,
      description: 'the watch slot to free',
    });
    expect((await ask(small, MANAGED_CLUSTERS)).status).toBe(200);
  });
});

describe('the tether console command', () => {
  it('prints its URL (no token in it) and the bundle sizes, serves the page there and stops on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      ['bin/tether.js', 'console', '--kubeconfig', env.hub.kubeconfigPath, '--port', '0'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    cleanups.add(async () => {
      child.kill('SIGKILL');
      await exited;
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    const url = await pollUntil(() => /tether console: (http:\/\/127\.0\.0\.1:\d+\/)\n/.exec(out)?.[1], {
      timeoutMs: 20_000,
      description: 'tether console to print its URL',
    });
    await pollUntil(() => /app\.js \d+ B \(\d+ B gzip\)/.test(out), {
      timeoutMs: 20_000,
      description: 'bundle sizes',
    });
    const port = Number(new URL(url).port);
    const page = await new Promise<string>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path: '/' }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => {
          body += d;
        });
        res.on('end', () => resolve(body));
      })
        .on('error', reject)
        .end();
    });
    const token = /<meta name="tether-console-token" content="([^"]+)">/.exec(page)?.[1];
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(out).not.toContain(token);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('refuses a non-loopback --address', async () => {
    const child = spawn(
      process.execPath,
      ['bin/tether.js', 'console', '--kubeconfig', env.hub.kubeconfigPath, '--address', '0.0.0.0'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code).not.toBe(0);
    expect(err).toContain('--address must be a loopback address');
  });
});

describe('tether console as a user allowed only the ManifestWorks of one namespace', () => {
  it('a namespace-scoped user gains no rights through the console: the apiserver 403 for ManagedClusters passes through, its own ManifestWorks list', async () => {
    const user = uniqueName('console-viewer');
    const rbac = (plural: string, kind: string) =>
      new ResourceClient<RbacObject>(hubKc, {
        group: 'rbac.authorization.k8s.io',
        version: 'v1',
        plural,
        kind,
        namespaced: true,
      });
    const roles = rbac('roles', 'Role');
    const bindings = rbac('rolebindings', 'RoleBinding');
    await roles.create({
      metadata: { name: user, namespace: ns.namespace },
      rules: [
        {
          apiGroups: ['work.open-cluster-management.io'],
          resources: ['manifestworks'],
          verbs: ['get', 'list', 'watch'],
        },
      ],
    });
    ns.cleanup(() => roles.delete(user, ns.namespace, { ignoreNotFound: true }));
    await bindings.create({
      metadata: { name: user, namespace: ns.namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: user },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    });
    ns.cleanup(() => bindings.delete(user, ns.namespace, { ignoreNotFound: true }));

    const ca = await loadCertificateAuthority(
      readFileSync(env.hub.caCertPath, 'utf8'),
      readFileSync(env.hub.caKeyPath, 'utf8'),
    );
    const cert = await issueCertificate(ca, { commonName: user, usage: 'client', validitySeconds: 3600 });
    const viewerKc = kubeconfigFromParts({
      name: user,
      server: env.hub.apiserverUrl,
      caPem: readFileSync(env.hub.caCertPath, 'utf8'),
      certPem: cert.certPem,
      keyPem: cert.keyPem,
    });
    const viewer = new ConsoleServer({ kubeConfig: viewerKc });
    await viewer.start();
    ns.cleanup(() => viewer.stop());

    const works = `/apis/work.open-cluster-management.io/v1/namespaces/${ns.namespace}/manifestworks`;
    // RBAC is cached by the apiserver's authorizer only briefly: wait for the binding to count.
    const own = await pollUntil(
      async () => {
        const answer = await ask(viewer, works);
        return answer.status === 200 ? answer : undefined;
      },
      { timeoutMs: 10_000, description: `${user} to be allowed to list its ManifestWorks` },
    );
    expect(JSON.parse(own.body).kind).toBe('ManifestWorkList');

    const forbidden = await ask(viewer, MANAGED_CLUSTERS);
    expect(forbidden.status).toBe(403);
    const message = statusMessage(forbidden);
    expect(message).toContain(`User "${user}" cannot list resource "managedclusters"`);
    expect(JSON.parse(forbidden.body).reason).toBe('Forbidden');
    const elsewhere = await ask(
      viewer,
      '/apis/work.open-cluster-management.io/v1/namespaces/default/manifestworks',
    );
    expect(elsewhere.status).toBe(403);
    // headers the page (or anything else) sends are not passed on: no impersonation, no other credential
    const impersonating = await ask(viewer, MANAGED_CLUSTERS, {
      headers: {
        'impersonate-user': 'tether-admin',
        'impersonate-group': 'system:masters',
        authorization: `Bearer ${admin.token}`,
      },
    });
    expect(impersonating.status).toBe(403);
    expect(statusMessage(impersonating)).toContain(`User "${user}" cannot list`);
  });
});

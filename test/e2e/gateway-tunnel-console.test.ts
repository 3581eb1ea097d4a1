// Through the hub aggregator, as hub users: the `tunnel` subresource of a ClusterGateway (the
// proxy-server's status of the cluster's tunnel) for a user granted `get clustergateways/tunnel`,
// 403 for one who is not, and a watch that streams; and the fleet console's static files the
// gateway serves under its API, which any authenticated user may load (ClusterRole
// tether:console-viewer) with the console's strict CSP, no token, relative assets; writes refused.
// The console page loaded through the real `kubectl proxy` in headless Chromium lists the cluster and
// fills its tunnel section; a user without the tunnel right sees the forbidden panel there.
import { spawn } from 'node:child_process';
import { request } from 'node:https';
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeconfigFromParts, kubeconfigToYaml } from '../../src/kube/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { removeScreenshotDir, screenshotDir, startBrowserPage, waitInPage } from './fixtures/browser.ts';
import {
  cluster1GatewayToken,
  cluster1Target,
  env,
  type GatewayFixture,
  hubAdminTls,
  hubKc,
  hubUser,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { uniqueName } from './fixtures/helpers.ts';

type HubTls = Awaited<ReturnType<typeof hubUser>>['tls'];

let f: GatewayFixture;
const cluster = uniqueName('gwt');
const api = '/apis/cluster.core.oam.dev/v1alpha1';
const rbac = hubKc.makeApiClient(RbacAuthorizationV1Api);
const roleName = `tether-gateway-e2e:${cluster}:tunnel`;

beforeAll(async () => {
  f = await startGatewayFixture();
  await f.addCluster({ name: cluster, ...cluster1Target() }, await cluster1GatewayToken(cluster));
});
afterAll(async () => {
  await rbac.deleteClusterRoleBinding({ name: roleName }).catch(() => {});
  await rbac.deleteClusterRole({ name: roleName }).catch(() => {});
  await f?.stop();
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request to the hub apiserver as the user of `tls`; with `lines`, reads until that many lines. */
function hubRequest(
  tls: HubTls,
  path: string,
  opts: { method?: string; lines?: number } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: tls.host,
        port: tls.port,
        path,
        method: opts.method ?? 'GET',
        ca: tls.ca,
        cert: tls.cert,
        key: tls.key,
      },
      (res) => {
        let body = '';
        const done = (): void => resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          body += d;
          if (opts.lines && body.split('\n').length > opts.lines) {
            done();
            req.destroy();
          }
        });
        res.once('end', done);
      },
    );
    req.once('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error(`no answer to ${path} in 30 s`)));
    req.end();
  });
}

async function grantTunnel(user: string): Promise<void> {
  await rbac.createClusterRole({
    body: {
      metadata: { name: roleName },
      rules: [{ apiGroups: ['cluster.core.oam.dev'], resources: ['clustergateways/tunnel'], verbs: ['get'] }],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: roleName },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: user }],
    },
  });
}

describe('clustergateways/<name>/tunnel through the hub', () => {
  it('a user granted clustergateways/tunnel gets the tunnel and a watch of it; a user without gets 403', async () => {
    const viewerName = `${cluster}-tunnel-viewer`;
    const viewer = await hubUser(f, viewerName, [], cluster);
    await grantTunnel(viewerName);
    const path = `${api}/clustergateways/${cluster}/tunnel`;
    // RBAC reaches the gateway's SubjectAccessReview within its denial cache (3 s)
    let got: Answer | undefined;
    await pollUntil(
      async () => {
        got = await hubRequest(viewer.tls, path);
        return got.status === 200;
      },
      {
        timeoutMs: 20_000,
        description: `${viewerName} to get the tunnel (last: ${got?.status} ${got?.body})`,
      },
    );
    const tunnel = JSON.parse(got?.body ?? '{}');
    expect(tunnel).toMatchObject({
      kind: 'ClusterGatewayTunnel',
      apiVersion: 'cluster.core.oam.dev/v1alpha1',
      metadata: { name: cluster },
      status: { cluster, serverId: 'gateway-e2e', serverCount: 1 },
    });
    expect(tunnel.status.agents).toEqual([
      expect.objectContaining({ agent: 'gw-agent', unresponsive: false }),
    ]);
    expect(tunnel.status.bytesFromCluster).toBeGreaterThan(0);

    const watch = await hubRequest(viewer.tls, `${path}?watch=1`, { lines: 2 });
    expect(watch.status).toBe(200);
    const events = watch.body
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(events.map((e) => e.type).slice(0, 2)).toEqual(['ADDED', 'MODIFIED']);
    expect(events[1].object.status.cluster).toBe(cluster);

    // a watch ends by itself within timeoutSeconds (the gateway's cap keeps it under the apiserver's
    // request timeout), cleanly: every line a whole event
    const started = Date.now();
    const short = await hubRequest(viewer.tls, `${path}?watch=1&timeoutSeconds=1`, { lines: 1000 });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(short.body.endsWith('\n')).toBe(true);
    expect(short.body.split('\n').filter(Boolean).length).toBeGreaterThanOrEqual(2);

    const strangerName = `${cluster}-no-tunnel`;
    const stranger = await hubUser(f, strangerName, ['get'], cluster);
    const denied = await hubRequest(stranger.tls, path);
    expect(denied.status).toBe(403);
    expect(JSON.parse(denied.body).message).toContain('clustergateways/tunnel');
  });

  it('discovery lists the tunnel subresource', async () => {
    const list = await hubRequest(hubAdminTls(), api);
    expect(JSON.parse(list.body).resources.map((r: { name: string }) => r.name)).toContain(
      'clustergateways/tunnel',
    );
  });
});

describe('the console served by the gateway', () => {
  it('a user with no other rights loads index.html and app.js, with the CSP, no token, relative assets', async () => {
    const nobody = await hubUser(f, `${cluster}-console-only`, [], cluster);
    const index = await hubRequest(nobody.tls, `${api}/console/`);
    expect(index.status).toBe(200);
    expect(index.headers['content-type']).toMatch(/^text\/html/);
    expect(index.headers['content-security-policy']).toContain("default-src 'none'");
    expect(index.headers['content-security-policy']).toContain("script-src 'self'");
    expect(index.body).not.toContain('tether-console-token');
    expect(index.body).toContain('<script type="module" src="app.js">');
    expect(index.body).toContain('<link rel="stylesheet" href="app.css">');
    const js = await hubRequest(nobody.tls, `${api}/console/app.js`);
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toMatch(/^text\/javascript/);
    expect(js.headers['content-security-policy']).toContain("default-src 'none'");
    expect(js.body.length).toBeGreaterThan(10_000);
    const css = await hubRequest(nobody.tls, `${api}/console/app.css`);
    expect(css.status).toBe(200);

    // without the slash: the same page with its assets under console/ (the aggregator passes on no
    // redirect of an aggregated server: 502)
    const bare = await hubRequest(nobody.tls, `${api}/console`);
    expect(bare.status).toBe(200);
    expect(bare.headers['content-security-policy']).toContain("default-src 'none'");
    expect(bare.body).toContain('<script type="module" src="console/app.js">');

    // read-only: the hub refuses create on console (no role grants it), the gateway any other method
    const post = await hubRequest(nobody.tls, `${api}/console/`, { method: 'POST' });
    expect([403, 405]).toContain(post.status);
    const adminPost = await hubRequest(hubAdminTls(), `${api}/console/`, { method: 'POST' });
    expect(adminPost.status).toBe(405);
    // the console's rights are the console's files: nothing else of the API comes with them
    const list = await hubRequest(nobody.tls, `${api}/clustergateways`);
    expect(list.status).toBe(403);
  });
});

/** The real `kubectl proxy` for `kubeconfig` on a free loopback port: its base URL and a stop. */
async function kubectlProxy(kubeconfig: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const child = spawn('kubectl', ['--kubeconfig', kubeconfig, 'proxy', '--port=0', '--address=127.0.0.1'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    out += d.toString();
  });
  try {
    const port = await pollUntil(() => /Starting to serve on 127\.0\.0\.1:(\d+)/.exec(out)?.[1], {
      timeoutMs: 15_000,
      description: `kubectl proxy to start (output: ${out})`,
    });
    return { url: `http://127.0.0.1:${port}`, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

describe('the gateway-served console behind kubectl proxy, in headless Chromium', () => {
  it('lists the cluster on the fleet page and fills its tunnel section with the agent, replicas and a moving plot', async () => {
    const proxy = await kubectlProxy(env.hub.kubeconfigPath);
    const shots = screenshotDir('gateway-console');
    const browser = await startBrowserPage(shots).catch(async (err) => {
      await proxy.stop();
      removeScreenshotDir(shots);
      throw err;
    });
    try {
      const { page } = browser;
      await page.goto(`${proxy.url}${api}/console/`);
      await waitInPage(
        page,
        `document.querySelector('[data-testid="cluster-row-${cluster}"]') !== null`,
        `the fleet page to list ${cluster}`,
        30_000,
      );
      await browser.screenshot('fleet');
      await page.goto(`${proxy.url}${api}/console/#/clusters/${cluster}`);
      await waitInPage(
        page,
        `document.querySelector('[data-testid="tunnel-agents"]')?.getAttribute('data-count') === '1'`,
        'the tunnel section to show one agent',
        30_000,
      );
      const shown = (await page.evaluate(`(() => ({
        agent: document.querySelector('[data-testid="tunnel-agent-gw-agent"]') !== null,
        replicas: document.querySelector('[data-testid="tunnel-replicas"]')?.getAttribute('data-server-count'),
        lastError: document.querySelector('[data-testid="tunnel-last-error"]')?.textContent ?? '',
      }))()`)) as { agent: boolean; replicas: string; lastError: string };
      expect(shown).toMatchObject({ agent: true, replicas: '1' });
      expect(shown.lastError).toContain('Last error');
      // the gateway's health probes cross the tunnel every second: the rate and the plot move
      await waitInPage(
        page,
        `Number(document.querySelector('[data-testid="tunnel-bytes-rate"]')?.getAttribute('data-from')) > 0 &&
         Number(document.querySelector('[data-testid="tunnel-plot"]')?.getAttribute('data-samples')) >= 3`,
        'bytes per second from the cluster and three plotted samples',
        30_000,
      );
      await browser.screenshot('cluster-tunnel');
      expect(browser.errors).toEqual([]);
    } finally {
      await browser.close();
      await proxy.stop();
      removeScreenshotDir(shots);
    }
  });

  it('shows a user without clustergateways/tunnel the forbidden panel in the tunnel section, quoting the hub', async () => {
    const user = `${cluster}-console-no-tunnel`;
    const { tls } = await hubUser(f, user, [], cluster);
    const kubeconfig = f.file(
      `${user}.kubeconfig`,
      kubeconfigToYaml(
        kubeconfigFromParts({
          name: user,
          server: env.hub.apiserverUrl,
          caPem: tls.ca,
          certPem: tls.cert,
          keyPem: tls.key,
        }),
      ),
    );
    const proxy = await kubectlProxy(kubeconfig);
    const shots = screenshotDir('gateway-console-forbidden');
    const browser = await startBrowserPage(shots).catch(async (err) => {
      await proxy.stop();
      removeScreenshotDir(shots);
      throw err;
    });
    try {
      await browser.page.goto(`${proxy.url}${api}/console/#/clusters/${cluster}`);
      const text = await waitInPage<string>(
        browser.page,
        `document.querySelector('section[data-testid="tunnel"] [data-testid="forbidden"]')?.textContent`,
        'the forbidden panel in the tunnel section',
        30_000,
      );
      expect(text).toContain('clustergateways/tunnel');
      await browser.screenshot('cluster-tunnel-forbidden');
    } finally {
      await browser.close();
      await proxy.stop();
      removeScreenshotDir(shots);
    }
  });
});

// `tether up` as a user runs it, one environment (hub + cluster1, squid, proxy-server, `tether hub`,
// gateway, `tether agent`, debug logging) shared by its whole life, in order:
// - it prints "ready", its cluster joins through squid and kubectl reaches it through the gateway;
// - its supervisor brings back every process after `kill -9` with the same command line (same
//   ports, same state directory, etcd data kept), reports the crash, and the environment works again;
// - fault injection (test/e2e/fixtures/up-faults.ts): each process killed or frozen while
//   ManifestWorks change, healed without losing or duplicating anything; the heal times are printed;
// - `tether console` on it, in headless Chromium: the fleet, cluster1's page with its add-ons and a
//   work's status (add-ons and the tunnel: test/e2e/real-node-console.test.ts), cluster1 turning Unknown within seconds of its agent stopping (screenshots saved);
// - no credential appears in any log line of all that;
// - SIGTERM leaves no process, listening port or state directory behind.
// What ends or interrupts a `tether up` otherwise (kill -9 of `tether up` itself, SIGTERM during
// start-up) is in test/e2e/up-supervisor.test.ts, with environments of its own.
import { existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../src/wait.ts';
import {
  type BrowserPage,
  removeScreenshotDir,
  screenshotDir,
  startBrowserPage,
  startConsoleCommand,
  waitInPage,
} from './fixtures/browser.ts';
import { Cleanups } from './fixtures/cleanups.ts';
import { kubectl, uniqueName } from './fixtures/helpers.ts';
import {
  fileCredentials,
  filesUnder,
  isLogFile,
  leaksIn,
  secretCredentials,
} from './fixtures/log-secrets.ts';
import { UpProcess } from './fixtures/up-env.ts';
import { FaultInjector } from './fixtures/up-faults.ts';
import {
  descendants,
  type ProcessEntry,
  processesMentioning,
  tetherCommand,
} from './fixtures/up-process-tree.ts';

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Each process `tether up` supervises, by the name it reports and how to find it. */
const TARGETS: Array<{ name: string; is: (args: string[]) => boolean }> = [
  { name: 'hub/proxy-server', is: (a) => tetherCommand(a) === 'proxy-server' },
  { name: 'hub/controllers', is: (a) => tetherCommand(a) === 'hub' },
  { name: 'hub/gateway', is: (a) => tetherCommand(a) === 'gateway' },
  { name: 'cluster1/agent', is: (a) => tetherCommand(a) === 'agent' },
  { name: 'squid', is: (a) => /(^|\/)squid$/.test(a[0] ?? '') },
  { name: 'hub/etcd', is: (a) => /(^|\/)etcd$/.test(a[0] ?? '') && a.includes('--name=hub') },
  {
    name: 'hub/kube-apiserver',
    is: (a) => /kube-apiserver$/.test(a[0] ?? '') && a.some((x) => x.includes('/state/hub-')),
  },
  {
    name: 'cluster1/kube-apiserver',
    is: (a) => /kube-apiserver$/.test(a[0] ?? '') && a.some((x) => x.includes('/state/cluster1-')),
  },
  {
    name: 'cluster1/kube-controller-manager',
    is: (a) => /kube-controller-manager$/.test(a[0] ?? '') && a.some((x) => x.includes('/state/cluster1-')),
  },
];

function find(root: number, target: (typeof TARGETS)[number]): ProcessEntry {
  const found = descendants(root).filter((p) => target.is(p.args));
  if (found.length === 0) throw new Error(`no ${target.name} process under tether up (pid ${root})`);
  return found.reduce((a, b) => (a.pid < b.pid ? a : b));
}

// debug: every log line tether can write is scanned for credentials (vitest's default is silent)
const up = UpProcess.start('up-test', { TETHER_LOG_LEVEL: 'debug' });
const faults = new FaultInjector(up);

beforeAll(() => up.ready(240_000), 250_000);

afterAll(() => up.remove(), 60_000);

describe('tether up', () => {
  it('starts hub + 1 cluster that joins through squid (JOINED and AVAILABLE True) and serves kubectl through the gateway', async () => {
    expect(existsSync(up.kubeconfig('cluster1'))).toBe(true);
    expect(
      await kubectl(up.hubKubeconfig, [
        'get',
        'crd',
        'managedclusters.cluster.open-cluster-management.io',
        '-o',
        'name',
      ]),
    ).toContain('managedclusters');
    const clusters = await kubectl(up.hubKubeconfig, ['get', 'managedclusters']);
    expect(clusters).toMatch(/^cluster1\s+true\s+https:\/\/127\.0\.0\.1:\d+\s+True\s+True\s+/m);
    // kubectl on cluster1 through the hub: gateway → tunnel → agent, with the MSA token.
    const viaGateway = await kubectl(up.gatewayKubeconfig('cluster1'), [
      'get',
      'ns',
      'open-cluster-management-agent',
      '-o',
      'name',
    ]);
    expect(viaGateway.trim()).toBe('namespace/open-cluster-management-agent');
  });
});

describe('the console on tether up', () => {
  const cleanups = new Cleanups();
  let shots: string;
  let browser: BrowserPage;
  let url: string;

  beforeAll(async () => {
    shots = screenshotDir('up-console');
    cleanups.add(async () => removeScreenshotDir(shots));
    const console_ = await startConsoleCommand(up.hubKubeconfig);
    cleanups.add(console_.stop);
    url = console_.url;
    browser = await startBrowserPage(shots);
    cleanups.add(() => browser.close());
  }, 60_000);
  afterAll(() => cleanups.run());

  it("shows the fleet and, on cluster1's page, a work with its status", async () => {
    const { page } = browser;
    await page.goto(url);
    await waitInPage(
      page,
      `document.querySelector('[data-testid="cluster-row-cluster1"]')?.dataset.available === 'True'`,
      'cluster1 Available on the fleet page',
    );
    await browser.screenshot('fleet');
    const work = uniqueName('console-work');
    const manifestWork = {
      apiVersion: 'work.open-cluster-management.io/v1',
      kind: 'ManifestWork',
      metadata: { name: work, namespace: 'cluster1' },
      spec: {
        workload: {
          manifests: [
            {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: { name: work, namespace: 'default' },
              data: { shown: 'yes' },
            },
          ],
        },
      },
    };
    await kubectl(up.hubKubeconfig, ['apply', '-f', '-'], { input: JSON.stringify(manifestWork) });
    cleanups.add(() =>
      kubectl(up.hubKubeconfig, ['delete', 'manifestwork', '-n', 'cluster1', work, '--ignore-not-found']),
    );
    await page.goto(`${url}#/clusters/cluster1`);
    await waitInPage(
      page,
      `document.querySelector('[data-testid="work-row-${work}"]')?.dataset.applied === 'True'`,
      'the work Applied on the cluster page',
      30_000,
    );
    await browser.screenshot('cluster1');
    expect(browser.errors).toEqual([]);
  });

  it('shows cluster1 Unknown within seconds of its agent stopping, and Available again once it runs', async () => {
    const { page } = browser;
    // OCM's lease check, with the period set short as its integration suites do: the agent renews
    // every leaseDurationSeconds, the hub gives up after 5 of them.
    const patch = (seconds: number) =>
      kubectl(up.hubKubeconfig, [
        'patch',
        'managedcluster',
        'cluster1',
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { leaseDurationSeconds: seconds } }),
      ]);
    await patch(1);
    cleanups.add(() => patch(60));
    const renewed = async (): Promise<string> =>
      (
        await kubectl(up.hubKubeconfig, [
          'get',
          'lease',
          '-n',
          'cluster1',
          'managed-cluster-lease',
          '-o',
          'jsonpath={.spec.renewTime}',
        ])
      ).trim();
    const first = await renewed();
    await pollUntil(async () => (await renewed()) !== first, {
      timeoutMs: 90_000,
      description: 'the agent to renew at the short period',
    });
    await page.goto(url);
    await waitInPage(
      page,
      `document.querySelector('[data-testid="cluster-row-cluster1"]')?.dataset.available === 'True'`,
      'cluster1 Available',
    );
    const agent = find(
      up.pid,
      TARGETS.find((t) => t.name === 'cluster1/agent') as (typeof TARGETS)[number],
    ).pid;
    process.kill(agent, 'SIGSTOP');
    const stoppedAt = Date.now();
    cleanups.add(async () => process.kill(agent, 'SIGCONT'));
    await waitInPage(
      page,
      `document.querySelector('[data-testid="cluster-row-cluster1"]')?.dataset.available === 'Unknown'`,
      'cluster1 Unknown on the fleet page',
      30_000,
    );
    const shownAfterMs = Date.now() - stoppedAt;
    process.stderr.write(`[up-console] cluster1 shown Unknown ${shownAfterMs} ms after its agent stopped\n`);
    await browser.screenshot('fleet-cluster1-unknown');
    expect(shownAfterMs).toBeLessThan(30_000);
    process.kill(agent, 'SIGCONT');
    await waitInPage(
      page,
      `document.querySelector('[data-testid="cluster-row-cluster1"]')?.dataset.available === 'True'`,
      'cluster1 Available again',
      30_000,
    );
    expect(browser.errors).toEqual([]);
  });
});

describe('tether up supervisor', () => {
  it('every process comes back after kill -9 with the same command line, and the environment works again', async () => {
    const root = up.pid;
    // written before etcd and the apiserver are killed: must survive both
    const marker = uniqueName('kept');
    await kubectl(up.hubKubeconfig, [
      'create',
      'configmap',
      marker,
      '-n',
      'default',
      `--from-literal=v=${marker}`,
    ]);
    const heal: string[] = [];
    for (const target of TARGETS) {
      const before = find(root, target);
      const from = up.output().length;
      const killedAt = Date.now();
      process.kill(before.pid, 'SIGKILL');
      const since = (): string => up.output().slice(from);
      await pollUntil(() => since().includes(`tether: ${target.name} is running again`) || undefined, {
        timeoutMs: 90_000,
        intervalMs: 250,
        description: `${target.name} to run again; output since the kill:\n${since()}`,
      });
      heal.push(`${target.name} ${((Date.now() - killedAt) / 1000).toFixed(1)}s`);
      expect(since()).toContain(
        `tether: ${target.name} exited (SIGKILL); restarting in 1s; last log lines:\n    `,
      );
      const after = find(root, target);
      expect(after.pid).not.toBe(before.pid);
      // same binary, flags, ports, certificate files and data directory
      expect(after.args).toEqual(before.args);
      expect(since()).not.toMatch(/address already in use/i);
    }
    process.stdout.write(`kill -9 → running again: ${heal.join(', ')}\n`);
    expect(up.output()).not.toMatch(/giving up|stopping…/);

    // etcd kept its data through its own restart and the apiserver's
    expect(
      await kubectl(up.hubKubeconfig, [
        'get',
        'configmap',
        marker,
        '-n',
        'default',
        '-o',
        'jsonpath={.data.v}',
      ]),
    ).toBe(marker);
    // the cluster is (again) Joined and Available, and kubectl through the gateway reaches it
    await pollUntil(
      async () =>
        /^cluster1\s+true\s+\S+\s+True\s+True\s+/m.test(
          await kubectl(up.hubKubeconfig, ['get', 'managedclusters']),
        ),
      {
        timeoutMs: 90_000,
        intervalMs: 1000,
        description: 'cluster1 Joined and Available after the restarts',
      },
    );
    const viaGateway = await pollUntil(
      () =>
        kubectl(up.gatewayKubeconfig('cluster1'), [
          'get',
          'ns',
          'open-cluster-management-agent',
          '-o',
          'name',
        ]),
      { timeoutMs: 60_000, intervalMs: 1000, description: 'kubectl through the gateway after the restarts' },
    );
    expect(viaGateway.trim()).toBe('namespace/open-cluster-management-agent');
  }, 900_000);
});

describe('fault injection on tether up', () => {
  beforeAll(() => faults.prepare(), 90_000);
  afterAll(() => {
    process.stdout.write(`\n${faults.heals()}`);
  });

  it('SIGKILL of the proxy-server: agents reconnect, nothing lost', () =>
    faults.scenario('kill proxy-server', faults.kill('proxy-server')));
  it('SIGKILL of tether hub: controllers resume, nothing lost', () =>
    faults.scenario('kill tether hub', faults.kill('tether hub')));
  it('SIGKILL of the gateway: kubectl through the hub comes back', () =>
    faults.scenario('kill gateway', faults.kill('gateway')));
  it('SIGKILL of the cluster agent: works created meanwhile are applied once', () =>
    faults.scenario('kill agent', faults.kill('agent')));
  it('SIGKILL of squid: agents dial out again through the new squid', () =>
    faults.scenario('kill squid', faults.kill('squid')));
  it('SIGKILL of the hub kube-apiserver: everyone reconnects, etcd keeps state', () =>
    faults.scenario('kill hub kube-apiserver', faults.kill('hub kube-apiserver')));
  it('SIGKILL of the managed kube-apiserver: status and works catch up', () =>
    faults.scenario('kill managed kube-apiserver', faults.kill('cluster1 kube-apiserver')));
  it('SIGSTOP of the agent for 8 s: it catches up after SIGCONT', () =>
    faults.scenario('freeze agent', faults.freeze('agent')));
  it('SIGSTOP of the managed kube-apiserver for 8 s: it catches up after SIGCONT', () =>
    faults.scenario('freeze managed kube-apiserver', faults.freeze('cluster1 kube-apiserver')));
});

describe('tether up, at the end of its life', () => {
  it('no token, key or bootstrap secret appears in any log line of a full tether up', async () => {
    // after the restarts and faults above: their logs are scanned too
    const credentials = [
      ...(await secretCredentials(up.hubKubeconfig, 'hub')),
      ...(await secretCredentials(up.kubeconfig('cluster1'), 'cluster1')),
      ...fileCredentials(up.dir),
    ];
    // the scan is only as good as what it looks for: the secrets the issue names must be among them
    const whats = credentials.map((c) => c.what).join('\n');
    expect(whats).toMatch(
      /cluster1 Secret open-cluster-management-agent\/bootstrap-hub-kubeconfig kubeconfig user .* token/,
    );
    expect(whats).toMatch(
      /cluster1 Secret open-cluster-management-agent\/hub-kubeconfig-secret tls\.key \(private key material\)/,
    );
    expect(whats).toMatch(/hub Secret cluster1\/tether-gateway token/);
    const logs = filesUnder(up.dir).filter(isLogFile);
    const names = logs.map((f) => basename(f));
    for (const expected of [
      'kube-apiserver.log',
      'proxy-server.log',
      'hub.log',
      'cluster1-agent.log',
      'gateway.log',
    ]) {
      expect(names).toContain(expected);
    }
    // and tether's own processes did log (a silent run would prove nothing)
    for (const f of logs.filter((f) => /(hub|cluster1-agent|gateway|proxy-server)\.log$/.test(f))) {
      expect(readFileSync(f, 'utf8'), f).toMatch(/"component":/);
    }
    const leaks = [
      ...logs.flatMap((f) => leaksIn(f.slice(up.dir.length + 1), readFileSync(f, 'utf8'), credentials)),
      ...leaksIn('tether up output', up.output(), credentials),
    ];
    expect(leaks).toEqual([]);
  });

  it('SIGTERM tears everything down: no process, listening port or state directory left', async () => {
    const ports: number[] = [up.hubKubeconfig, up.kubeconfig('cluster1')].map((f) =>
      Number(/server: https:\/\/127\.0\.0\.1:(\d+)/.exec(readFileSync(f, 'utf8'))?.[1]),
    );
    const children = processesMentioning(up.dir);
    // etcd + apiserver + KCM for each of 2 control planes, the proxy-server, `tether hub`, `tether agent`, the gateway
    expect(children.length).toBeGreaterThanOrEqual(10);
    const squidPort = Number(/squid http:\/\/127\.0\.0\.1:(\d+)/.exec(up.output())?.[1]);
    expect(squidPort).toBeGreaterThan(0);
    ports.push(squidPort);

    up.child.kill('SIGTERM');
    expect(await up.exited).toBe(0);
    expect(processesMentioning(up.dir)).toEqual([]);
    for (const port of ports) expect(await portOpen(port)).toBe(false);
    expect(existsSync(join(up.dir, 'state'))).toBe(false);
    expect(existsSync(up.hubKubeconfig)).toBe(false);
    // what tether up printed while shutting down counts too
    expect(leaksIn('tether up output', up.output(), [])).toEqual([]);
  });
});

// `tether up` as a user runs it: prints "ready", serves real clusters, writes no credential into any
// log, and on SIGTERM leaves no process, listening port or state directory behind. The three tests
// share one environment and run in order.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../src/wait.ts';
import { kubectl } from './fixtures/helpers.ts';
import {
  fileCredentials,
  filesUnder,
  isLogFile,
  leaksIn,
  secretCredentials,
} from './fixtures/log-secrets.ts';

const dir = mkdtempSync(join(tmpdir(), 'tether-up-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** PIDs of processes whose command line mentions `needle`. */
function processesMentioning(needle: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(needle)) pids.push(Number(entry));
    } catch {}
  }
  return pids.filter((p) => p !== process.pid);
}

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

describe('tether up', () => {
  let child: ChildProcess | undefined;
  let output = '';
  let exited: Promise<number | null> = Promise.resolve(null);
  const hubKubeconfig = join(dir, 'hub.kubeconfig');
  const cluster1Kubeconfig = join(dir, 'cluster1.kubeconfig');

  beforeAll(async () => {
    // debug: every log line tether can write is scanned for credentials (vitest's default is silent)
    const up = spawn(
      process.execPath,
      ['bin/tether.js', 'up', '--processes', '--clusters', '1', '--dir', dir],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, TETHER_LOG_LEVEL: 'debug' },
      },
    );
    child = up;
    up.stdout.on('data', (d: Buffer) => {
      output += d.toString();
    });
    up.stderr.on('data', (d: Buffer) => {
      output += d.toString();
    });
    exited = new Promise<number | null>((r) => up.on('exit', (code) => r(code)));
    await pollUntil(() => /ready/.test(output) || undefined, {
      timeoutMs: 120_000,
      description: `"ready" from tether up; output so far:\n${output}`,
    });
  }, 180_000);

  afterAll(() => {
    child?.kill('SIGKILL');
  });

  it('starts hub + 1 cluster that joins through squid (JOINED and AVAILABLE True) and serves kubectl through the gateway', async () => {
    expect(existsSync(cluster1Kubeconfig)).toBe(true);
    expect(
      await kubectl(hubKubeconfig, [
        'get',
        'crd',
        'managedclusters.cluster.open-cluster-management.io',
        '-o',
        'name',
      ]),
    ).toContain('managedclusters');
    const clusters = await kubectl(hubKubeconfig, ['get', 'managedclusters']);
    expect(clusters).toMatch(/^cluster1\s+true\s+https:\/\/127\.0\.0\.1:\d+\s+True\s+True\s+/m);
    // kubectl on cluster1 through the hub: gateway → tunnel → agent, with the MSA token.
    const viaGateway = await kubectl(join(dir, 'cluster1-gateway.kubeconfig'), [
      'get',
      'ns',
      'open-cluster-management-agent',
      '-o',
      'name',
    ]);
    expect(viaGateway.trim()).toBe('namespace/open-cluster-management-agent');
  });

  it('no token, key or bootstrap secret appears in any log line of a full tether up', async () => {
    const credentials = [
      ...(await secretCredentials(hubKubeconfig, 'hub')),
      ...(await secretCredentials(cluster1Kubeconfig, 'cluster1')),
      ...fileCredentials(dir),
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
    const logs = filesUnder(dir).filter(isLogFile);
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
      ...logs.flatMap((f) => leaksIn(f.slice(dir.length + 1), readFileSync(f, 'utf8'), credentials)),
      ...leaksIn('tether up output', output, credentials),
    ];
    expect(leaks).toEqual([]);
  });

  it('SIGTERM tears everything down: no process, listening port or state directory left', async () => {
    const ports: number[] = [hubKubeconfig, cluster1Kubeconfig].map((f) =>
      Number(/server: https:\/\/127\.0\.0\.1:(\d+)/.exec(readFileSync(f, 'utf8'))?.[1]),
    );
    const children = processesMentioning(dir);
    // etcd + apiserver + KCM for each of 2 control planes, the proxy-server, `tether hub`, `tether agent`, the gateway
    expect(children.length).toBeGreaterThanOrEqual(10);
    const squidPort = Number(/squid http:\/\/127\.0\.0\.1:(\d+)/.exec(output)?.[1]);
    expect(squidPort).toBeGreaterThan(0);
    ports.push(squidPort);

    child?.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(processesMentioning(dir)).toEqual([]);
    for (const port of ports) expect(await portOpen(port)).toBe(false);
    expect(existsSync(join(dir, 'state'))).toBe(false);
    expect(existsSync(hubKubeconfig)).toBe(false);
    // what tether up printed while shutting down counts too
    expect(leaksIn('tether up output', output, [])).toEqual([]);
  });
});

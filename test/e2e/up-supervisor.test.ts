// `tether up` survives `kill -9` of any one of its processes: each is started again by the
// supervisor with the same command line (same ports, same state directory, etcd data kept), the
// crash is reported on stderr with the process name and signal, and the environment works again
// afterwards (cluster Available, kubectl through the gateway, objects written before still there).
// A SIGKILL of `tether up` itself leaves no process and no squid directory behind; a SIGTERM during
// start-up stops what has started and exits promptly, saying so truthfully.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../src/wait.ts';
import { kubectl, uniqueName } from './fixtures/helpers.ts';
import {
  descendants,
  isLive,
  type ProcessEntry,
  processesMentioning,
  tetherCommand,
} from './fixtures/up-process-tree.ts';

interface Up {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function startUp(dir: string): Up {
  const child = spawn(
    process.execPath,
    ['bin/tether.js', 'up', '--processes', '--clusters', '1', '--dir', dir],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, output: () => output, exited };
}

async function stopUp(up: Up | undefined): Promise<void> {
  if (!up || up.child.exitCode !== null || up.child.signalCode !== null) return;
  up.child.kill('SIGTERM');
  const timer = setTimeout(() => up.child.kill('SIGKILL'), 30_000);
  await up.exited;
  clearTimeout(timer);
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

describe('tether up supervisor', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tether-up-supervisor-'));
  const hubKubeconfig = join(dir, 'hub.kubeconfig');
  let up: Up | undefined;

  beforeAll(async () => {
    up = startUp(dir);
    const u = up;
    await pollUntil(() => /ready: hub/.test(u.output()) || undefined, {
      timeoutMs: 170_000,
      intervalMs: 500,
      description: `"ready" from tether up; output so far:\n${u.output()}`,
    });
  }, 180_000);

  afterAll(async () => {
    await stopUp(up);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('every process comes back after kill -9 with the same command line, and the environment works again', async () => {
    const u = up as Up;
    const root = u.child.pid as number;
    // written before etcd and the apiserver are killed: must survive both
    const marker = uniqueName('kept');
    await kubectl(hubKubeconfig, [
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
      const from = u.output().length;
      const killedAt = Date.now();
      process.kill(before.pid, 'SIGKILL');
      const since = (): string => u.output().slice(from);
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
    expect(u.output()).not.toMatch(/giving up|stopping…/);

    // etcd kept its data through its own restart and the apiserver's
    expect(
      await kubectl(hubKubeconfig, ['get', 'configmap', marker, '-n', 'default', '-o', 'jsonpath={.data.v}']),
    ).toBe(marker);
    // the cluster is (again) Joined and Available, and kubectl through the gateway reaches it
    await pollUntil(
      async () =>
        /^cluster1\s+true\s+\S+\s+True\s+True\s+/m.test(
          await kubectl(hubKubeconfig, ['get', 'managedclusters']),
        ),
      {
        timeoutMs: 90_000,
        intervalMs: 1000,
        description: 'cluster1 Joined and Available after the restarts',
      },
    );
    const viaGateway = await pollUntil(
      () =>
        kubectl(join(dir, 'cluster1-gateway.kubeconfig'), [
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

  it('kill -9 of tether up itself leaves no process and no squid directory behind', async () => {
    const u = up as Up;
    const root = u.child.pid as number;
    const squid = find(root, TARGETS.find((t) => t.name === 'squid') as (typeof TARGETS)[number]);
    const squidConf = squid.args[squid.args.indexOf('-f') + 1] as string;
    expect(squidConf).toMatch(/tether-squid-[^/]+\/squid\.conf$/);
    const children = descendants(root).map((p) => p.pid);
    expect(children.length).toBeGreaterThanOrEqual(11);
    process.kill(root, 'SIGKILL');
    await u.exited;
    await pollUntil(
      () =>
        (children.every((pid) => !isLive(pid)) &&
          processesMentioning(dir).length === 0 &&
          processesMentioning(squidConf).length === 0 &&
          !existsSync(dirname(squidConf))) ||
        undefined,
      {
        timeoutMs: 20_000,
        intervalMs: 250,
        description: `no process of ${dir}, no squid ${squidConf} and no squid directory`,
      },
    );
  }, 60_000);
});

describe('SIGTERM during tether up start-up', () => {
  for (const phase of ['starting 2 control planes', 'starting squid']) {
    it(`at "${phase}…" stops what has started and exits promptly, saying so truthfully`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'tether-up-sigterm-'));
      const up = startUp(dir);
      try {
        await pollUntil(() => up.output().includes(phase) || undefined, {
          timeoutMs: 170_000,
          intervalMs: 100,
          description: `"${phase}" from tether up; output so far:\n${up.output()}`,
        });
        const sentAt = Date.now();
        up.child.kill('SIGTERM');
        const code = await up.exited;
        const exitMs = Date.now() - sentAt;
        process.stdout.write(`SIGTERM at "${phase}" → exit in ${exitMs} ms\n`);
        expect(code, up.output()).toBe(0);
        expect(up.output()).not.toMatch(/ready: hub/);
        expect(up.output().trimEnd().split('\n').slice(-2)).toEqual([
          'tether: received SIGTERM; stopping…',
          'tether: stopped; all processes are gone',
        ]);
        expect(exitMs).toBeLessThan(30_000);
        // truthful: nothing of this environment runs any more and its state is gone
        expect(processesMentioning(dir)).toEqual([]);
        expect(existsSync(join(dir, 'state'))).toBe(false);
        expect(existsSync(join(dir, 'tether-up.pid'))).toBe(false);
      } finally {
        await stopUp(up);
        rmSync(dir, { recursive: true, force: true });
      }
    }, 240_000);
  }
});

// `tether up` as a user runs it: prints "ready", serves real clusters, and on SIGTERM leaves no
// process, listening port or state directory behind.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../src/wait.ts';
import { kubectl } from './helpers.ts';

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
  it('starts hub + 1 cluster that joins through squid (JOINED and AVAILABLE True), serves kubectl through the gateway, and SIGTERM tears everything down', async () => {
    const child = spawn(process.execPath, ['bin/tether.js', 'up', '--clusters', '1', '--dir', dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString();
    });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      await pollUntil(() => /ready/.test(output) || undefined, {
        timeoutMs: 120_000,
        description: `"ready" from tether up; output so far:\n${output}`,
      });
      const hubKubeconfig = join(dir, 'hub.kubeconfig');
      expect(existsSync(join(dir, 'cluster1.kubeconfig'))).toBe(true);
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
      const ports: number[] = [hubKubeconfig, join(dir, 'cluster1.kubeconfig')].map((f) =>
        Number(/server: https:\/\/127\.0\.0\.1:(\d+)/.exec(readFileSync(f, 'utf8'))?.[1]),
      );
      const children = processesMentioning(dir);
      // etcd + apiserver + KCM for each of 2 control planes, the proxy-server, `tether hub`, `tether agent`, the gateway
      expect(children.length).toBeGreaterThanOrEqual(10);
      const squidPort = Number(/squid http:\/\/127\.0\.0\.1:(\d+)/.exec(output)?.[1]);
      expect(squidPort).toBeGreaterThan(0);
      ports.push(squidPort);

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(processesMentioning(dir)).toEqual([]);
      for (const port of ports) expect(await portOpen(port)).toBe(false);
      expect(existsSync(join(dir, 'state'))).toBe(false);
      expect(existsSync(hubKubeconfig)).toBe(false);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

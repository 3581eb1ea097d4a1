// `tether agent`'s ops endpoint as an operator meets it: /metrics has the proxy-agent's series and
// the process metrics from the start (before the hub has issued a certificate); two agents with the
// default (a free port each, logged) run side by side on one host, and a second agent given the
// same port as the first stops at once naming the flag to change. Real `tether agent` processes;
// the clusters they point at are closed ports (nothing here needs a hub).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { freePort, localChildEnv, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { pollUntil } from '../../src/wait.ts';

let dir: string;
let kubeconfig: string;
let bootstrap: string;
const procs: SupervisedProcess[] = [];

function kubeconfigYaml(server: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: c, cluster: {server: "${server}"}}]`,
    'contexts: [{name: c, context: {cluster: c, user: u}}]',
    'current-context: c',
    'users: [{name: u, user: {}}]',
    '',
  ].join('\n');
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tether-agent-ops-'));
  const closed = await freePort();
  kubeconfig = join(dir, 'managed.kubeconfig');
  bootstrap = join(dir, 'bootstrap.kubeconfig');
  writeFileSync(kubeconfig, kubeconfigYaml(`https://127.0.0.1:${closed}`));
  writeFileSync(bootstrap, kubeconfigYaml(`https://127.0.0.1:${closed}`));
});
afterEach(async () => {
  await Promise.all(procs.splice(0).map((p) => p.stop(2000)));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** `tether agent` for `name`; without opsPort the --ops-port flag is left out (its default). */
function tetherAgent(name: string, opsPort?: number): SupervisedProcess {
  const p = new SupervisedProcess({
    name,
    command: process.execPath,
    args: [
      tetherBin,
      'agent',
      '--cluster-name=cluster1',
      `--agent-name=${name}`,
      `--kubeconfig=${kubeconfig}`,
      `--bootstrap-kubeconfig=${bootstrap}`,
      '--kube-apiserver=127.0.0.1:6443',
      '--proxy-server=127.0.0.1:1',
      ...(opsPort === undefined ? [] : [`--ops-port=${opsPort}`]),
    ],
    logFile: join(dir, `${name}.log`),
    env: localChildEnv({ ...process.env, TETHER_LOG_LEVEL: 'info' }),
  });
  procs.push(p);
  return p;
}

/** The ops port a started agent logged ("agent started", opsPort). */
async function loggedOpsPort(p: SupervisedProcess): Promise<number> {
  return pollUntil(
    () => {
      if (!p.running) throw new Error(`${p.name} exited:\n${p.tail()}`);
      const m = /"opsPort":(\d+).*"msg":"agent started"/.exec(readFileSync(p.logFile, 'utf8'));
      return m ? Number(m[1]) : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 100, description: `${p.name} to log its ops port` },
  );
}

describe('tether agent ops endpoint', () => {
  it('serves the proxy-agent and process metrics before it has joined the hub', async () => {
    const agent = tetherAgent('agent-metrics', 0);
    const port = await loggedOpsPort(agent);
    const res = await request(`http://127.0.0.1:${port}/metrics`);
    const text = await res.body.text();
    expect(res.statusCode).toBe(200);
    expect(text).toMatch(/^tether_agent_connected_servers 0$/m);
    expect(text).toMatch(/^tether_agent_draining_tunnels 0$/m);
    expect(text).toMatch(/^process_cpu_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_heap_size_total_bytes \d/m);
    const ready = await request(`http://127.0.0.1:${port}/readyz`);
    expect(ready.statusCode).toBe(503);
    expect(await ready.body.text()).toContain('waiting for a hub certificate');
  });

  it('two agents with the default ops port run side by side on one host, each on its own logged port', async () => {
    const one = tetherAgent('agent-default-one');
    const two = tetherAgent('agent-default-two');
    const [p1, p2] = await Promise.all([loggedOpsPort(one), loggedOpsPort(two)]);
    expect(p1).not.toBe(p2);
    for (const port of [p1, p2]) {
      expect((await request(`http://127.0.0.1:${port}/healthz`)).statusCode).toBe(200);
    }
    expect(one.running && two.running).toBe(true);
  });

  it('a second agent on the same ops port stops at start-up and names --ops-port', async () => {
    const first = tetherAgent('agent-one', 0);
    const port = await loggedOpsPort(first);
    const second = tetherAgent('agent-two', port);
    const exit = await second.exited;
    expect(exit.code).not.toBe(0);
    expect(second.tail()).toContain(`port ${port} is in use; pass --ops-port`);
    // It stopped before starting anything that talks to a hub.
    expect(second.tail()).not.toContain('registration-agent');
    expect(first.running).toBe(true);
  });
});

// Child-process side of ClusterSide: `fork('bench/lib/cluster-peer.ts')`, then calls as IPC
// messages { id, method, args } answered with { id, result } or { id, error }. Exits after
// shutdown() or when the parent goes away. RemoteCluster is the parent's handle on such a child.
// The child runs tether's proxy-agent, so it starts with tether's V8 flags (src/node-flags.ts).
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { tetherNodeFlags } from '../../src/node-flags.ts';
import {
  type AgentSpec,
  type ClusterApi,
  ClusterSide,
  type RelayPorts,
  type SideStats,
  type TargetPorts,
} from './cluster-side.ts';

interface Call {
  id: number;
  method: keyof ClusterApi;
  args: unknown[];
}
type Reply = { id: number; result?: unknown; error?: string } | { ready: true };

export class RemoteCluster implements ClusterApi {
  private readonly child: ChildProcess;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  readonly pid: number;

  constructor(name: string, execArgv: string[] = []) {
    this.child = fork(fileURLToPath(import.meta.url), [name], {
      execArgv: ['--expose-gc', ...tetherNodeFlags, ...execArgv],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, TETHER_BENCH_PEER: name },
    });
    this.pid = this.child.pid ?? 0;
    this.exited = new Promise((r) => this.child.once('exit', () => r()));
    this.ready = new Promise((resolve, reject) => {
      this.child.once('exit', (code, signal) => {
        const err = new Error(`cluster peer ${name} exited (code ${code}, signal ${signal})`);
        reject(err);
        for (const p of this.pending.values()) p.reject(err);
        this.pending.clear();
      });
      this.child.on('message', (m: Reply) => {
        if ('ready' in m) {
          resolve();
          return;
        }
        const p = this.pending.get(m.id);
        if (!p) return;
        this.pending.delete(m.id);
        if (m.error !== undefined) p.reject(new Error(`cluster peer ${name}: ${m.error}`));
        else p.resolve(m.result);
      });
    });
  }

  private async call<T>(method: keyof ClusterApi, ...args: unknown[]): Promise<T> {
    await this.ready;
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.send({ id, method, args } satisfies Call);
    });
  }

  init(tls: { certPem: string; keyPem: string; clientCaPem: string }): Promise<TargetPorts> {
    return this.call('init', tls);
  }
  startRelay(targets: { bulk: number; echo: number }): Promise<RelayPorts> {
    return this.call('startRelay', targets);
  }
  startAgent(spec: AgentSpec): Promise<void> {
    return this.call('startAgent', spec);
  }
  stopAgent(cluster: string): Promise<void> {
    return this.call('stopAgent', cluster);
  }
  stats(gcFirst: boolean): Promise<SideStats> {
    return this.call('stats', gcFirst);
  }
  async shutdown(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    await this.call('shutdown').catch(() => {});
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(killer);
  }
}

function serve(): void {
  const side = new ClusterSide();
  let exiting = false;
  const exit = (): void => {
    if (exiting) return;
    exiting = true;
    void side.shutdown().finally(() => process.exit(0));
  };
  process.on('message', (m: Call) => {
    const fn = side[m.method] as (...a: unknown[]) => Promise<unknown>;
    fn.apply(side, m.args).then(
      (result) => {
        process.send?.({ id: m.id, result } satisfies Reply, () => {
          if (m.method === 'shutdown') process.exit(0);
        });
      },
      (err: Error) => process.send?.({ id: m.id, error: err.stack ?? String(err) } satisfies Reply),
    );
  });
  process.on('disconnect', exit);
  process.send?.({ ready: true } satisfies Reply);
}

if (process.env.TETHER_BENCH_PEER && process.send) serve();

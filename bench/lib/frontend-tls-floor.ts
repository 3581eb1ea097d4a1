// The floor under the frontend's memory per idle connection: a bare node:tls server (the same
// serving certificate, client certificates requested and verified the same way) in a process of its
// own that only accepts and holds connections. Whatever one idle TLS connection costs here, every
// CONNECT-frontend connection costs at least that before any tunnel state.
//
// `fork('bench/lib/frontend-tls-floor.ts')` with TETHER_BENCH_TLS_FLOOR set; IPC: the parent sends
// { tls } once and gets { port }; then { memory: true } → { rss, heapUsed, external } after a full GC.
import { type ChildProcess, fork } from 'node:child_process';
import { createServer, type TLSSocket } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { gc } from './stats.ts';

export interface FloorMemory {
  rss: number;
  heapUsed: number;
  external: number;
  held: number;
}

interface Init {
  tls: { certPem: string; keyPem: string; clientCaPem: string };
}

/** The parent's handle on the bare TLS server process. */
export class TlsFloorServer {
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;

  private constructor(child: ChildProcess) {
    this.child = child;
    this.exited = new Promise((r) => child.once('exit', () => r()));
  }

  static async start(tls: Init['tls']): Promise<{ server: TlsFloorServer; port: number }> {
    const child = fork(fileURLToPath(import.meta.url), [], {
      execArgv: ['--expose-gc'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, TETHER_BENCH_TLS_FLOOR: '1' },
    });
    const server = new TlsFloorServer(child);
    const port = await server.ask<{ port: number }>({ tls } satisfies Init);
    return { server, port: port.port };
  }

  private ask<T>(msg: unknown): Promise<T> {
    return new Promise((resolve, reject) => {
      const onExit = (): void => reject(new Error('TLS floor server exited'));
      this.child.once('exit', onExit);
      this.child.once('message', (m: T) => {
        this.child.off('exit', onExit);
        resolve(m);
      });
      this.child.send(msg as object);
    });
  }

  memory(): Promise<FloorMemory> {
    return this.ask({ memory: true });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(killer);
  }
}

function serve(): void {
  const held = new Set<TLSSocket>();
  process.on('message', (m: Init | { memory: true }) => {
    if ('tls' in m) {
      const server = createServer(
        {
          cert: m.tls.certPem,
          key: m.tls.keyPem,
          ca: m.tls.clientCaPem,
          requestCert: true,
          rejectUnauthorized: false,
        },
        (s) => {
          held.add(s);
          s.on('error', () => {});
          s.once('close', () => held.delete(s));
        },
      );
      server.maxConnections = 100_000;
      server.listen(0, '127.0.0.1', 4096, () => {
        const a = server.address();
        process.send?.({ port: typeof a === 'object' && a ? a.port : 0 });
      });
      return;
    }
    gc();
    const u = process.memoryUsage();
    process.send?.({
      rss: u.rss,
      heapUsed: u.heapUsed,
      external: u.external,
      held: held.size,
    } satisfies FloorMemory);
  });
  process.on('disconnect', () => process.exit(0));
}

if (process.env.TETHER_BENCH_TLS_FLOOR && process.send) serve();

// The operations endpoint every long-running tether process serves: /healthz (the process is up),
// /readyz (it can do its job: e.g. an agent holds at least one tunnel) and /metrics (Prometheus).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { TetherError } from './errors.ts';

/** A registry with Node's process series (memory, CPU, event loop lag, handles), for /metrics. */
export function processMetrics(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

export interface OpsServer {
  port: number;
  close(): Promise<void>;
}

export async function startOpsServer(opts: {
  host: string;
  port: number;
  registries: Registry[];
  ready: () => { ok: boolean; detail: string };
  /** the flag that sets the port, named in the error when the port is taken (default --ops-port) */
  flag?: string;
}): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405).end();
      return;
    }
    if (path === '/healthz' || path === '/livez') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    } else if (path === '/readyz') {
      const r = opts.ready();
      res.writeHead(r.ok ? 200 : 503, { 'content-type': 'text/plain' }).end(`${r.detail}\n`);
    } else if (path === '/metrics') {
      Promise.all(opts.registries.map((r) => r.metrics()))
        .then((parts) => {
          res
            .writeHead(200, { 'content-type': opts.registries[0]?.contentType ?? 'text/plain' })
            .end(parts.join('\n'));
        })
        .catch((err: Error) => res.writeHead(500).end(err.message));
    } else {
      res.writeHead(404).end();
    }
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(listenError(err, opts)));
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Says which flag to change when the ops port cannot be bound (two agents on one host, …). */
function listenError(err: NodeJS.ErrnoException, opts: { host: string; port: number; flag?: string }): Error {
  const flag = opts.flag ?? '--ops-port';
  if (err.code === 'EADDRINUSE')
    return new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `cannot serve /healthz, /readyz and /metrics: port ${opts.port} is in use; pass ${flag}=<another port>, or ${flag}=0 for a free one (logged at start). Another tether process on ${opts.host}?`,
      { cause: err },
    );
  if (err.code === 'EACCES')
    return new TetherError(
      'TETHER_INVALID_ARGUMENT',
      `ops port ${opts.port} on ${opts.host} needs privileges; pass ${flag} with a port above 1023`,
      { cause: err },
    );
  return err;
}

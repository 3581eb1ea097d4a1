// What soaks share around the soak stack: an admin mTLS origin for a local control plane, a
// namespace created through a pool, and what a tether process holds (fds, sockets, RSS from /proc and
// its V8 heap after a forced GC through the inspector). Used by bench/soak.ts, bench/lib/heap-rounds.ts
// and test/e2e/gateway-soak.test.ts.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Pool } from 'undici';
import { heapAfterGc } from './inspector-gc.ts';
import { type ProcSample, procSample } from './proc-stats.ts';
import type { SoakProcess } from './soak-stack.ts';
import type { Origin } from './soak-watch.ts';

/** The admin client certificate of a local control plane (its pki dir next to the CA). */
export function adminOrigin(cp: { apiserverUrl: string; caCertPath: string }): Origin {
  const pki = dirname(cp.caCertPath);
  return {
    url: cp.apiserverUrl,
    ca: readFileSync(cp.caCertPath, 'utf8'),
    cert: readFileSync(join(pki, 'admin.crt'), 'utf8'),
    key: readFileSync(join(pki, 'admin.key'), 'utf8'),
  };
}

/** Creates namespace `name` through `pool` (an admin origin); an existing one is fine. */
export async function createNamespace(pool: Pool, name: string): Promise<void> {
  const res = await pool.request({
    method: 'POST',
    path: '/api/v1/namespaces',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: { name } }),
  });
  const body = await res.body.text();
  if (res.statusCode !== 201 && res.statusCode !== 409)
    throw new Error(`create namespace ${name}: HTTP ${res.statusCode} ${body.slice(0, 200)}`);
}

export interface Holding {
  sample: ProcSample;
  /** V8 heap used after a forced GC, bytes */
  heap: number;
}

/** What `p` holds now; it must run with the inspector (startSoakStack `inspect: true`). */
export async function holding(p: SoakProcess): Promise<Holding> {
  if (!p.inspector) throw new Error(`${p.name} has no inspector URL; log:\n${p.tail(10)}`);
  const heap = await heapAfterGc(p.inspector);
  return { sample: procSample(p.pid), heap };
}

// The hub aggregator reaches the gateway over HTTP/2: 20 watches opened at once through the hub
// share a few connections to the gateway instead of one TLS connection (and handshake) each, and
// every watch still gets its initial event. Connections are counted from the kernel's table of
// established TCP connections on the gateway's port.
import { readFileSync } from 'node:fs';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../src/wait.ts';
import {
  cluster1GatewayToken,
  cluster1Target,
  type GatewayFixture,
  hubAdminTls,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { uniqueName } from './fixtures/helpers.ts';

let f: GatewayFixture;
const cluster = uniqueName('gwh2');

/** Established TCP connections whose local port is `port` (IPv4 and IPv6 tables). */
function establishedOnPort(port: number): number {
  let n = 0;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      const local = cols[1];
      // state 01 = ESTABLISHED
      if (local && cols[3] === '01' && Number.parseInt(local.split(':')[1] ?? '', 16) === port) n++;
    }
  }
  return n;
}

beforeAll(async () => {
  f = await startGatewayFixture();
  await f.addCluster({ name: cluster, ...cluster1Target() }, await cluster1GatewayToken(cluster));
});

afterAll(async () => {
  await f?.stop();
});

describe('the gateway behind the hub aggregator', () => {
  it('20 watches through the hub share HTTP/2 connections to the gateway', async () => {
    const tls = hubAdminTls();
    const pool = new Pool(`https://${tls.host}:${tls.port}`, {
      connections: 32,
      connect: { ca: tls.ca, cert: tls.cert, key: tls.key },
      bodyTimeout: 0,
    });
    const aborts: AbortController[] = [];
    try {
      const path = `/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${cluster}/proxy/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0`;
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          const abort = new AbortController();
          aborts.push(abort);
          const res = await pool.request({ method: 'GET', path, signal: abort.signal });
          expect(res.statusCode).toBe(200);
          // resourceVersion=0 starts with the existing objects: kube-root-ca.crt is in every namespace.
          await new Promise<void>((resolve, reject) => {
            let seen = '';
            res.body.on('data', (d: Buffer) => {
              seen = (seen + d.toString()).slice(-4096);
              if (seen.includes('kube-root-ca.crt')) resolve();
            });
            res.body.on('error', reject);
          });
        }),
      );
      const port = f.gateway.port;
      const connections = await pollUntil(() => establishedOnPort(port) || undefined, {
        timeoutMs: 5000,
        description: 'connections to the gateway',
      });
      // One HTTP/2 connection carries them (a second may be open from health or discovery calls);
      // over HTTP/1.1 each open watch holds a connection of its own: 20 or more.
      expect(connections).toBeLessThan(5);
    } finally {
      for (const a of aborts) a.abort();
      await pool.destroy().catch(() => {});
    }
  });
});

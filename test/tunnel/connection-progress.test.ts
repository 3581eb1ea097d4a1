// The hub's signs of life on a tunnel connection, read from the kernel socket under TLS: bytes the
// peer takes count as heard from it even while we read nothing (node:http2 stops reading during
// its own writes), and they stop once the peer's process stops reading and the buffers are full.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { connect, createServer, type Server, type TLSSocket } from 'node:tls';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createCertificateAuthority, issueCertificate, type KeyPairPem } from '../../src/pki/index.ts';
import { connectionCounters, kernelHandleOf } from '../../src/tunnel/connection-progress.ts';
import { pollUntil } from '../../src/wait.ts';

let caPem: string;
let serverCert: KeyPairPem;
const cleanups: Array<() => void> = [];
beforeAll(async () => {
  const ca = await createCertificateAuthority('progress-test-ca');
  caPem = ca.certPem;
  serverCert = await issueCertificate(ca, {
    commonName: 'localhost',
    usage: 'server',
    dnsNames: ['localhost'],
  });
});
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

/** A TLS connection on loopback: the server's end (ours) and the client's end (the peer). */
async function tlsPair(): Promise<{ ours: TLSSocket; peer: TLSSocket }> {
  const server: Server = createServer({ cert: serverCert.certPem, key: serverCert.keyPem });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const accepted = once(server, 'secureConnection');
  const peer = connect({
    port: (server.address() as AddressInfo).port,
    host: '127.0.0.1',
    servername: 'localhost',
    ca: caPem,
  });
  await once(peer, 'secureConnect');
  const [ours] = (await accepted) as [TLSSocket];
  cleanups.push(() => {
    ours.destroy();
    peer.destroy();
    server.close();
  });
  return { ours, peer };
}

describe('connectionCounters', () => {
  it('finds the TCP handle under a TLS socket', async () => {
    const { ours } = await tlsPair();
    expect(kernelHandleOf(ours)).toBeDefined();
    expect(kernelHandleOf(new PassThrough())).toBeUndefined();
  });

  it('counts the bytes the peer takes while our writes are backed up, though we read nothing', async () => {
    const { ours, peer } = await tlsPair();
    ours.pause(); // we read nothing, as node:http2 during its own write
    const counters = connectionCounters(ours);
    const before = counters.bytesRead;
    let received = 0;
    peer.on('data', (c: Buffer) => {
      received += c.length;
    });
    const total = 32 * 1024 * 1024;
    ours.write(Buffer.alloc(total));
    // sampled as the liveness checks do, while the write drains
    await pollUntil(
      () => {
        void counters.bytesRead;
        return received >= total;
      },
      { timeoutMs: 10_000, intervalMs: 5, description: '32 MiB received' },
    );
    const heard = counters.bytesRead - before;
    // most of it left while the write was backed up; none of it was read from the peer
    expect(heard).toBeGreaterThan(total / 2);
    expect(counters.bytesWritten).toBeGreaterThanOrEqual(total);
  });

  it('does not count small writes a frozen peer’s kernel still takes (a PING to a SIGSTOPped agent)', async () => {
    const { ours, peer } = await tlsPair();
    peer.pause(); // frozen: its kernel still acknowledges what fits in its receive buffer
    ours.pause();
    const counters = connectionCounters(ours);
    const before = counters.bytesRead;
    for (let i = 0; i < 20; i++) {
      ours.write(Buffer.alloc(64));
      await new Promise((r) => setImmediate(r));
      void counters.bytesRead;
    }
    await pollUntil(() => kernelHandleOf(ours)?.writeQueueSize === 0, {
      timeoutMs: 5000,
      description: 'the small writes taken by the kernel',
    });
    expect(counters.bytesRead - before).toBe(0);
  });

  it('stops counting once a peer that reads nothing has filled the buffers (a frozen agent goes silent)', async () => {
    const { ours, peer } = await tlsPair();
    peer.pause();
    ours.pause();
    const counters = connectionCounters(ours);
    ours.write(Buffer.alloc(64 * 1024 * 1024));
    // the kernels take what fits in their buffers, then nothing more
    let last = -1;
    const plateau = await pollUntil(
      () => {
        const now = counters.bytesRead;
        const still = now === last;
        last = now;
        return still ? now : false;
      },
      { timeoutMs: 10_000, intervalMs: 300, description: 'no more bytes taken by a peer that reads nothing' },
    );
    expect(plateau).toBeLessThan(64 * 1024 * 1024);
    expect(counters.bytesWritten).toBeGreaterThan(plateau);
  });

  it('uses the stream’s own counters where no TCP socket is below it', () => {
    const s = Object.assign(new PassThrough(), { bytesRead: 42, bytesWritten: 7 });
    const counters = connectionCounters(s);
    expect(counters.bytesRead).toBe(42);
    expect(counters.bytesWritten).toBe(7);
  });
});

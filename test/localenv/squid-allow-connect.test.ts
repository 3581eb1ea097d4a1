// squid with an allow list (the real-node environment's squid): CONNECT to a listed address and
// port passes, any other port or address is refused with 403, and plain requests are refused too;
// it also answers on an extra listen address. A real squid process on loopback addresses.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Squid, squidConf, startSquid } from '../../src/localenv/squid.ts';

function listen(server: Server, host: string): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, host, () => {
      const a = server.address();
      resolve(typeof a === 'object' && a ? a.port : 0);
    }),
  );
}

/** The status line squid answers a `CONNECT target` with, sent to host:port. */
function connectStatus(proxyHost: string, proxyPort: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s: Socket = connect({ host: proxyHost, port: proxyPort });
    let text = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`no answer from squid; got ${JSON.stringify(text)}`));
    }, 5000);
    s.on('data', (c: Buffer) => {
      text += c.toString();
      const line = text.split('\r\n')[0];
      if (text.includes('\r\n')) {
        clearTimeout(timer);
        s.destroy();
        resolve(line ?? '');
      }
    });
    s.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    s.write(request);
  });
}

/** The error `p` rejects with (a resolved squid is stopped and fails the test). */
async function rejection(p: Promise<Squid>): Promise<{ code?: string }> {
  const squid = await p.catch((e: unknown) => e as { code?: string });
  if ('stop' in squid) {
    await squid.stop();
    throw new Error('expected startSquid to reject');
  }
  return squid;
}

describe('squid with allowConnect', () => {
  const allowed = createServer((s) => s.end());
  const other = createServer((s) => s.end());
  let allowedPort = 0;
  let otherPort = 0;
  let squid: Squid | undefined;

  beforeAll(async () => {
    allowedPort = await listen(allowed, '127.0.0.1');
    otherPort = await listen(other, '127.0.0.1');
    // 127.0.0.2 is loopback too (127/8): squid's extra listen address
    squid = await startSquid({
      listenAddresses: ['127.0.0.2'],
      allowConnect: [
        { address: '127.0.0.1', ports: allowedPort },
        { address: '127.0.0.3', ports: [30000, 32767] },
      ],
    });
  }, 30_000);

  afterAll(async () => {
    await squid?.stop();
    allowed.close();
    other.close();
  });

  it('lets CONNECT through to the listed address and port, also on the extra listen address', async () => {
    if (!squid) throw new Error('no squid');
    const req = `CONNECT 127.0.0.1:${allowedPort} HTTP/1.1\r\nHost: 127.0.0.1:${allowedPort}\r\n\r\n`;
    expect(await connectStatus('127.0.0.1', squid.port, req)).toMatch(/^HTTP\/1\.1 200/);
    expect(squid.urlOn('127.0.0.2')).toBe(`http://127.0.0.2:${squid.port}`);
    expect(await connectStatus('127.0.0.2', squid.port, req)).toMatch(/^HTTP\/1\.1 200/);
  });

  it('refuses another port of the same address, another address, and plain requests', async () => {
    if (!squid) throw new Error('no squid');
    for (const target of [`127.0.0.1:${otherPort}`, `127.0.0.4:${allowedPort}`, '127.0.0.3:29999']) {
      const req = `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`;
      expect(await connectStatus('127.0.0.1', squid.port, req)).toMatch(/^HTTP\/1\.1 403/);
    }
    const get = `GET http://127.0.0.1:${allowedPort}/ HTTP/1.1\r\nHost: 127.0.0.1:${allowedPort}\r\n\r\n`;
    expect(await connectStatus('127.0.0.1', squid.port, get)).toMatch(/^HTTP\/1\.1 403/);
    expect(() => squid?.urlOn('127.0.0.9')).toThrow(/does not listen/);
  });

  it('rejects an allow list entry that is not an IPv4 address and port before starting', async () => {
    const err = await rejection(startSquid({ allowConnect: [{ address: 'hub.local', ports: 443 }] }));
    expect(err.code).toBe('TETHER_INVALID_ARGUMENT');
    const err2 = await rejection(startSquid({ listenAddresses: ['::1'] }));
    expect(err2.code).toBe('TETHER_INVALID_ARGUMENT');
  });

  it('keeps the basic-auth challenge in front of the allow list', () => {
    const conf = squidConf(
      '/d',
      3128,
      { basicAuth: { username: 'a', password: 'b' }, allowConnect: [{ address: '10.0.0.1', ports: 443 }] },
      { htpasswd: '/d/htpasswd', ncsaAuth: '/usr/lib/squid/basic_ncsa_auth' },
    );
    const access = conf.split('\n').filter((l) => l.startsWith('http_access'));
    expect(access).toEqual([
      'http_access deny !tether_authenticated',
      'http_access allow CONNECT tether_to_0 tether_port_0',
      'http_access deny all',
    ]);
  });
});

// The forward-proxy dialer against a real squid (no Kubernetes): proxy selection from the
// environment (the full NO_PROXY table is test/kube/forward-proxy-agreement.test.ts), CONNECT with
// TLS end to end through plain, TLS and authenticating squids, and the coded errors an agent sees when the proxy is down, refuses, rejects credentials or stays silent.
import { X509Certificate } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket, connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTetherError, type TetherErrorCode } from '../../src/errors.ts';
import { freePort } from '../../src/localenv/process.ts';
import { type Squid, startSquid } from '../../src/localenv/squid.ts';
import { createCertificateAuthority, issueCertificate, type KeyPairPem } from '../../src/pki/index.ts';
import { describeProxy, dialThroughProxy, proxyForUrl } from '../../src/tunnel/forward-proxy.ts';
import { pollUntil } from '../../src/wait.ts';

const PASSWORD = 'p@ss:w/rd%20';

describe('proxyForUrl', () => {
  const env = {
    HTTPS_PROXY: 'http://upper:3128',
    https_proxy: 'http://lower:3128',
    HTTP_PROXY: 'plain:8080',
  };

  it('prefers an explicit proxy URL, even over NO_PROXY', () => {
    const p = proxyForUrl('https://hub:6443', {
      proxyUrl: 'https://explicit:8443',
      env: { ...env, NO_PROXY: '*' },
    });
    expect(p?.href).toBe('https://explicit:8443/');
  });

  it('takes https_proxy before HTTPS_PROXY for https and wss targets', () => {
    expect(proxyForUrl('https://hub:6443', { env })?.host).toBe('lower:3128');
    expect(proxyForUrl('wss://hub:6443', { env: { HTTPS_PROXY: 'http://upper:3128' } })?.host).toBe(
      'upper:3128',
    );
  });

  it('uses HTTP_PROXY for http targets and assumes http:// without a scheme', () => {
    const p = proxyForUrl(new URL('http://hub/healthz'), { env });
    expect(p?.href).toBe('http://plain:8080/');
    expect(proxyForUrl('http://hub', { env: { HTTPS_PROXY: 'http://x:1' } })).toBeUndefined();
  });

  it('returns undefined without a proxy setting or for empty values', () => {
    expect(proxyForUrl('https://hub:6443', { env: {} })).toBeUndefined();
    expect(proxyForUrl('https://hub:6443', { env: { https_proxy: '', HTTPS_PROXY: ' ' } })).toBeUndefined();
  });

  it('honours no_proxy before NO_PROXY', () => {
    const e = { HTTPS_PROXY: 'http://p:3128', no_proxy: 'hub', NO_PROXY: 'other' };
    expect(proxyForUrl('https://hub:6443', { env: e })).toBeUndefined();
    expect(proxyForUrl('https://other:6443', { env: e })?.host).toBe('p:3128');
  });

  it('rejects proxies that are not http:// or https://', () => {
    for (const bad of ['socks5://user:hunter2@p:1080', 'ftp://p:21']) {
      let err: unknown;
      try {
        proxyForUrl('https://hub:6443', { env: { HTTPS_PROXY: bad } });
      } catch (e) {
        err = e;
      }
      expect(isTetherError(err, 'TETHER_INVALID_ARGUMENT')).toBe(true);
      expect((err as Error).message).toMatch(/only http:\/\/ and https:\/\//);
      expect((err as Error).message).not.toContain('hunter2');
    }
    expect(() => proxyForUrl('https://hub', { proxyUrl: 'socks5://p:1080' })).toThrow(/HTTP CONNECT/);
  });

  it('describes a proxy without its credentials', () => {
    expect(describeProxy(new URL('http://alice:hunter2@proxy.corp:3128'))).toBe('http://proxy.corp:3128');
    expect(describeProxy('https://alice:hunter2@[::1]:8443/')).toBe('https://[::1]:8443');
    expect(describeProxy('not a url //alice:hunter2@x')).not.toContain('hunter2');
  });
});

/** Listens on a free loopback port and returns the port. */
async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  return typeof addr === 'object' && addr ? addr.port : 0;
}

async function closeServer(server: Server | undefined, sockets: Set<Socket>): Promise<void> {
  for (const s of sockets) s.destroy();
  if (server?.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
}

async function expectDialError(
  dial: Promise<Socket>,
  code: TetherErrorCode,
  pattern: RegExp,
): Promise<Error> {
  const err = await dial.then(
    (s) => {
      s.destroy();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(isTetherError(err, code), `expected ${code}, got ${String(err)}`).toBe(true);
  expect((err as Error).message).toMatch(pattern);
  expect((err as Error).message).not.toContain(PASSWORD);
  expect((err as Error).message).not.toContain(encodeURIComponent(PASSWORD));
  return err as Error;
}

describe('dialThroughProxy through squid', () => {
  let echoCaPem = '';
  let echoCert: KeyPairPem;
  let proxyCaPem = '';
  let echoServer: Server;
  let echoPort = 0;
  let deniedPort = 0;
  let plain: Squid;
  let tlsSquid: Squid;
  let authSquid: Squid;
  const squids: Squid[] = [];
  const sockets = new Set<Socket>();
  let silent: Server | undefined;

  beforeAll(async () => {
    const echoCa = await createCertificateAuthority('echo-ca');
    echoCaPem = echoCa.certPem;
    echoCert = await issueCertificate(echoCa, {
      commonName: 'echo',
      usage: 'server',
      ipAddresses: ['127.0.0.1'],
    });
    const proxyCa = await createCertificateAuthority('proxy-ca');
    proxyCaPem = proxyCa.certPem;
    const proxyCert = await issueCertificate(proxyCa, {
      commonName: 'squid',
      usage: 'server',
      ipAddresses: ['127.0.0.1'],
    });

    echoServer = createTlsServer({ cert: echoCert.certPem, key: echoCert.keyPem }, (s) => {
      sockets.add(s);
      s.pipe(s);
    });
    echoPort = await listen(echoServer);
    deniedPort = await freePort();

    const started = await Promise.allSettled([
      startSquid({ denyConnectPorts: [deniedPort] }),
      startSquid({ tls: proxyCert }),
      startSquid({ basicAuth: { username: 'agent', password: PASSWORD } }),
    ]);
    for (const r of started) if (r.status === 'fulfilled') squids.push(r.value);
    for (const r of started) if (r.status === 'rejected') throw r.reason;
    [plain, tlsSquid, authSquid] = squids as [Squid, Squid, Squid];
  });

  afterAll(async () => {
    await Promise.all(squids.map((s) => s.stop()));
    await closeServer(echoServer, sockets);
    await closeServer(silent, sockets);
  });

  /** TLS to the echo server inside the tunnel; proves the peer is the echo server itself. */
  async function echoThrough(tunnel: Socket, message: string): Promise<void> {
    sockets.add(tunnel);
    const tls: TLSSocket = tlsConnect({ socket: tunnel, ca: echoCaPem, host: '127.0.0.1' });
    sockets.add(tls);
    await new Promise<void>((resolve, reject) => tls.once('secureConnect', resolve).once('error', reject));
    expect(tls.authorized).toBe(true);
    expect(tls.getPeerCertificate().fingerprint256).toBe(
      new X509Certificate(echoCert.certPem).fingerprint256,
    );
    const echoed = new Promise<string>((resolve, reject) => {
      let text = '';
      tls.on('data', (c: Buffer) => {
        text += c.toString();
        if (text.length >= message.length) resolve(text);
      });
      tls.once('error', reject);
    });
    tls.write(message);
    expect(await echoed).toBe(message);
    tls.end();
    await new Promise<void>((resolve) => tls.once('close', () => resolve()));
  }

  async function tunnelInLog(squid: Squid, user = '-'): Promise<string> {
    return pollUntil(
      () =>
        squid
          .accessLog()
          .split('\n')
          .find((l) => l.includes(`CONNECT 127.0.0.1:${echoPort} ${user}`)),
      {
        timeoutMs: 10_000,
        intervalMs: 100,
        description: `CONNECT 127.0.0.1:${echoPort} in the squid access log`,
      },
    );
  }

  it('runs TLS end to end with the echo server through a plain squid', async () => {
    const tunnel = await dialThroughProxy(new URL(plain.url), '127.0.0.1', echoPort);
    await echoThrough(tunnel, 'hello through squid');
    expect(await tunnelInLog(plain)).toContain('TCP_TUNNEL/200');
  });

  it('speaks TLS to an https squid that has its own CA', async () => {
    const tunnel = await dialThroughProxy(new URL(tlsSquid.url), '127.0.0.1', echoPort, {
      proxyCa: [proxyCaPem],
    });
    expect((tunnel as TLSSocket).encrypted).toBe(true);
    await echoThrough(tunnel, 'hello through TLS to squid');
    expect(await tunnelInLog(tlsSquid)).toContain('TCP_TUNNEL/200');
  });

  it('tells to check the proxy CA bundle when the https squid is not trusted', async () => {
    await expectDialError(
      dialThroughProxy(new URL(tlsSquid.url), '127.0.0.1', echoPort, { proxyCa: echoCaPem }),
      'TETHER_PROXY_TLS',
      /proxy CA bundle/,
    );
  });

  it('says so when an https:// proxy URL points at a plain squid', async () => {
    const url = new URL(plain.url);
    url.protocol = 'https:';
    await expectDialError(
      dialThroughProxy(url, '127.0.0.1', echoPort),
      'TETHER_PROXY_TLS',
      /does not speak TLS/,
    );
  });

  it('sends Basic credentials from the proxy URL, percent-decoded', async () => {
    const url = new URL(authSquid.url);
    url.username = 'agent';
    url.password = encodeURIComponent(PASSWORD); // the URL setter leaves '%' alone
    const tunnel = await dialThroughProxy(url, '127.0.0.1', echoPort);
    await echoThrough(tunnel, 'hello with credentials');
    expect(await tunnelInLog(authSquid, 'agent')).toContain('TCP_TUNNEL/200');
  });

  it('reports wrong credentials as TETHER_PROXY_AUTH without the password', async () => {
    const url = new URL(authSquid.url);
    url.username = 'agent';
    url.password = encodeURIComponent(`${PASSWORD}x`);
    await expectDialError(
      dialThroughProxy(url, '127.0.0.1', echoPort),
      'TETHER_PROXY_AUTH',
      /rejected the credentials/,
    );
  });

  it('reports missing credentials as TETHER_PROXY_AUTH', async () => {
    const err = await expectDialError(
      dialThroughProxy(new URL(authSquid.url), '127.0.0.1', echoPort),
      'TETHER_PROXY_AUTH',
      /requires authentication/,
    );
    expect(err.message).toContain(authSquid.url);
  });

  it('reports a refused CONNECT with the status code', async () => {
    await expectDialError(
      dialThroughProxy(new URL(plain.url), '127.0.0.1', deniedPort),
      'TETHER_PROXY_REFUSED',
      /403 Forbidden/,
    );
  });

  it('reports a proxy that is not listening as TETHER_PROXY_UNREACHABLE, naming it without credentials', async () => {
    const port = await freePort();
    const url = new URL(`http://127.0.0.1:${port}`);
    url.username = 'agent';
    url.password = encodeURIComponent(PASSWORD);
    const err = await expectDialError(
      dialThroughProxy(url, '127.0.0.1', echoPort),
      'TETHER_PROXY_UNREACHABLE',
      /ECONNREFUSED/,
    );
    expect(err.message).toContain(`http://127.0.0.1:${port}`);
    expect(err.message).not.toContain('agent');
  });

  it('gives up on a proxy that never answers with TETHER_TIMEOUT', async () => {
    silent = createServer((s) => sockets.add(s));
    const port = await listen(silent);
    const started = Date.now();
    await expectDialError(
      dialThroughProxy(new URL(`http://127.0.0.1:${port}`), '127.0.0.1', echoPort, { timeoutMs: 300 }),
      'TETHER_TIMEOUT',
      /300 ms waiting for the CONNECT answer/,
    );
    expect(Date.now() - started).toBeLessThan(5000);

    const abort = new AbortController();
    const dial = dialThroughProxy(new URL(`http://127.0.0.1:${port}`), '127.0.0.1', echoPort, {
      signal: abort.signal,
    });
    abort.abort(new Error('agent shutting down'));
    await expect(dial).rejects.toThrow('agent shutting down');
  });

  it('stops reading a CONNECT answer whose header exceeds the limit', async () => {
    const chatty = createServer((s) => {
      sockets.add(s);
      s.write(`HTTP/1.1 200 Connection established\r\nX-Filler: ${'a'.repeat(64 * 1024)}\r\n\r\n`);
    });
    try {
      const port = await listen(chatty);
      await expectDialError(
        dialThroughProxy(new URL(`http://127.0.0.1:${port}`), '127.0.0.1', echoPort),
        'TETHER_PROTOCOL',
        /response header over 16384 bytes/,
      );
    } finally {
      await closeServer(chatty, sockets);
    }
  });

  it('rejects unusable targets before dialling', () => {
    const proxy = new URL(plain.url);
    expect(() => dialThroughProxy(proxy, 'hub\r\nX-Evil: 1', 443)).toThrow(/cannot CONNECT to host/);
    expect(() => dialThroughProxy(proxy, '127.0.0.1', 70_000)).toThrow(/cannot CONNECT to port/);
    expect(() => dialThroughProxy(new URL('socks5://127.0.0.1:1080'), '127.0.0.1', 443)).toThrow(
      /HTTP CONNECT/,
    );
  });
});

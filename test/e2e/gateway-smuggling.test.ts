// HTTP request smuggling against the gateway, dialed straight on its port with the front proxy's
// client certificate (what the hub aggregator presents, so every request passes authentication
// and the hub admin's SubjectAccessReview): raw bytes whose framing is ambiguous hide a second
// proxied request behind the first, and an Upgrade the managed apiserver refuses hides a request
// that would run on the gateway's own upstream connection (authenticated by its X.509 credential,
// without the caller's impersonation). The managed apiserver is a stand-in that records every
// request it parses; it must never see a hidden one, and an honest request right after is served.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { type RawExchange, type SmugglingAttack, sendRaw, smugglingAttacks } from '../http-smuggling.ts';
import {
  credentialSecret,
  direct,
  frontProxyTls,
  type GatewayFixture,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { startTestUpstream, type TestUpstream } from './fixtures/gateway-upstream.ts';
import { uniqueName } from './fixtures/helpers.ts';

let f: GatewayFixture;
let upstream: TestUpstream;
const cluster = uniqueName('gws');
const proxyPath = (rest: string) =>
  `/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${cluster}/proxy${rest}`;
/** The aggregator's identity headers for the hub admin (front proxy: trusted on this connection). */
const admin = 'X-Remote-User: tether-admin\r\nX-Remote-Group: system:masters\r\n';

beforeAll(async () => {
  upstream = await startTestUpstream({ refuseUpgrades: true });
  f = await startGatewayFixture();
  // A Const endpoint with a client certificate: the upstream connection itself is the gateway.
  const client = await issueCertificate(upstream.clientCa, { commonName: 'gateway-x509', usage: 'client' });
  await credentialSecret(cluster, 'X509Certificate', {
    endpoint: `https://127.0.0.1:${upstream.port}`,
    'ca.crt': upstream.caPem,
    'tls.crt': client.certPem,
    'tls.key': client.keyPem,
  });
  await pollUntil(() => f.gateway.store.get(cluster)?.status.healthy === true, {
    timeoutMs: 30_000,
    description: `ClusterGateway ${cluster} to be healthy`,
  });
});

afterAll(async () => {
  await f?.stop();
  await upstream?.close();
});

/** A proxied GET the attack hides; `tag` marks it in the upstream's record. */
const smuggledGet = (tag: string) =>
  `GET ${proxyPath(`/api/v1/namespaces/kube-system/secrets/smuggled-${tag}`)} HTTP/1.1\r\nHost: gateway\r\n${admin}\r\n`;

/** Requests the upstream parsed whose URL carries `marker`. */
const seenWith = (marker: string) => upstream.seen.filter((r) => r.url.includes(marker)).map((r) => r.url);

/** A smuggling attack on a proxied POST; returns what came back. */
function attack(name: SmugglingAttack): Promise<RawExchange> {
  const head = `POST ${proxyPath('/api/v1/namespaces/x/configmaps')} HTTP/1.1\r\nHost: gateway\r\n${admin}`;
  return sendRaw(frontProxyTls(f), smugglingAttacks[name](head, smuggledGet(name)));
}

/** The attack ended in a 400 and a closed connection, and nothing in it was served. */
function expectRefused(name: string, { statuses, closedByServer }: RawExchange): void {
  expect({ name, statuses, closedByServer }).toEqual({ name, statuses: [400], closedByServer: true });
}

/** No hidden request reached the managed apiserver, and an honest one right after is served. */
async function expectOnlyTheHonestClientReachedTheCluster(tag: string): Promise<void> {
  const honest = await direct(f, proxyPath(`/api/v1/namespaces/x/configmaps/honest-${tag}`), {
    frontProxy: true,
    user: 'tether-admin',
    groups: ['system:masters'],
  });
  expect(honest.status).toBe(200);
  expect(seenWith(`honest-${tag}`)).toHaveLength(1);
  expect(seenWith('smuggled-')).toEqual([]);
}

describe('request smuggling against the gateway', () => {
  it('a hub user cannot smuggle a second request through the gateway with conflicting Content-Length and Transfer-Encoding', async () => {
    expectRefused('contentLengthWithChunked', await attack('contentLengthWithChunked'));
    await expectOnlyTheHonestClientReachedTheCluster('cl-te');
  });

  it('a hub user cannot smuggle a second request through the gateway with two different Content-Length headers', async () => {
    expectRefused('twoContentLengths', await attack('twoContentLengths'));
    await expectOnlyTheHonestClientReachedTheCluster('two-cl');
  });

  it('a hub user cannot smuggle a second request through the gateway with Transfer-Encoding chunked, identity / xchunked / whitespace tricks', async () => {
    for (const name of [
      'chunkedThenIdentity',
      'xchunked',
      'spaceBeforeColon',
      'verticalTabInValue',
    ] as const) {
      const got = await attack(name);
      // xchunked is answered once its head is in (the POST reaches no one: its body is refused).
      expect({ name, last: got.statuses.at(-1), closed: got.closedByServer }).toEqual({
        name,
        last: 400,
        closed: true,
      });
    }
    await expectOnlyTheHonestClientReachedTheCluster('te');
  });

  it('a hub user cannot smuggle a second request through the gateway with obs-fold header lines', async () => {
    for (const name of ['foldedTransferEncoding', 'foldedHeader'] as const)
      expectRefused(name, await attack(name));
    await expectOnlyTheHonestClientReachedTheCluster('obs-fold');
  });

  it('a hub user cannot smuggle a second request through the gateway with bare LF line endings', async () => {
    expectRefused('bareLineFeeds', await attack('bareLineFeeds'));
    await expectOnlyTheHonestClientReachedTheCluster('bare-lf');
  });

  it('a hub user cannot smuggle a second request through the gateway with an overflowing chunk size or a chunk extension ended by a bare LF', async () => {
    for (const name of ['chunkSizeOverflow', 'chunkExtensionBareLineFeed'] as const) {
      const got = await attack(name);
      expect({ name, last: got.statuses.at(-1), closed: got.closedByServer }).toEqual({
        name,
        last: 400,
        closed: true,
      });
    }
    await expectOnlyTheHonestClientReachedTheCluster('chunk-size');
  });

  it('a hub user cannot make the managed apiserver run a request carried in the body of another', async () => {
    const got = await attack('requestInBody');
    expect(got.statuses).toEqual([200]);
    // The upstream got one POST whose body is the hidden request, never that request itself.
    const echoed = JSON.parse(got.raw.slice(got.raw.indexOf('\r\n\r\n') + 4)) as {
      method: string;
      body: string;
    };
    expect(echoed.method).toBe('POST');
    expect(echoed.body).toContain('smuggled-requestInBody');
    await expectOnlyTheHonestClientReachedTheCluster('in-body');
  });

  it("a hub user cannot run a request as the gateway's own credential by pipelining it behind an Upgrade the managed apiserver refuses", async () => {
    // What the managed apiserver would read next on the gateway's connection: no impersonation,
    // so it would run as the gateway's client certificate itself.
    const hidden =
      'GET /api/v1/namespaces/kube-system/secrets/smuggled-behind-upgrade HTTP/1.1\r\nHost: upstream\r\n\r\n';
    const got = await sendRaw(
      frontProxyTls(f),
      `POST ${proxyPath('/api/v1/namespaces/x/pods/p/exec?command=sh')} HTTP/1.1\r\nHost: gateway\r\n${admin}` +
        `Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n${hidden}`,
    );
    // The refusal is relayed and both connections closed; what followed the request went nowhere.
    expect({ statuses: got.statuses, closed: got.closedByServer }).toEqual({ statuses: [403], closed: true });
    const exec = upstream.seen.filter((r) => r.url.includes('/pods/p/exec'));
    expect(exec.map((r) => r.headers['impersonate-user'])).toEqual([['cluster:hub:tether-admin']]);
    await expectOnlyTheHonestClientReachedTheCluster('upgrade');
  });

  it('a hub user cannot pass a chunked body under an Upgrade request to the managed apiserver', async () => {
    const body = smuggledGet('chunked-upgrade');
    const got = await sendRaw(
      frontProxyTls(f),
      `POST ${proxyPath('/api/v1/namespaces/x/pods/chunked-upgrade/exec?command=sh')} HTTP/1.1\r\nHost: gateway\r\n${admin}` +
        `Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    );
    expect({ statuses: got.statuses, closed: got.closedByServer }).toEqual({ statuses: [400], closed: true });
    expect(got.raw).toContain('an Upgrade request carries no body');
    expect(seenWith('chunked-upgrade')).toEqual([]);
    await expectOnlyTheHonestClientReachedTheCluster('chunked-upgrade');
  });
});

describe('the gateway listener in a process of its own', () => {
  it('a hub user cannot smuggle a second request through the gateway even when it runs with NODE_OPTIONS=--insecure-http-parser', async () => {
    // The process-wide flag makes every Node HTTP server lenient unless the server says otherwise.
    const dir = mkdtempSync(join(tmpdir(), 'tether-gw-listener-'));
    const ca = await createCertificateAuthority('gateway-listener-test-ca');
    const serving = await issueCertificate(ca, {
      commonName: 'localhost',
      usage: 'server',
      dnsNames: ['localhost'],
    });
    writeFileSync(join(dir, 'tls.crt'), serving.certPem);
    writeFileSync(join(dir, 'tls.key'), serving.keyPem);
    writeFileSync(join(dir, 'ca.crt'), ca.certPem);
    const child = spawn(process.execPath, ['test/gateway/listener-process.ts', dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_OPTIONS: '--insecure-http-parser' },
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    try {
      const port = await pollUntil(() => Number(/^port (\d+)$/m.exec(out)?.[1]) || undefined, {
        timeoutMs: 15_000,
        description: `the gateway listener to listen (output: ${out})`,
      });
      const tls = { host: '127.0.0.1', port, ca: ca.certPem };
      const head = 'POST /apis/x HTTP/1.1\r\nHost: gateway\r\n';
      const hidden = 'GET /smuggled HTTP/1.1\r\nHost: gateway\r\n\r\n';
      for (const name of ['contentLengthWithChunked', 'foldedHeader', 'bareLineFeeds'] as const) {
        expectRefused(name, await sendRaw(tls, smugglingAttacks[name](head, hidden)));
      }
      const honest = await sendRaw(tls, 'GET /honest HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\r\n');
      expect(honest.statuses).toEqual([200]);
      expect(out.match(/^request .*$/gm)).toEqual(['request GET /honest']);
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

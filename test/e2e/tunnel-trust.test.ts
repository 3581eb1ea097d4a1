// Trust boundaries of the tunnel on a real hub (issue 10, findings 3 and 6): who may use the CONNECT
// frontend, and which clusters may hold tunnels. Most tests run their own `tether proxy-server`
// process against the shared hub (so they can add clusters, certificates and RBAC of their own);
// the first one attacks the proxy-server `tether up` runs, exactly as the finding was reported.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ManagedCluster, managedClusterResource } from '../../src/api/index.ts';
import { ResourceClient } from '../../src/kube/index.ts';
import { freePort, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { waitReady } from '../../src/localenv/ready.ts';
import { grantManagedClusterProxy } from '../../src/localenv/tunnel-stack.ts';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  issueCertificate,
  type KeyPairPem,
  loadCertificateAuthority,
} from '../../src/pki/index.ts';
import { agentSubject } from '../../src/tunnel/identity.ts';
import { pollUntil } from '../../src/wait.ts';
import { echoServer, roundTrip } from '../integration/tunnel-fixtures.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';

const env = testEnv();
const hubKc = adminKubeConfig(env.hub);
const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
const dir = mkdtempSync(join(tmpdir(), 'tether-tunnel-trust-'));
const processes: SupervisedProcess[] = [];
const cleanups: Array<() => Promise<unknown>> = [];
const trustedUser = uniqueName('trusted-svc');
const role = uniqueName('tunnel-trust-proxy');

let hubCa: CertificateAuthority;
let proxyClientCa: CertificateAuthority;
let echo: { port: number; close: () => Promise<void> };
let trusted: KeyPairPem;
/** our own proxy-server process, against the shared hub */
const own = { agentPort: 0, connectPort: 0, log: '' };

function write(name: string, content: string): string {
  const p = join(dir, name);
  writeFileSync(p, content, { mode: 0o600 });
  return p;
}

beforeAll(async () => {
  hubCa = await loadCertificateAuthority(
    readFileSync(env.hub.caCertPath, 'utf8'),
    readFileSync(env.hub.caKeyPath, 'utf8'),
  );
  proxyClientCa = await createCertificateAuthority('tunnel-trust-proxy-client-ca');
  trusted = await issueCertificate(proxyClientCa, { commonName: trustedUser, usage: 'client' });
  echo = await echoServer();
  const serving = await issueCertificate(hubCa, {
    commonName: 'tunnel-trust-proxy-server',
    usage: 'server',
    ipAddresses: ['127.0.0.1'],
  });
  await grantManagedClusterProxy(hubKc, trustedUser, role);
  cleanups.push(async () => {
    const rbac = hubKc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.deleteClusterRoleBinding({ name: role }).catch(() => {});
    await rbac.deleteClusterRole({ name: role }).catch(() => {});
  });
  const [agentPort, connectPort, ops] = await Promise.all([freePort(), freePort(), freePort()]);
  own.agentPort = agentPort;
  own.connectPort = connectPort;
  own.log = join(dir, 'proxy-server.log');
  const server = new SupervisedProcess({
    name: 'tunnel-trust/proxy-server',
    command: process.execPath,
    logFile: own.log,
    // Its log says which agents it refused (child processes of vitest are silent by default).
    env: { ...process.env, TETHER_LOG_LEVEL: 'info' },
    args: [
      tetherBin,
      'proxy-server',
      '--server-id=tunnel-trust',
      '--bind-address=127.0.0.1',
      `--agent-port=${agentPort}`,
      `--connect-port=${connectPort}`,
      `--ops-port=${ops}`,
      `--tls-cert-file=${write('server.crt', serving.certPem)}`,
      `--tls-key-file=${write('server.key', serving.keyPem)}`,
      `--agent-ca-file=${write('hub-ca.crt', hubCa.certPem)}`,
      `--proxy-client-ca-file=${write('proxy-client-ca.crt', proxyClientCa.certPem)}`,
      `--hub-kubeconfig=${env.hub.kubeconfigPath}`,
    ],
  });
  processes.push(server);
  await waitReady(server, ops, 30_000);
});

afterAll(async () => {
  await Promise.all(processes.splice(0).map((p) => p.stop(3000)));
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  await echo?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A ManagedCluster the hub admin accepted (removed after the file). */
async function acceptedCluster(prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  await clusters.create({ metadata: { name }, spec: { hubAcceptsClient: true } });
  cleanups.push(() => clusters.delete(name, undefined, { ignoreNotFound: true }));
  return name;
}

/** A real `tether proxy-agent` for `cluster` (certificate from the hub CA) serving the echo target. */
async function startAgent(
  cluster: string,
  proxyServer: string,
): Promise<{ proc: SupervisedProcess; ops: number }> {
  const cert = await issueCertificate(hubCa, { ...agentSubject(cluster, 'proxy-agent'), usage: 'client' });
  const ops = await freePort();
  const proc = new SupervisedProcess({
    name: `${cluster}/proxy-agent`,
    command: process.execPath,
    logFile: join(dir, `${cluster}-agent.log`),
    args: [
      tetherBin,
      'proxy-agent',
      `--cluster-name=${cluster}`,
      '--agent-id=proxy-agent',
      `--proxy-server=${proxyServer}`,
      `--cert-file=${write(`${cluster}.crt`, cert.certPem)}`,
      `--key-file=${write(`${cluster}.key`, cert.keyPem)}`,
      `--hub-ca-file=${env.hub.caCertPath}`,
      `--kube-apiserver=127.0.0.1:${echo.port}`,
      `--ops-port=${ops}`,
    ],
  });
  processes.push(proc);
  return { proc, ops };
}

async function agentReady(ops: number): Promise<boolean> {
  const res = await fetch(`http://127.0.0.1:${ops}/readyz`);
  await res.text();
  return res.status === 200;
}

/** CONNECT `authority` on a frontend; resolves with the status, the head and (on 200) the open socket. */
function connectVia(
  frontendPort: number,
  authority: string,
  cert: KeyPairPem | undefined,
): Promise<{ status: number; head: string; socket: TLSSocket }> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port: frontendPort,
      ca: readFileSync(env.hub.caCertPath),
      ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
    });
    socket.once('error', reject);
    socket.once('secureConnect', () =>
      socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`),
    );
    let buf = '';
    const onData = (d: Buffer): void => {
      buf += d.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end >= 0) {
        socket.off('data', onData);
        socket.off('error', reject);
        socket.on('error', () => {});
        resolve({ status: Number(buf.slice(9, 12)), head: buf.slice(0, end), socket });
      }
    };
    socket.on('data', onData);
  });
}

async function statusOf(
  frontendPort: number,
  authority: string,
  cert: KeyPairPem | undefined,
): Promise<number> {
  const r = await connectVia(frontendPort, authority, cert);
  r.socket.destroy();
  return r.status;
}

/** How many times our proxy-server refused an agent of `cluster` so far. */
function refusals(cluster: string): number {
  return readFileSync(own.log, 'utf8')
    .split('\n')
    .filter((l) => l.includes('rejected tunnel connection') && l.includes(`"cluster":"${cluster}"`)).length;
}

describe('CONNECT frontend trust (finding 3)', () => {
  it("cluster1's agent certificate cannot CONNECT to cluster2 (or anywhere) on the frontend", async () => {
    // The proxy-server `tether up` runs, with a second cluster's agent connected to it.
    const frontendPort = Number(new URL(env.tunnel.connectFrontendUrl).port);
    const cluster2 = await acceptedCluster('trust-c2');
    const a = await startAgent(cluster2, env.tunnel.proxyServerAddress);
    await pollUntil(() => agentReady(a.ops), {
      timeoutMs: 30_000,
      description: `${cluster2}'s agent connected`,
    });
    const hubService = {
      certPem: readFileSync(env.tunnel.proxyClientCertPath, 'utf8'),
      keyPem: readFileSync(env.tunnel.proxyClientKeyPath, 'utf8'),
    };
    // The route exists: the hub service's own certificate gets through.
    expect(await statusOf(frontendPort, `${cluster2}:443`, hubService)).toBe(200);
    // cluster1's agent certificate, as the hub CA signed it.
    const cluster1Agent = await issueCertificate(hubCa, {
      ...agentSubject('cluster1', 'agent'),
      usage: 'client',
    });
    for (const target of [`${cluster2}:443`, 'cluster1:443']) {
      const r = await connectVia(frontendPort, target, cluster1Agent);
      r.socket.destroy();
      expect({ target, status: r.status }).toEqual({ target, status: 407 });
    }
    // Even a client CA that would verify an agent identity does not make it a hub service.
    const misissued = await issueCertificate(proxyClientCa, {
      ...agentSubject('cluster1', 'agent'),
      usage: 'client',
    });
    const ownCluster = await acceptedCluster('trust-own');
    const b = await startAgent(ownCluster, `127.0.0.1:${own.agentPort}`);
    await pollUntil(() => agentReady(b.ops), {
      timeoutMs: 30_000,
      description: `${ownCluster}'s agent connected`,
    });
    const refused = await connectVia(own.connectPort, `${ownCluster}:443`, misissued);
    refused.socket.destroy();
    expect(refused.status).toBe(403);
    expect(refused.head).toContain('managed-cluster identity');
  });

  it('a certificate caller without managedclusters/proxy on the hub is refused', async () => {
    const cluster = await acceptedCluster('trust-sar');
    const a = await startAgent(cluster, `127.0.0.1:${own.agentPort}`);
    await pollUntil(() => agentReady(a.ops), {
      timeoutMs: 30_000,
      description: `${cluster}'s agent connected`,
    });
    const stranger = await issueCertificate(proxyClientCa, {
      commonName: uniqueName('no-rbac-svc'),
      organizations: ['some-team'],
      usage: 'client',
    });
    const refused = await connectVia(own.connectPort, `${cluster}:443`, stranger);
    refused.socket.destroy();
    expect(refused.status).toBe(403);
    expect(refused.head).toContain('may not get managedclusters/proxy');
    // The same frontend lets the caller hub RBAC allows through, bytes and all.
    const allowed = await connectVia(own.connectPort, `${cluster}:443`, trusted);
    expect(allowed.status).toBe(200);
    expect((await roundTrip(allowed.socket, Buffer.from('allowed'))).bytes).toBe(7);
  });
});

describe('revocation (finding 6)', () => {
  interface Connected {
    name: string;
    ops: number;
    tunnel: TLSSocket;
    closed: () => boolean;
  }

  async function connectedCluster(prefix: string): Promise<Connected> {
    const name = await acceptedCluster(prefix);
    const a = await startAgent(name, `127.0.0.1:${own.agentPort}`);
    await pollUntil(() => agentReady(a.ops), { timeoutMs: 30_000, description: `${name}'s agent connected` });
    const r = await connectVia(own.connectPort, `${name}:443`, trusted);
    expect(r.status).toBe(200);
    // Bytes flow, and the tunnel stays open (no half-close: only the hub's decision may end it).
    const echoed = new Promise<string>((resolve) =>
      r.socket.once('data', (d: Buffer) => resolve(d.toString())),
    );
    r.socket.write('before');
    expect(await echoed).toBe('before');
    let closed = false;
    r.socket.once('close', () => {
      closed = true;
    });
    return { name, ops: a.ops, tunnel: r.socket, closed: () => closed };
  }

  async function expectCutAndLockedOut(c: Connected, revokedAt: number) {
    try {
      await pollUntil(c.closed, {
        timeoutMs: 10_000,
        intervalMs: 20,
        description: `${c.name}'s tunnel to close`,
      });
    } finally {
      c.tunnel.destroy();
    }
    const cutAfterMs = Date.now() - revokedAt;
    console.log(`${c.name}: tunnel closed ${cutAfterMs} ms after the hub change`);
    expect(cutAfterMs).toBeLessThan(5000);
    // The agent keeps trying (backoff) and keeps being refused.
    const before = refusals(c.name);
    await pollUntil(() => refusals(c.name) >= before + 2, {
      timeoutMs: 30_000,
      description: `${c.name}'s agent to be refused twice more`,
    });
    expect(await agentReady(c.ops)).toBe(false);
    expect(await statusOf(own.connectPort, `${c.name}:443`, trusted)).toBe(503);
    return cutAfterMs;
  }

  it('a denied cluster loses its tunnels within seconds and cannot reconnect', async () => {
    const c = await connectedCluster('trust-deny');
    const revokedAt = Date.now();
    await clusters.patchMerge(c.name, { spec: { hubAcceptsClient: false } });
    await expectCutAndLockedOut(c, revokedAt);
  });

  it('a deleted cluster loses its tunnels within seconds and cannot reconnect', async () => {
    const c = await connectedCluster('trust-delete');
    const revokedAt = Date.now();
    await clusters.delete(c.name);
    await expectCutAndLockedOut(c, revokedAt);
  });

  it('an agent whose cluster has no ManagedCluster on the hub is refused at connect', async () => {
    const name = uniqueName('trust-unknown');
    const a = await startAgent(name, `127.0.0.1:${own.agentPort}`);
    await pollUntil(() => refusals(name) >= 1, { timeoutMs: 30_000, description: `${name}'s agent refused` });
    expect(await agentReady(a.ops)).toBe(false);
    expect(await statusOf(own.connectPort, `${name}:443`, trusted)).toBe(503);
  });
});

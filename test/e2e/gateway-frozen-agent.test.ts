// kubectl through the gateway to a cluster whose agent is frozen (SIGSTOP): the answer is a
// Kubernetes Status naming the cluster within seconds, for a request on the gateway's pooled
// connection as for a new one, instead of hanging until the tunnel keepalive drops the session
// (about 30 s) or the gateway's 60 s headers timeout (issue 11 item 7). After SIGCONT requests
// pass again. A real `tether proxy-agent` process serves the cluster through the gateway fixture's
// proxy-server (default keepalive and --unresponsive-after).
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createCertificateAuthority,
  issueCertificate,
  loadCertificateAuthority,
} from '../../src/pki/index.ts';
import { agentSubject } from '../../src/tunnel/identity.ts';
import { pollUntil } from '../../src/wait.ts';
import type { HubPki } from '../integration/tunnel-fixtures.ts';
import { TunnelProcesses } from '../integration/tunnel-process-fixtures.ts';
import {
  cluster1GatewayToken,
  cluster1Target,
  env,
  type GatewayFixture,
  hubAdminTls,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { uniqueName } from './fixtures/helpers.ts';

/** --unresponsive-after (5 s) + a PING within 1 s of the request + slack for the aggregator hop */
const FROZEN_ANSWER_BOUND_MS = 5000 + 1000 + 3000;

let f: GatewayFixture;
let procs: TunnelProcesses;
const cluster = uniqueName('gw-frozen');
const tls = hubAdminTls();
const proxyPath = (rest: string) =>
  `/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${cluster}/proxy${rest}`;

/** GET through the hub's aggregator; resolves with status, body and elapsed milliseconds. */
function viaHub(path: string): Promise<{ status: number; body: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = request(
      { host: tls.host, port: tls.port, path, ca: tls.ca, cert: tls.cert, key: tls.key },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => {
          body += d.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, ms: Date.now() - started }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The hub CA as the tunnel process fixtures want it (agents' certificates come from it). */
async function hubCaPki(): Promise<HubPki> {
  const ca = await loadCertificateAuthority(
    readFileSync(env.hub.caCertPath, 'utf8'),
    readFileSync(env.hub.caKeyPath, 'utf8'),
  );
  const proxyClientCa = await createCertificateAuthority('gw-frozen-proxy-client-ca');
  return {
    ca,
    server: await issueCertificate(ca, { commonName: 'unused', usage: 'server', ipAddresses: ['127.0.0.1'] }),
    agentCert: (c, agent) => issueCertificate(ca, { ...agentSubject(c, agent), usage: 'client' }),
    proxyClientCa,
    proxyClientCert: (cn, o) =>
      issueCertificate(proxyClientCa, { commonName: cn, organizations: o, usage: 'client' }),
  };
}

beforeAll(async () => {
  f = await startGatewayFixture();
  procs = await TunnelProcesses.create(await hubCaPki());
  await f.addCluster({ name: cluster, ...cluster1Target() }, await cluster1GatewayToken(cluster));
  // The fixture's in-process agent cannot be frozen: a process takes its place.
  await f.stopAgent(cluster);
  const { apiserver } = cluster1Target();
  const agent = await procs.startAgent({
    cluster,
    agent: 'frozen-agent',
    server: `127.0.0.1:${f.server.port}`,
    targetPort: apiserver.port,
  });
  frozenPid = agent.proc.child.pid ?? 0;
  await f.server.waitForAgents(cluster, 1, 30_000);
});

let frozenPid = 0;

afterAll(async () => {
  await procs?.cleanup();
  await f?.stop();
});

describe('gateway to a frozen agent', () => {
  it('answers with a Status naming the cluster within seconds, on the pooled connection and on a new one; passes again after SIGCONT', async () => {
    await pollUntil(async () => (await viaHub(proxyPath('/version'))).status === 200, {
      timeoutMs: 20_000,
      description: 'requests to pass through the agent process',
    });
    process.kill(frozenPid, 'SIGSTOP');
    try {
      const pooled = await viaHub(proxyPath('/version'));
      const fresh = await viaHub(proxyPath('/version'));
      console.log(
        `gateway, agent frozen: ${pooled.status} after ${pooled.ms} ms, then ${fresh.status} after ${fresh.ms} ms; first: ${pooled.body}`,
      );
      for (const r of [pooled, fresh]) {
        expect(r.status).toBeGreaterThanOrEqual(500);
        const status = JSON.parse(r.body) as { kind: string; message: string };
        expect(status.kind).toBe('Status');
        expect(status.message).toContain(`cluster ${cluster}`);
      }
      expect(pooled.ms).toBeLessThanOrEqual(FROZEN_ANSWER_BOUND_MS);
      expect(fresh.ms).toBeLessThanOrEqual(2000);
      expect(JSON.parse(fresh.body)).toMatchObject({ code: 503, reason: 'ServiceUnavailable' });
      expect(JSON.parse(fresh.body).message).toContain('has not answered');
    } finally {
      process.kill(frozenPid, 'SIGCONT');
    }
    const back = await pollUntil(
      async () => {
        const r = await viaHub(proxyPath('/version'));
        return r.status === 200 ? r : undefined;
      },
      { timeoutMs: 20_000, description: 'requests to pass again after SIGCONT' },
    );
    expect(JSON.parse(back.body).gitVersion).toMatch(/^v1\./);
  });
});

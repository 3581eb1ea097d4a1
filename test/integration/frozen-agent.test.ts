// Requests to a cluster whose agent is frozen (SIGSTOP) or cut off without a close fail within
// seconds with a coded error that names the cluster, instead of each waiting for the dial timeout
// until the keepalive finally drops the session (issue 11 item 7). Real `tether proxy-server` and
// `tether proxy-agent` processes with the default keepalive (PING every 10 s, dropped after 20 s
// more) and the default --unresponsive-after (5 s).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isTetherError } from '../../src/errors.ts';
import { connectFrontendDialer } from '../../src/gateway/dialers.ts';
import { statusForUpstreamError } from '../../src/gateway/status.ts';
import { pollUntil } from '../../src/wait.ts';
import { echoServer, roundTrip } from './tunnel-fixtures.ts';
import { type ConnectAnswer, TunnelProcesses } from './tunnel-process-fixtures.ts';

/** The default --unresponsive-after (defaultTunnelLimits.unresponsiveAfterMs). */
const UNRESPONSIVE_AFTER_MS = 5000;
/** The first request after the agent goes quiet: the unresponsive window plus scheduling slack. */
const FIRST_FAILURE_BOUND_MS = UNRESPONSIVE_AFTER_MS + 2000;
/** A request on an open tunnel: a PING goes along within 1 s of the write, then the same window. */
const IN_FLIGHT_BOUND_MS = UNRESPONSIVE_AFTER_MS + 1000 + 2000;
/** Once the session is known unresponsive, a request fails without waiting on the agent. */
const KNOWN_FAILURE_BOUND_MS = 1000;
/** from the redialled agent's readiness to a served request: far under the 30 s keepalive drop */
const RECONNECTED_BOUND_MS = 5000;

let procs: TunnelProcesses;
let echo: { port: number; close: () => Promise<void> };

beforeEach(async () => {
  procs = await TunnelProcesses.create();
  echo = await echoServer();
});
afterEach(async () => {
  await procs.cleanup();
  await echo.close();
});

function expectUnresponsive(r: ConnectAnswer, boundMs: number): void {
  r.socket.destroy();
  expect({ status: r.status, code: r.code }, r.reason).toEqual({
    status: 504,
    code: 'TETHER_AGENT_UNRESPONSIVE',
  });
  expect(r.reason).toContain('of cluster cluster1 has not answered');
  expect(r.ms, `failed after ${r.ms} ms`).toBeLessThanOrEqual(boundMs);
}

async function expectServed(port: number, message: string): Promise<ConnectAnswer> {
  const r = await procs.connect(port, 'cluster1:443');
  expect(r.status, r.reason).toBe(200);
  expect((await roundTrip(r.socket, Buffer.from(message))).bytes).toBe(message.length);
  return r;
}

/** Polls CONNECT until one is served; resolves with how long that took. */
async function servedAgainWithin(port: number, timeoutMs: number, what: string): Promise<number> {
  const since = Date.now();
  await pollUntil(
    async () => {
      const r = await procs.connect(port, 'cluster1:443', 15_000);
      if (r.status !== 200) {
        r.socket.destroy();
        return false;
      }
      return (await roundTrip(r.socket, Buffer.from('back'))).bytes === 4;
    },
    { timeoutMs, intervalMs: 200, description: what },
  );
  return Date.now() - since;
}

describe('frozen or cut-off agent', () => {
  it('fails requests to a SIGSTOPped agent within the unresponsive window, naming the cluster, and serves again after SIGCONT', async () => {
    const { ports } = await procs.startServer();
    const agent = await procs.startAgent({
      cluster: 'cluster1',
      agent: 'agent-a',
      server: `127.0.0.1:${ports.agent}`,
      targetPort: echo.port,
    });
    await procs.ready(agent.opsPort);
    await procs.agentHeld(ports.ops, 'cluster1');
    await expectServed(ports.connect, 'before');

    agent.proc.child.kill('SIGSTOP');
    let firstMs = 0;
    try {
      const first = await procs.connect(ports.connect, 'cluster1:443');
      firstMs = first.ms;
      expectUnresponsive(first, FIRST_FAILURE_BOUND_MS);
      const second = await procs.connect(ports.connect, 'cluster1:443');
      expectUnresponsive(second, KNOWN_FAILURE_BOUND_MS);

      // A gateway apart from the proxy-server dials through the frontend and answers kubectl with
      // a Kubernetes Status that names the cluster.
      const dial = connectFrontendDialer({
        url: `https://127.0.0.1:${ports.connect}`,
        caPem: procs.pki.ca.certPem,
        ...(await procs.pki.proxyClientCert('gateway')),
      });
      const started = Date.now();
      const err = await dial('cluster1', 'kube-apiserver:443').then(
        (s) => {
          s.destroy();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(Date.now() - started).toBeLessThanOrEqual(KNOWN_FAILURE_BOUND_MS);
      expect(isTetherError(err, 'TETHER_AGENT_UNRESPONSIVE'), String(err)).toBe(true);
      const status = statusForUpstreamError(err, 'cluster1');
      expect(status.message).toContain('cluster cluster1');
      expect(status.message).toContain('has not answered');
    } finally {
      agent.proc.child.kill('SIGCONT');
    }
    const ms = await servedAgainWithin(ports.connect, 15_000, 'the thawed agent to serve again');
    console.log(`SIGSTOP: first request failed after ${firstMs} ms; served again ${ms} ms after SIGCONT`);
  });

  it('closes a tunnel that is waiting on a SIGSTOPped agent within the unresponsive window', async () => {
    const { ports } = await procs.startServer();
    const agent = await procs.startAgent({
      cluster: 'cluster1',
      agent: 'agent-a',
      server: `127.0.0.1:${ports.agent}`,
      targetPort: echo.port,
    });
    await procs.ready(agent.opsPort);
    await procs.agentHeld(ports.ops, 'cluster1');
    // An open tunnel, as a gateway's pooled connection: it worked, then the agent freezes under it.
    const open = await procs.connect(ports.connect, 'cluster1:443');
    expect(open.status, open.reason).toBe(200);
    open.socket.on('error', () => {});
    const echoed = new Promise<void>((resolve) => open.socket.once('data', () => resolve()));
    open.socket.write('pooled');
    await echoed;
    expect(open.socket.destroyed).toBe(false);
    agent.proc.child.kill('SIGSTOP');
    try {
      const sentAt = Date.now();
      open.socket.write('a request that will get no answer');
      const closedAfter = await new Promise<number | undefined>((resolve) => {
        const t = setTimeout(() => resolve(undefined), 15_000);
        open.socket.once('close', () => {
          clearTimeout(t);
          resolve(Date.now() - sentAt);
        });
      });
      console.log(`SIGSTOP under an open tunnel: closed after ${closedAfter} ms`);
      expect(closedAfter, 'the tunnel should be closed, not left hanging').toBeDefined();
      expect(closedAfter).toBeLessThanOrEqual(IN_FLIGHT_BOUND_MS);
    } finally {
      agent.proc.child.kill('SIGCONT');
    }
    await servedAgainWithin(ports.connect, 15_000, 'the thawed agent to serve again');
  });

  it('fails requests over a black-holed link within the unresponsive window, and uses the reconnected session as soon as the link is back', async () => {
    const { ports } = await procs.startServer();
    const relay = await procs.relay(ports.agent);
    const agent = await procs.startAgent({
      cluster: 'cluster1',
      agent: 'agent-a',
      server: `127.0.0.1:${relay.port}`,
      targetPort: echo.port,
      // the agent notices the cut quickly and redials; the hub keeps its default keepalive
      extra: ['--ping-interval=500', '--ping-timeout=1500'],
    });
    await procs.ready(agent.opsPort);
    await procs.agentHeld(ports.ops, 'cluster1');
    await expectServed(ports.connect, 'before');

    relay.cut();
    const first = await procs.connect(ports.connect, 'cluster1:443');
    expectUnresponsive(first, FIRST_FAILURE_BOUND_MS);
    const second = await procs.connect(ports.connect, 'cluster1:443');
    expectUnresponsive(second, KNOWN_FAILURE_BOUND_MS);
    console.log(`black-holed link: requests failed after ${first.ms} and ${second.ms} ms`);

    relay.restore();
    // The agent redials through the relay; the hub's old session (silent, not yet dropped by the
    // 30 s keepalive) must not capture the requests. The agent is ready once its end of the new
    // session is up; the hub takes the session a moment later, when the agent's hello arrives (on
    // a loaded machine, after the first request may already have come): served within the bound.
    await procs.ready(agent.opsPort, 20_000);
    const servedAfter = await servedAgainWithin(
      ports.connect,
      RECONNECTED_BOUND_MS,
      'served on the new session',
    );
    console.log(`black-holed link restored: served again ${servedAfter} ms after the agent was ready`);
  });

  it('routes around a frozen agent when the cluster has another one', async () => {
    const { ports } = await procs.startServer();
    const agents = [];
    for (const name of ['agent-a', 'agent-b']) {
      const a = await procs.startAgent({
        cluster: 'cluster1',
        agent: name,
        server: `127.0.0.1:${ports.agent}`,
        targetPort: echo.port,
      });
      await procs.ready(a.opsPort);
      agents.push(a);
    }
    await expectServed(ports.connect, 'both up');

    agents[0]?.proc.child.kill('SIGSTOP');
    const times: number[] = [];
    for (let i = 0; i < 6; i++) times.push((await expectServed(ports.connect, `request ${i}`)).ms);
    console.log(`one of two agents SIGSTOPped: requests served after ${times.join(', ')} ms`);
    // At most the first waits for the silence to show; every later one goes straight to agent-b.
    expect(times[0], `times ${times.join(', ')} ms`).toBeLessThanOrEqual(FIRST_FAILURE_BOUND_MS);
    for (const t of times.slice(1))
      expect(t, `times ${times.join(', ')} ms`).toBeLessThanOrEqual(KNOWN_FAILURE_BOUND_MS);
  });
});

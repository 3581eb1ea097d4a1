import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors.ts';
import {
  acquireServerHealth,
  ServerHealth,
  type ServerHealthOptions,
  sharedServerHealthCount,
} from '../../src/kube/server-health.ts';
import { pollUntil } from '../../src/wait.ts';

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function health(options: Partial<ServerHealthOptions>): ServerHealth {
  const h = new ServerHealth({ probe: null, ...options });
  h.retain();
  cleanups.push(() => h.release());
  return h;
}

function kubeconfig(server: string, proxyUrl?: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, proxyUrl }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

describe('ServerHealth', () => {
  it('probes while unreachable and wakes a client in a long backoff as soon as a probe answers', async () => {
    let probes = 0;
    const h = health({
      backoffBaseMs: 20_000,
      backoffMaxMs: 20_000,
      probeIntervalMs: 20,
      probeMaxIntervalMs: 40,
      minRetryMs: 0,
      probe: async () => ++probes >= 3,
    });
    const ticket = h.reportFailure(refused);
    expect(ticket?.delayMs).toBeGreaterThanOrEqual(16_000);
    expect(h.reachable).toBe(false);
    const started = performance.now();
    const wake = await h.waitForRetry(
      ticket ?? { delayMs: 0, failedAt: 0, generation: 0 },
      new AbortController().signal,
    );
    expect(wake).toBe('recovered');
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(probes).toBe(3);
    expect(h.reachable).toBe(true);
    expect(h.failedRounds).toBe(0);
    // No more probes once the server answered.
    await new Promise((r) => setTimeout(r, 150));
    expect(probes).toBe(3);
  });

  it("wakes every waiting client on another client's success, with probing off", async () => {
    const h = health({ backoffBaseMs: 20_000, backoffMaxMs: 20_000, minRetryMs: 0 });
    const signal = new AbortController().signal;
    const waits = [h.reportFailure(refused), h.reportFailure(refused)].map((t) => {
      if (!t) throw new Error('a refused connection must give a ticket');
      return h.waitForRetry(t, signal);
    });
    setTimeout(() => h.reportSuccess(), 30);
    const started = performance.now();
    expect(await Promise.all(waits)).toEqual(['recovered', 'recovered']);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('wakes at once a client whose server came back between its failure and its wait', async () => {
    const h = health({ backoffBaseMs: 20_000, backoffMaxMs: 20_000, minRetryMs: 0 });
    const ticket = h.reportFailure(refused);
    h.reportSuccess();
    if (!ticket) throw new Error('no ticket');
    const started = performance.now();
    expect(await h.waitForRetry(ticket, new AbortController().signal)).toBe('recovered');
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('still waits minRetryMs after the failure when woken, so a failing client cannot spin', async () => {
    const h = health({ backoffBaseMs: 20_000, backoffMaxMs: 20_000, minRetryMs: 300 });
    const ticket = h.reportFailure(refused);
    if (!ticket) throw new Error('no ticket');
    h.reportSuccess();
    const started = performance.now();
    expect(await h.waitForRetry(ticket, new AbortController().signal)).toBe('recovered');
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
  });

  it('leaves errors the server answered to the client: no ticket, still reachable, no probe', async () => {
    let probes = 0;
    const h = health({
      probeIntervalMs: 10,
      probe: async () => {
        probes++;
        return true;
      },
    });
    expect(h.reportFailure(new ApiError(403, 'Forbidden', 'no'))).toBeUndefined();
    expect(h.reportFailure(new ApiError(503, 'ServiceUnavailable', 'aggregated API down'))).toBeUndefined();
    expect(h.reachable).toBe(true);
    await new Promise((r) => setTimeout(r, 60));
    expect(probes).toBe(0);
  });

  it('takes an error the server answered (4xx) as proof it is reachable, but not a 5xx', () => {
    const h = health({});
    h.reportFailure(refused);
    h.reportFailure(new ApiError(503, 'ServiceUnavailable', 'a proxy answering for it'));
    expect(h.reachable).toBe(false);
    h.reportFailure(new ApiError(404, 'NotFound', 'no such object'));
    expect(h.reachable).toBe(true);
  });

  it('caps the wait at the ticket delay, and at maxDelayMs', async () => {
    const h = health({ backoffBaseMs: 50, backoffMaxMs: 50 });
    const ticket = h.reportFailure(refused);
    if (!ticket) throw new Error('no ticket');
    expect(await h.waitForRetry(ticket, new AbortController().signal)).toBe('elapsed');
    const long = health({ backoffBaseMs: 20_000, backoffMaxMs: 20_000 });
    const longTicket = long.reportFailure(refused);
    if (!longTicket) throw new Error('no ticket');
    const started = performance.now();
    expect(await long.waitForRetry(longTicket, new AbortController().signal, 50)).toBe('elapsed');
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('stops waiting when the signal aborts', async () => {
    const h = health({ backoffBaseMs: 20_000, backoffMaxMs: 20_000 });
    const ticket = h.reportFailure(refused);
    if (!ticket) throw new Error('no ticket');
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    expect(await h.waitForRetry(ticket, controller.signal)).toBe('aborted');
  });

  it('tells recovery listeners when the outage began, and stops probing without holders', async () => {
    let probes = 0;
    const h = new ServerHealth({
      probeIntervalMs: 10,
      probeMaxIntervalMs: 10,
      probe: async () => {
        probes++;
        return false;
      },
    });
    h.retain();
    const seen: number[] = [];
    const stop = h.onRecovered((since) => seen.push(since));
    h.reportFailure(refused);
    const since = h.outageStartedAt;
    await pollUntil(() => probes >= 2, { timeoutMs: 5_000, description: 'two probes', intervalMs: 10 });
    h.release();
    const after = probes;
    await new Promise((r) => setTimeout(r, 100));
    expect(probes - after).toBeLessThanOrEqual(1);
    h.reportSuccess();
    expect(seen).toEqual([since]);
    stop();
  });
});

describe('acquireServerHealth', () => {
  it('shares one state per server and forward proxy, and forgets it when the last holder releases', () => {
    const before = sharedServerHealthCount();
    const a = acquireServerHealth(kubeconfig('https://hub.example:6443'));
    const b = acquireServerHealth(kubeconfig('https://hub.example:6443'));
    const viaProxy = acquireServerHealth(kubeconfig('https://hub.example:6443', 'http://squid:3128'));
    const other = acquireServerHealth(kubeconfig('https://other.example:6443'));
    expect(b.health).toBe(a.health);
    expect(viaProxy.health).not.toBe(a.health);
    expect(other.health).not.toBe(a.health);
    expect(sharedServerHealthCount()).toBe(before + 3);
    a.release();
    a.release(); // twice is once
    expect(a.health.holderCount).toBe(1);
    for (const h of [b, viaProxy, other]) h.release();
    expect(sharedServerHealthCount()).toBe(before);
  });
});

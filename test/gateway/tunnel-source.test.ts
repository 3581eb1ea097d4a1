// The gateway's tunnel watches shared per cluster: however many viewers watch one cluster's tunnel,
// the proxy-server sees one watch (it counts the gateway as one caller with a few), opened by the
// first viewer and closed after the last; a failure reaches every viewer.
import { describe, expect, it } from 'vitest';
import {
  sharedTunnelWatches,
  type TunnelStatus,
  TunnelStatusError,
  type TunnelStatusSource,
} from '../../src/gateway/tunnel-source.ts';
import { pollUntil } from '../../src/wait.ts';

const status = (n: number): TunnelStatus => ({
  cluster: 'c1',
  serverId: 's',
  serverCount: 1,
  agents: [],
  openStreams: n,
  streamsOpened: n,
  bytesFromCluster: n,
  bytesToCluster: n,
  time: new Date().toISOString(),
});

/** A source whose watches the test drives: `emit` sends a status to every open upstream watch. */
function fakeSource(fail?: Error) {
  const open = new Set<(s: TunnelStatus) => void>();
  let opened = 0;
  const source: TunnelStatusSource = {
    get: async () => status(0),
    watch: (_cluster, onStatus, signal) => {
      opened++;
      if (fail) return Promise.reject(fail);
      open.add(onStatus);
      return new Promise<void>((resolve) =>
        signal.addEventListener(
          'abort',
          () => {
            open.delete(onStatus);
            resolve();
          },
          { once: true },
        ),
      );
    },
  };
  return {
    source,
    emit: (n: number) => {
      for (const f of [...open]) f(status(n));
    },
    upstream: () => open.size,
    opened: () => opened,
  };
}

describe('shared tunnel watches', () => {
  it('two viewers share one upstream watch; a late viewer gets the last status at once; the last to leave closes it', async () => {
    const fake = fakeSource();
    const shared = sharedTunnelWatches(fake.source);
    const a: number[] = [];
    const b: number[] = [];
    const acA = new AbortController();
    const acB = new AbortController();
    const watchA = shared.watch('c1', (s) => a.push(s.openStreams), acA.signal);
    fake.emit(1);
    const watchB = shared.watch('c1', (s) => b.push(s.openStreams), acB.signal);
    fake.emit(2);
    expect(fake.opened()).toBe(1);
    expect(a).toEqual([1, 2]);
    expect(b).toEqual([1, 2]);
    acA.abort();
    await watchA;
    expect(fake.upstream()).toBe(1);
    acB.abort();
    await watchB;
    await pollUntil(() => fake.upstream() === 0, {
      timeoutMs: 1_000,
      description: 'the upstream watch closed',
    });
    // the next viewer opens a new one
    const acC = new AbortController();
    const watchC = shared.watch('c1', () => {}, acC.signal);
    expect(fake.opened()).toBe(2);
    acC.abort();
    await watchC;
  });

  it('an upstream that cannot start rejects every viewer with its error', async () => {
    const shared = sharedTunnelWatches(fakeSource(new TunnelStatusError(404, 'never seen')).source);
    const ac = new AbortController();
    await expect(shared.watch('c1', () => {}, ac.signal)).rejects.toThrow('never seen');
  });
});

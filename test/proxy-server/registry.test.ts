// Which tunnel session a dial goes to: the least-loaded one whose agent answers PINGs; a silent
// (unresponsive) one only when no other is left, and then the one silent for the shortest time.
import { describe, expect, it } from 'vitest';
import { AgentRegistry } from '../../src/proxy-server/registry.ts';
import type { HubTunnelSession } from '../../src/tunnel/hub-session.ts';

/** The part of a HubTunnelSession the registry reads. */
function session(s: { openStreams?: number; silentMs?: number; closed?: boolean }): HubTunnelSession {
  const silentMs = s.silentMs ?? 0;
  return {
    openStreams: s.openStreams ?? 0,
    isClosed: s.closed ?? false,
    isUnresponsive: silentMs >= 5000,
    silentForMs: () => silentMs,
  } as unknown as HubTunnelSession;
}

function add(r: AgentRegistry, agent: string, s: Parameters<typeof session>[0]) {
  return r.add({
    cluster: 'cluster1',
    agent,
    remoteAddress: '127.0.0.1',
    connectedAt: new Date(),
    session: session(s),
    socket: { bytesRead: 0, bytesWritten: 0 },
  });
}

describe('AgentRegistry.pick', () => {
  it('passes over an unresponsive session, however lightly loaded, while another answers', () => {
    const r = new AgentRegistry();
    add(r, 'frozen', { openStreams: 0, silentMs: 8000 });
    const busy = add(r, 'busy', { openStreams: 50, silentMs: 1000 });
    expect(r.pick('cluster1')?.agent).toBe(busy.agent);
  });

  it('picks the least-loaded answering session', () => {
    const r = new AgentRegistry();
    add(r, 'a', { openStreams: 3 });
    add(r, 'b', { openStreams: 1 });
    add(r, 'closed', { openStreams: 0, closed: true });
    expect(r.pick('cluster1')?.agent).toBe('b');
  });

  it('falls back to the session silent for the shortest time when none answers, and skips excluded ones', () => {
    const r = new AgentRegistry();
    const old = add(r, 'old', { silentMs: 20_000 });
    const recent = add(r, 'recent', { silentMs: 6000 });
    expect(r.pick('cluster1')?.agent).toBe('recent');
    expect(r.pick('cluster1', new Set([recent]))?.agent).toBe(old.agent);
    expect(r.pick('cluster1', new Set([recent, old]))).toBeUndefined();
    expect(r.pick('cluster2')).toBeUndefined();
  });
});

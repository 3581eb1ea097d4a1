// The agent's dial policy on its own: one tunnel per replica by server id, one loop per address,
// extra dials only where fewer addresses than replicas exist, and never past the advertised count.
import { describe, expect, it } from 'vitest';
import { type HeldTunnel, ReplicaSet } from '../../src/proxy-agent/replica-set.ts';

const t = (address: string, serverId: string): HeldTunnel => ({ address, serverId });

describe('ReplicaSet', () => {
  it('one address in front of two replicas: looks for the second replica, then stops dialling', () => {
    const set = new ReplicaSet<HeldTunnel>(1);
    expect(set.dialNeed('lb:443')).toBe('reconnect');
    set.serverCount = 2;
    expect(set.add(t('lb:443', 'a'))).toBe(true);
    expect(set.dialNeed('lb:443')).toBe('seek-replica');
    expect(set.add(t('lb:443', 'a'))).toBe(false);
    expect(set.add(t('lb:443', 'b'))).toBe(true);
    expect(set.dialNeed('lb:443')).toBe('none');
  });

  it('one address per replica: never dials an address that holds its tunnel, even with a replica down', () => {
    const set = new ReplicaSet<HeldTunnel>(2);
    set.serverCount = 2;
    const a = t('a:443', 'a');
    set.add(a);
    expect(set.dialNeed('a:443')).toBe('none');
    expect(set.dialNeed('b:443')).toBe('reconnect');
    set.add(t('b:443', 'b'));
    expect(set.dialNeed('b:443')).toBe('none');
    expect(set.remove(a)).toBe(true);
    expect(set.dialNeed('a:443')).toBe('reconnect');
    expect(set.dialNeed('b:443')).toBe('none');
  });

  it('stops looking for replicas when the advertised count shrinks', () => {
    const set = new ReplicaSet<HeldTunnel>(1);
    set.serverCount = 3;
    set.add(t('lb:443', 'a'));
    set.add(t('lb:443', 'b'));
    expect(set.dialNeed('lb:443')).toBe('seek-replica');
    set.serverCount = 2;
    expect(set.dialNeed('lb:443')).toBe('none');
  });

  it('forgets a tunnel only if it is still the one held for its replica', () => {
    const set = new ReplicaSet<HeldTunnel>(1);
    const old = t('lb:443', 'a');
    set.add(old);
    expect(set.takeAll()).toEqual([old]);
    const fresh = t('lb:443', 'a');
    set.add(fresh);
    expect(set.remove(old)).toBe(false);
    expect(set.ids()).toEqual(['a']);
  });

  it('clamps the advertised replica count to 1..64', () => {
    const set = new ReplicaSet<HeldTunnel>(1);
    set.serverCount = 0;
    expect(set.serverCount).toBe(1);
    set.serverCount = 1000;
    expect(set.serverCount).toBe(64);
  });
});

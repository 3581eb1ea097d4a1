// When the registration hub writes a cluster's namespace or RBAC again: only when what it wants
// changed, or the cache shows a state it did not write (edited, deleted); never because the cache
// has not caught up with its own last write yet.
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/kube/index.ts';
import { AppliedObjects, appliedKey, echoWaitMs } from '../../../src/registration/hub/applied-objects.ts';

const desired: KubeObject = {
  metadata: { name: 'c1', labels: { 'open-cluster-management.io/cluster-name': 'c1' } },
};
const at = (resourceVersion: string, extra: Partial<KubeObject['metadata']> = {}): KubeObject => ({
  ...desired,
  metadata: { ...desired.metadata, resourceVersion, ...extra },
});
const key = appliedKey('Namespace', desired);

function memo() {
  let now = 1_000_000;
  const applied = new AppliedObjects(() => now);
  return { applied, advance: (ms: number) => (now += ms) };
}

describe('AppliedObjects', () => {
  it('writes what it never wrote, and what it wants differently now', () => {
    const { applied } = memo();
    expect(applied.decide(key, desired, at('5'))).toBe('apply');
    applied.record(key, desired, at('6'));
    const changed = { metadata: { ...desired.metadata, labels: { other: 'x' } } };
    expect(applied.decide(key, changed, at('6'))).toBe('apply');
  });

  it('leaves an object the cache shows as its last write; key order does not matter', () => {
    const { applied } = memo();
    applied.record(key, desired, at('6'));
    applied.observe(key, at('6'));
    const reordered = { metadata: { labels: desired.metadata?.labels, name: 'c1' } };
    expect(applied.decide(key, reordered, at('6'))).toBe('unchanged');
  });

  it('waits while the cache shows nothing or an older write of its own, for at most echoWaitMs', () => {
    const { applied, advance } = memo();
    applied.record(key, desired, at('6'));
    expect(applied.decide(key, desired, undefined)).toBe('wait');
    applied.record(key, desired, at('9'));
    expect(applied.decide(key, desired, at('6'))).toBe('wait');
    advance(echoWaitMs);
    expect(applied.decide(key, desired, undefined)).toBe('apply');
  });

  it("writes again when the cache shows someone else's change, a deletion in progress, or a deletion", () => {
    const { applied } = memo();
    applied.record(key, desired, at('6'));
    applied.observe(key, at('6'));
    expect(applied.decide(key, desired, at('7'))).toBe('apply');
    expect(applied.decide(key, desired, at('6', { deletionTimestamp: '2026-01-01T00:00:00Z' }))).toBe(
      'apply',
    );
    // Seen deleted after its echo: not a lagging cache.
    expect(applied.decide(key, desired, undefined)).toBe('apply');
    applied.forget(key);
    expect(applied.remembers(key)).toBe(false);
    expect(applied.decide(key, desired, undefined)).toBe('apply');
  });
});

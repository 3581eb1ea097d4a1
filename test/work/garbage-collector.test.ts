import { describe, expect, it } from 'vitest';
import type { ManifestWork } from '../../src/api/index.ts';
import { expiryOf } from '../../src/work/hub/garbage-collector.ts';

function work(ttl: number | undefined, complete?: string, labels?: Record<string, string>): ManifestWork {
  return {
    apiVersion: 'work.open-cluster-management.io/v1',
    kind: 'ManifestWork',
    metadata: { name: 'w', namespace: 'c', labels },
    spec: ttl === undefined ? {} : { deleteOption: { ttlSecondsAfterFinished: ttl } },
    status: complete
      ? {
          conditions: [
            {
              type: 'Complete',
              status: 'True',
              reason: 'ManifestsComplete',
              message: '',
              lastTransitionTime: complete,
            },
          ],
        }
      : {},
  };
}

describe('ttlSecondsAfterFinished', () => {
  it('a work is due ttl seconds after its Complete condition turned True', () => {
    expect(expiryOf(work(30, '2030-01-01T00:00:00Z'))).toBe(Date.parse('2030-01-01T00:00:30Z'));
    expect(expiryOf(work(0, '2030-01-01T00:00:00Z'))).toBe(Date.parse('2030-01-01T00:00:00Z'));
  });

  it('never without a TTL, without Complete, or when a ManifestWorkReplicaSet owns the work', () => {
    expect(expiryOf(work(undefined, '2030-01-01T00:00:00Z'))).toBeUndefined();
    expect(expiryOf(work(30))).toBeUndefined();
    const owned = work(30, '2030-01-01T00:00:00Z', {
      'work.open-cluster-management.io/manifestworkreplicaset': 'ns.set',
    });
    expect(expiryOf(owned)).toBeUndefined();
  });
});

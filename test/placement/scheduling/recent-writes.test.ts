import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/kube/index.ts';
import { RecentWrites } from '../../../src/placement/hub/placement-recent-writes.ts';

const obj = (rv: string, note = ''): KubeObject => ({
  apiVersion: 'v1',
  kind: 'X',
  metadata: { name: 'x', namespace: 'ns', resourceVersion: rv, annotations: { note } },
});

describe('recent writes over a lagging cache', () => {
  it('answers with the written object until the cache holds that resourceVersion or a newer one', () => {
    const writes = new RecentWrites<KubeObject>();
    writes.wrote('ns/x', obj('12', 'mine'));
    expect(writes.resolve('ns/x', undefined)?.metadata?.annotations?.note).toBe('mine');
    expect(writes.resolve('ns/x', obj('11', 'old'))?.metadata?.annotations?.note).toBe('mine');
    expect(writes.pendingKeys()).toEqual(['ns/x']);
    expect(writes.resolve('ns/x', obj('13', 'someone else'))?.metadata?.annotations?.note).toBe(
      'someone else',
    );
    expect(writes.size).toBe(0);
    expect(writes.resolve('ns/x', obj('11', 'old'))?.metadata?.annotations?.note).toBe('old');
  });

  it('a deleted object stays gone while the cache shows it at the deleted state', () => {
    const writes = new RecentWrites<KubeObject>();
    writes.removed('ns/x', obj('20'));
    expect(writes.resolve('ns/x', obj('20'))).toBeUndefined();
    expect(writes.resolve('ns/x', undefined)).toBeUndefined();
    expect(writes.resolve('ns/x', obj('25', 'recreated'))?.metadata?.annotations?.note).toBe('recreated');
    expect(writes.size).toBe(0);
  });

  it('forgets the entries of an owner that is gone', () => {
    const writes = new RecentWrites<KubeObject>();
    writes.wrote('ns/p-decision-1', obj('1'));
    writes.removed('ns/p-decision-2', obj('2'));
    writes.wrote('ns/q-decision-1', obj('3'));
    writes.forget((key) => key.startsWith('ns/p-decision-'));
    expect(writes.pendingKeys()).toEqual(['ns/q-decision-1']);
    expect(writes.size).toBe(1);
  });
});

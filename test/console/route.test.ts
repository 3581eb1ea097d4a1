// The console's hash routes: which page each location.hash shows.
import { describe, expect, it } from 'vitest';
import { clusterHref, parseRoute } from '../../src/console/ui/route.ts';

describe('parseRoute', () => {
  it('names the fleet, a cluster, placements and events', () => {
    expect(parseRoute('')).toEqual({ page: 'fleet' });
    expect(parseRoute('#/')).toEqual({ page: 'fleet' });
    expect(parseRoute('#/clusters/cluster1')).toEqual({ page: 'cluster', name: 'cluster1' });
    expect(parseRoute('#/placements')).toEqual({ page: 'placements' });
    expect(parseRoute('#/events')).toEqual({ page: 'events' });
  });

  it('round-trips a cluster name through its link', () => {
    for (const name of ['cluster1', 'a.b-c', 'odd name/with%']) {
      expect(parseRoute(clusterHref(name))).toEqual({ page: 'cluster', name });
    }
  });

  it('calls anything else unknown, a broken escape included', () => {
    expect(parseRoute('#/clusters/')).toEqual({ page: 'unknown', hash: '#/clusters/' });
    expect(parseRoute('#/clusters/a/b')).toEqual({ page: 'unknown', hash: '#/clusters/a/b' });
    expect(parseRoute('#/clusters/%E0%A4%A')).toEqual({ page: 'unknown', hash: '#/clusters/%E0%A4%A' });
    expect(parseRoute('#/settings')).toEqual({ page: 'unknown', hash: '#/settings' });
  });
});

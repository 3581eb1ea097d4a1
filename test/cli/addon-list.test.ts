// `tether get addon` prints one row per cluster and addon with the condition statuses clusteradm's
// tree shows, empty where no controller has set a condition yet; -o wide adds Progressing, the
// install namespace, the health-check mode, Available's reason and the age; -o json|yaml print a
// kubectl List of the objects.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { ManagedClusterAddOn } from '../../src/api/index.ts';
import { formatAddons } from '../../src/cli/addon/list.ts';

const now = Date.parse('2026-01-01T01:00:00Z');

function condition(type: string, status: 'True' | 'False' | 'Unknown', reason: string) {
  return { type, status, reason, message: '', lastTransitionTime: '2026-01-01T00:00:00Z' };
}

const available: ManagedClusterAddOn = {
  apiVersion: 'addon.open-cluster-management.io/v1alpha1',
  kind: 'ManagedClusterAddOn',
  metadata: { name: 'helloworld', namespace: 'cluster1', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { installNamespace: 'open-cluster-management-agent-addon' },
  status: {
    namespace: 'helloworld-ns',
    healthCheck: { mode: 'Lease' },
    conditions: [
      condition('RegistrationApplied', 'True', 'SetPermissionApplied'),
      condition('ManifestApplied', 'True', 'AddonManifestApplied'),
      condition('Available', 'False', 'ManagedClusterAddOnLeaseUpdateStopped'),
      condition('Progressing', 'False', 'Completed'),
    ],
  },
};
const fresh: ManagedClusterAddOn = {
  apiVersion: 'addon.open-cluster-management.io/v1alpha1',
  kind: 'ManagedClusterAddOn',
  metadata: { name: 'cluster-proxy', namespace: 'cluster2', creationTimestamp: '2026-01-01T00:59:30Z' },
  spec: { installNamespace: 'addons' },
};

const cells = (line: string | undefined): string[] => (line ?? '').split(/\s{3,}/);

describe('tether get addon output', () => {
  it('table: cluster, addon and the three condition statuses, empty when unset', () => {
    const lines = formatAddons([available, fresh], 'table', now).split('\n');
    expect(cells(lines[0])).toEqual([
      'CLUSTER',
      'NAME',
      'AVAILABLE',
      'MANIFESTAPPLIED',
      'REGISTRATIONAPPLIED',
    ]);
    expect(cells(lines[1])).toEqual(['cluster1', 'helloworld', 'False', 'True', 'True']);
    expect(lines[2]).toBe('cluster2   cluster-proxy');
  });

  it('wide: Progressing, the namespace the agent runs in (status first), health mode, reason, age', () => {
    const lines = formatAddons([available, fresh], 'wide', now).split('\n');
    expect(cells(lines[0]).slice(5)).toEqual([
      'PROGRESSING',
      'INSTALL NAMESPACE',
      'HEALTH CHECK',
      'REASON',
      'AGE',
    ]);
    expect(cells(lines[1])).toEqual([
      'cluster1',
      'helloworld',
      'False',
      'True',
      'True',
      'False',
      'helloworld-ns',
      'Lease',
      'ManagedClusterAddOnLeaseUpdateStopped',
      '60m',
    ]);
    expect(cells(lines[2]).filter(Boolean)).toEqual(['cluster2', 'cluster-proxy', 'addons', '30s']);
  });

  it('json and yaml: a kubectl List holding the objects unchanged', () => {
    const json = JSON.parse(formatAddons([available], 'json', now));
    expect(json).toMatchObject({ apiVersion: 'v1', kind: 'List', items: [available] });
    expect(parse(formatAddons([available, fresh], 'yaml', now)).items).toEqual([available, fresh]);
  });
});

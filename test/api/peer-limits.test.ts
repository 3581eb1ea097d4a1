// The limits on what a managed cluster writes to the hub (src/api/peer-limits.ts): their values
// are pinned, each sits on the schema node it bounds in every served version, and none is below
// what tether's own agents may legitimately write.
import { describe, expect, it } from 'vitest';
import {
  defaultMaxCustomClusterClaims,
  hubCrdManifests,
  type JsonSchema,
  WellKnownClusterClaim,
} from '../../src/api/index.ts';
import * as limits from '../../src/api/peer-limits.ts';

/** The schema node at a dotted path (`[]` steps into items) of `kind`'s version `version`. */
function node(kind: string, version: string, path: string): JsonSchema | undefined {
  const crd = hubCrdManifests().find((c) => c.spec.names.kind === kind);
  let at: JsonSchema | undefined = crd?.spec.versions.find((v) => v.name === version)?.schema.openAPIV3Schema;
  for (const step of path.split('.')) {
    const [name, ...items] = step.split('[]');
    at = at?.properties?.[name ?? ''];
    for (const _ of items) at = at?.items;
  }
  return at;
}

describe('limits on what a managed cluster writes', () => {
  it('pins every production limit', () => {
    expect({ ...limits }).toEqual({
      maxClusterWrittenConditions: 64,
      maxClusterClaims: 1024,
      maxClusterResourceNames: 128,
      maxKubernetesVersionLength: 256,
      maxManagedNamespaces: 1024,
      maxClientConfigs: 16,
      maxClientConfigUrlLength: 2048,
      maxClientConfigCaBundleLength: 262144,
      maxWorkManifestStatuses: 4096,
      maxFeedbackValues: 256,
      maxAddOnRelatedObjects: 256,
      maxAddOnStatusEntries: 64,
      maxAddOnStatusStringLength: 1024,
      maxAddOnDescriptionLength: 8192,
    });
  });

  it('puts each limit on the field it bounds, in every served version', () => {
    const expected: Array<[string, string, string, Partial<JsonSchema>]> = [
      ['ManagedCluster', 'v1', 'status.conditions', { maxItems: 64 }],
      ['ManagedCluster', 'v1', 'status.clusterClaims', { maxItems: 1024 }],
      ['ManagedCluster', 'v1', 'status.capacity', { maxProperties: 128 }],
      ['ManagedCluster', 'v1', 'status.allocatable', { maxProperties: 128 }],
      ['ManagedCluster', 'v1', 'status.version.kubernetes', { maxLength: 256 }],
      ['ManagedCluster', 'v1', 'status.managedNamespaces', { maxItems: 1024 }],
      ['ManagedCluster', 'v1', 'status.managedNamespaces[].conditions', { maxItems: 64 }],
      ['ManagedCluster', 'v1', 'spec.managedClusterClientConfigs', { maxItems: 16 }],
      ['ManagedCluster', 'v1', 'spec.managedClusterClientConfigs[].url', { maxLength: 2048 }],
      ['ManagedCluster', 'v1', 'spec.managedClusterClientConfigs[].caBundle', { maxLength: 262144 }],
      ['ManifestWork', 'v1', 'status.conditions', { maxItems: 64 }],
      ['ManifestWork', 'v1', 'status.resourceStatus.manifests', { maxItems: 4096 }],
      ['ManifestWork', 'v1', 'status.resourceStatus.manifests[].conditions', { maxItems: 64 }],
      ['ManifestWork', 'v1', 'status.resourceStatus.manifests[].resourceMeta.name', { maxLength: 253 }],
      ['ManifestWork', 'v1', 'status.resourceStatus.manifests[].statusFeedback.values', { maxItems: 256 }],
    ];
    for (const version of ['v1alpha1', 'v1beta1']) {
      expected.push(
        ['ManagedClusterAddOn', version, 'status.conditions', { maxItems: 64 }],
        ['ManagedClusterAddOn', version, 'status.relatedObjects', { maxItems: 256 }],
        ['ManagedClusterAddOn', version, 'status.relatedObjects[].name', { maxLength: 1024 }],
        ['ManagedClusterAddOn', version, 'status.supportedConfigs', { maxItems: 64 }],
        ['ManagedClusterAddOn', version, 'status.configReferences', { maxItems: 64 }],
        ['ManagedClusterAddOn', version, 'status.registrations', { maxItems: 64 }],
        ['ManagedClusterAddOn', version, 'status.namespace', { maxLength: 1024 }],
        ['ManagedClusterAddOn', version, 'status.addOnMeta.description', { maxLength: 8192 }],
      );
    }
    for (const [kind, version, path, facets] of expected) {
      expect({ kind, version, path, ...node(kind, version, path) }).toMatchObject({
        kind,
        version,
        path,
        ...facets,
      });
    }
  });

  it('leaves room for every claim the agent may report (reserved + the flag’s cap of 1 000 custom)', () => {
    const reserved = Object.keys(WellKnownClusterClaim).length;
    expect(limits.maxClusterClaims).toBeGreaterThanOrEqual(reserved + 1000);
    expect(defaultMaxCustomClusterClaims).toBe(20);
  });
});

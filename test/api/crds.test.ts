// Structural checks on the CRDs tether installs, the ones an API server would otherwise only report
// at install time: names, storage versions, structural schemas, printer columns, and that the
// client-node models serialise back to exactly the wire manifests.

import { ObjectSerializer as GeneratedSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { ObjectSerializer as KubernetesObjectSerializer } from '@kubernetes/client-node/dist/serializer.js';
import { describe, expect, it } from 'vitest';
import {
  type ApiResource,
  addOnDeploymentConfigResource,
  appliedManifestWorkResource,
  type CrdManifest,
  clusterClaimResource,
  clusterManagementAddOnResource,
  hubCrdManifests,
  hubCrds,
  type JsonSchema,
  managedClusterAddOnResource,
  managedClusterResource,
  managedCrdManifests,
  managedCrds,
  managedServiceAccountResource,
  manifestWorkResource,
} from '../../src/api/index.ts';

const allManifests = (): CrdManifest[] => [...hubCrdManifests(), ...managedCrdManifests()];

/** Every schema node with the JSON path that leads to it. */
function* schemaNodes(node: JsonSchema, path: string): Generator<[string, JsonSchema]> {
  yield [path, node];
  for (const [name, child] of Object.entries(node.properties ?? {}))
    yield* schemaNodes(child, `${path}.${name}`);
  if (node.items) yield* schemaNodes(node.items, `${path}[]`);
  if (node.additionalProperties) yield* schemaNodes(node.additionalProperties, `${path}{}`);
}

function* everySchemaNode(): Generator<[string, JsonSchema]> {
  for (const crd of allManifests()) {
    for (const version of crd.spec.versions) {
      yield* schemaNodes(version.schema.openAPIV3Schema, `${crd.metadata.name}/${version.name}`);
    }
  }
}

function valueMatchesType(value: unknown, node: JsonSchema): boolean {
  if (node['x-kubernetes-int-or-string']) return Number.isInteger(value) || typeof value === 'string';
  switch (node.type) {
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'boolean':
      return typeof value === 'boolean';
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    case 'array':
      return Array.isArray(value);
    default:
      return false;
  }
}

function findCrd(resource: ApiResource): CrdManifest {
  const crd = allManifests().find((c) => c.metadata.name === `${resource.plural}.${resource.group}`);
  if (!crd) throw new Error(`no CRD for ${resource.plural}.${resource.group}`);
  return crd;
}

describe('CRD sets', () => {
  it('the hub gets the registration, work, add-on, service-account, placement and integration kinds', () => {
    expect(hubCrdManifests().map((c) => c.spec.names.kind)).toEqual([
      'ManagedCluster',
      'ManifestWork',
      'ClusterManagementAddOn',
      'ManagedClusterAddOn',
      'AddOnDeploymentConfig',
      'AddOnTemplate',
      'ManagedServiceAccount',
      'ManagedClusterSet',
      'ManagedClusterSetBinding',
      'Placement',
      'PlacementDecision',
      'AddOnPlacementScore',
      'ManifestWorkReplicaSet',
      'GitOpsCluster',
      'ClusterProfile',
    ]);
  });

  it('a managed cluster gets ClusterClaim and AppliedManifestWork', () => {
    expect(managedCrdManifests().map((c) => c.spec.names.kind)).toEqual([
      'ClusterClaim',
      'AppliedManifestWork',
    ]);
  });

  it('every call returns fresh objects', () => {
    const first = hubCrdManifests();
    first[0]!.spec.versions[0]!.schema.openAPIV3Schema.description = 'changed';
    expect(hubCrdManifests()[0]!.spec.versions[0]!.schema.openAPIV3Schema.description).not.toBe('changed');
  });
});

describe('CRD names and versions', () => {
  it.each(allManifests().map((c) => [c.metadata.name, c] as const))(
    '%s is named <plural>.<group>',
    (_, crd) => {
      expect(crd.metadata.name).toBe(`${crd.spec.names.plural}.${crd.spec.group}`);
      expect(crd.spec.names.singular).toBe(crd.spec.names.kind.toLowerCase());
      expect(crd.spec.names.listKind).toBe(`${crd.spec.names.kind}List`);
    },
  );

  it.each(allManifests().map((c) => [c.metadata.name, c] as const))(
    '%s has exactly one storage version',
    (_, crd) => {
      expect(crd.spec.versions.filter((v) => v.storage)).toHaveLength(1);
      expect(crd.spec.versions.every((v) => v.served)).toBe(true);
    },
  );

  it.each([
    managedClusterResource,
    clusterClaimResource,
    manifestWorkResource,
    appliedManifestWorkResource,
    clusterManagementAddOnResource,
    managedClusterAddOnResource,
    addOnDeploymentConfigResource,
    managedServiceAccountResource,
  ] as ApiResource[])('descriptor of $kind matches its CRD', (resource) => {
    const crd = findCrd(resource);
    expect(crd.spec.group).toBe(resource.group);
    expect(crd.spec.names.kind).toBe(resource.kind);
    expect(crd.spec.scope).toBe(resource.namespaced ? 'Namespaced' : 'Cluster');
    expect(crd.spec.versions.find((v) => v.storage)?.name).toBe(resource.version);
  });

  it('keeps OCM short names', () => {
    const shortNames = Object.fromEntries(
      allManifests().map((c) => [c.spec.names.kind, c.spec.names.shortNames]),
    );
    expect(shortNames['ManagedCluster']).toEqual(['mcl', 'mcls']);
    // OCM gives ManifestWork none (api-facts.test.ts holds every kind's names against OCM's).
    expect(shortNames['ManifestWork']).toBeUndefined();
    expect(shortNames['ClusterManagementAddOn']).toEqual(['cma', 'cmas']);
    expect(shortNames['ManagedClusterAddOn']).toEqual(['mca', 'mcas']);
  });

  it('ManagedServiceAccount serves v1beta1 (storage) and v1alpha1 with one schema', () => {
    const crd = findCrd(managedServiceAccountResource);
    expect(crd.spec.versions.map((v) => [v.name, v.storage])).toEqual([
      ['v1beta1', true],
      ['v1alpha1', false],
    ]);
    const [beta, alpha] = crd.spec.versions;
    expect(alpha!.schema).toEqual(beta!.schema);
    expect(alpha!.subresources).toEqual(beta!.subresources);
  });

  it('every kind with a status has the status subresource, and only those', () => {
    for (const crd of allManifests()) {
      for (const version of crd.spec.versions) {
        const hasStatus = version.schema.openAPIV3Schema.properties?.['status'] !== undefined;
        expect(version.subresources?.status !== undefined, crd.metadata.name).toBe(hasStatus);
      }
    }
  });
});

describe('printer columns', () => {
  it('ManagedCluster prints the five OCM columns', () => {
    const columns = findCrd(managedClusterResource).spec.versions[0]!.additionalPrinterColumns;
    expect(columns).toEqual([
      { name: 'Hub Accepted', type: 'boolean', jsonPath: '.spec.hubAcceptsClient' },
      { name: 'Managed Cluster URLs', type: 'string', jsonPath: '.spec.managedClusterClientConfigs[*].url' },
      {
        name: 'Joined',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="ManagedClusterJoined")].status',
      },
      {
        name: 'Available',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="ManagedClusterConditionAvailable")].status',
      },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ]);
  });

  it('ManagedClusterAddOn prints Available, Degraded and Progressing from its conditions', () => {
    const columns = findCrd(managedClusterAddOnResource).spec.versions[0]!.additionalPrinterColumns ?? [];
    expect(columns.map((c) => [c.name, c.jsonPath])).toEqual(
      ['Available', 'Degraded', 'Progressing'].map((t) => [
        t,
        `.status.conditions[?(@.type=="${t}")].status`,
      ]),
    );
  });
});

describe('structural schemas', () => {
  it('every node has a type, except int-or-string nodes', () => {
    for (const [path, node] of everySchemaNode()) {
      if (node['x-kubernetes-int-or-string']) {
        expect(node.type, path).toBeUndefined();
        expect(node.anyOf, path).toEqual([{ type: 'integer' }, { type: 'string' }]);
      } else {
        expect(node.type, path).toBeDefined();
      }
    }
  });

  it('every node with properties is an object, every node with items an array', () => {
    for (const [path, node] of everySchemaNode()) {
      if (node.properties) expect(node.type, path).toBe('object');
      if (node.additionalProperties) expect(node.type, path).toBe('object');
      if (node.properties && node.additionalProperties)
        expect.fail(`${path}: properties and additionalProperties`);
      if (node.items) expect(node.type, path).toBe('array');
      if (node.type === 'array') expect(node.items, path).toBeDefined();
    }
  });

  it('required fields exist', () => {
    for (const [path, node] of everySchemaNode()) {
      for (const name of node.required ?? [])
        expect(node.properties?.[name], `${path}.${name}`).toBeDefined();
    }
  });

  it('metadata is left to the server', () => {
    for (const crd of allManifests()) {
      for (const version of crd.spec.versions) {
        expect(version.schema.openAPIV3Schema.properties?.['metadata']).toEqual({ type: 'object' });
      }
    }
  });

  it('embedded resources are objects kept as written', () => {
    let seen = 0;
    for (const [path, node] of everySchemaNode()) {
      if (!node['x-kubernetes-embedded-resource']) continue;
      seen++;
      expect(node.type, path).toBe('object');
      expect(node['x-kubernetes-preserve-unknown-fields'] || node.properties !== undefined, path).toBe(true);
    }
    expect(seen).toBeGreaterThan(0);
  });

  it('list-map keys are required or defaulted scalars', () => {
    for (const [path, node] of everySchemaNode()) {
      if (node['x-kubernetes-list-type'] !== 'map') continue;
      const items = node.items!;
      expect(items.type, path).toBe('object');
      expect(node['x-kubernetes-list-map-keys']?.length, path).toBeGreaterThan(0);
      for (const key of node['x-kubernetes-list-map-keys'] ?? []) {
        const keyNode = items.properties?.[key];
        expect(keyNode?.type, `${path} key ${key}`).toMatch(/^(string|integer|number|boolean)$/);
        expect(items.required?.includes(key) || keyNode?.default !== undefined, `${path} key ${key}`).toBe(
          true,
        );
      }
    }
  });

  it('defaults and enum values have the type of their node', () => {
    for (const [path, node] of everySchemaNode()) {
      if (node.default !== undefined)
        expect(valueMatchesType(node.default, node), `${path} default`).toBe(true);
      for (const value of node.enum ?? [])
        expect(valueMatchesType(value, node), `${path} enum ${value}`).toBe(true);
    }
  });

  it('conditions follow metav1.Condition and merge by type', () => {
    const status =
      findCrd(managedClusterResource).spec.versions[0]!.schema.openAPIV3Schema.properties!['status']!;
    const conditions = status.properties!['conditions']!;
    expect(conditions['x-kubernetes-list-map-keys']).toEqual(['type']);
    expect(conditions.items!.required).toEqual(['type', 'status', 'reason', 'message', 'lastTransitionTime']);
    expect(conditions.items!.properties!['status']!.enum).toEqual(['True', 'False', 'Unknown']);
  });
});

describe('client-node models', () => {
  const manifestsByName = new Map(allManifests().map((m) => [m.metadata.name, m]));
  const models = [...hubCrds(), ...managedCrds()];

  it.each(models.map((m) => [m.metadata!.name!, m] as const))(
    '%s serialises to its manifest through ApiextensionsV1Api and KubernetesObjectApi',
    (name, model) => {
      const manifest = manifestsByName.get(name);
      const viaTypedApi = JSON.parse(
        JSON.stringify(GeneratedSerializer.serialize(model, 'V1CustomResourceDefinition', '')),
      );
      const viaObjectApi = JSON.parse(
        JSON.stringify(KubernetesObjectSerializer.serialize(model, 'V1CustomResourceDefinition')),
      );
      expect(viaTypedApi).toEqual(manifest);
      expect(viaObjectApi).toEqual(manifest);
    },
  );

  it('typed schema nodes carry model names, so the serializer does not drop them', () => {
    const manifestWork = models.find((m) => m.spec.names.kind === 'ManifestWork')!;
    const spec = manifestWork.spec.versions[0]!.schema!.openAPIV3Schema!.properties!['spec']!;
    const propagation = spec.properties!['deleteOption']!.properties!['propagationPolicy']!;
    expect(propagation._default).toBe('Foreground');
    expect(propagation._enum).toEqual(['Foreground', 'Orphan', 'SelectivelyOrphan']);
  });
});

describe('deprecated versions', () => {
  it('ManagedServiceAccount v1alpha1 is served but deprecated (as OCM marks it), in the manifest and the model', () => {
    const manifest = hubCrdManifests().find((c) => c.spec.names.kind === 'ManagedServiceAccount');
    const model = hubCrds().find((c) => c.spec.names.kind === 'ManagedServiceAccount');
    for (const versions of [manifest?.spec.versions, model?.spec.versions]) {
      expect(versions?.map((v) => [v.name, v.served, v.storage, v.deprecated ?? false])).toEqual([
        ['v1beta1', true, true, false],
        ['v1alpha1', true, false, true],
      ]);
    }
  });
});

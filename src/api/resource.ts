// Resource descriptors: the group/version/plural/kind facts other modules need to build API paths
// and apiVersion strings for the OCM kinds. Owns no I/O and no path formatting beyond apiVersion.

/** Where a custom resource lives on the API server. */
export interface ApiResource {
  readonly group: string;
  readonly version: string;
  /** Lower-case plural used in URLs, e.g. `managedclusters`. */
  readonly plural: string;
  readonly kind: string;
  /** true for namespaced kinds, false for cluster-scoped ones. */
  readonly namespaced: boolean;
}

/** The `apiVersion` string objects of this resource carry, e.g. `cluster.open-cluster-management.io/v1`. */
export function apiVersionOf(resource: ApiResource): string {
  return resource.group === '' ? resource.version : `${resource.group}/${resource.version}`;
}

/** The CustomResourceDefinition name the API server requires: `<plural>.<group>`. */
export function crdNameOf(resource: ApiResource): string {
  return `${resource.plural}.${resource.group}`;
}

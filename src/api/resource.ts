// Resource descriptors: the group/version/plural/kind facts other modules need to build API paths
// and apiVersion strings for the OCM kinds. Owns no I/O and no path formatting beyond apiVersion.
import type { ResourceDescriptor } from '../kube/types.ts';

/**
 * Where a custom resource lives on the API server. The same type as src/kube's ResourceDescriptor,
 * so a descriptor here goes straight into `new ResourceClient<Kind>(kubeconfig, descriptor)`.
 */
export type ApiResource = ResourceDescriptor;

/** The `apiVersion` string objects of this resource carry, e.g. `cluster.open-cluster-management.io/v1`. */
export function apiVersionOf(resource: ApiResource): string {
  return resource.group === '' ? resource.version : `${resource.group}/${resource.version}`;
}

/** The CustomResourceDefinition name the API server requires: `<plural>.<group>`. */
export function crdNameOf(resource: ApiResource): string {
  return `${resource.plural}.${resource.group}`;
}

// The built-in Kubernetes kinds tether's components name, as ResourceDescriptors for ResourceClient
// and Informer: one definition each (OCM's kinds are in src/api). Pure data; the JSON types of
// these objects stay with the components that read them, typed to the fields each one uses.
import type { ResourceDescriptor } from './types.ts';

const core = (plural: string, kind: string, namespaced: boolean): ResourceDescriptor => ({
  group: '',
  version: 'v1',
  plural,
  kind,
  namespaced,
});
const rbac = (plural: string, kind: string, namespaced: boolean): ResourceDescriptor => ({
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  plural,
  kind,
  namespaced,
});

export const namespaceResource = core('namespaces', 'Namespace', false);
export const secretResource = core('secrets', 'Secret', true);
export const configMapResource = core('configmaps', 'ConfigMap', true);
export const serviceAccountResource = core('serviceaccounts', 'ServiceAccount', true);
export const serviceResource = core('services', 'Service', true);
export const nodeResource = core('nodes', 'Node', false);
/** core/v1 Events (what client-go's recorder writes) */
export const coreEventResource = core('events', 'Event', true);
/** events.k8s.io/v1 Events (what OCM's agents write: reportingController, action) */
export const eventResource: ResourceDescriptor = {
  group: 'events.k8s.io',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
};
export const roleResource = rbac('roles', 'Role', true);
export const roleBindingResource = rbac('rolebindings', 'RoleBinding', true);
export const clusterRoleResource = rbac('clusterroles', 'ClusterRole', false);
export const clusterRoleBindingResource = rbac('clusterrolebindings', 'ClusterRoleBinding', false);
export const certificateSigningRequestResource: ResourceDescriptor = {
  group: 'certificates.k8s.io',
  version: 'v1',
  plural: 'certificatesigningrequests',
  kind: 'CertificateSigningRequest',
  namespaced: false,
};
export const customResourceDefinitionResource: ResourceDescriptor = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  plural: 'customresourcedefinitions',
  kind: 'CustomResourceDefinition',
  namespaced: false,
};
export const tokenReviewResource: ResourceDescriptor = {
  group: 'authentication.k8s.io',
  version: 'v1',
  plural: 'tokenreviews',
  kind: 'TokenReview',
  namespaced: false,
};
export const apiServiceResource: ResourceDescriptor = {
  group: 'apiregistration.k8s.io',
  version: 'v1',
  plural: 'apiservices',
  kind: 'APIService',
  namespaced: false,
};
export const leaseResource: ResourceDescriptor = {
  group: 'coordination.k8s.io',
  version: 'v1',
  plural: 'leases',
  kind: 'Lease',
  namespaced: true,
};

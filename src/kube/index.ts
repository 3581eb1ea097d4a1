// Public surface of src/kube: client-node helpers every tether component uses to talk to a
// kube-apiserver. Import from here, not from the files behind it.

export {
  admissionPolicy,
  impersonating,
  type ProbeRule,
  type RefusalProbe,
  waitUntilEnforced,
  withProbeUser,
} from './admission-policy.ts';
export {
  isAlreadyExists,
  isApplyConflict,
  isConflict,
  isForbidden,
  isNotFound,
  toApiError,
} from './api-errors.ts';
export { applyObjects } from './apply-objects.ts';
export {
  type Condition,
  type ConditionStatus,
  type ConditionUpdate,
  conditionsEqualIgnoringTime,
  findCondition,
  formatTime,
  isConditionTrue,
  removeCondition,
  setCondition,
} from './conditions.ts';
export { type Controller, type ControllerOptions, type KeyFunc, runController } from './controller.ts';
export { controllerMetricsRegistry } from './controller-metrics.ts';
export {
  cachedDispatcherCount,
  closeCachedDispatchers,
  MAX_CACHED_DISPATCHERS,
  setForwardProxyCa,
} from './dispatcher.ts';
export { EventRecorder, type EventType, type InvolvedObject } from './events.ts';
export { inClusterKubeConfig, runningInCluster } from './in-cluster.ts';
export {
  Informer,
  type InformerHandlers,
  type InformerOptions,
  objectKey,
  splitKey,
} from './informer.ts';
export {
  apiServiceResource,
  certificateSigningRequestResource,
  clusterRoleBindingResource,
  clusterRoleResource,
  configMapResource,
  coreEventResource,
  customResourceDefinitionResource,
  eventResource,
  leaseResource,
  namespaceResource,
  nodeResource,
  roleBindingResource,
  roleResource,
  secretResource,
  serviceAccountResource,
  serviceResource,
  tokenReviewResource,
} from './kinds.ts';
export {
  applyEnvProxy,
  checkKubeconfig,
  type KubeconfigParts,
  kubeconfigFromParts,
  kubeconfigToYaml,
  type LoadKubeconfigOptions,
  loadKubeconfig,
  type ProxyEnv,
  proxyUrlFromEnv,
} from './kubeconfig.ts';
export {
  formatMicroTime,
  type LeaderElectionOptions,
  LeaderElector,
  type Lease,
  type LeaseSpec,
} from './leader.ts';
export { type Leading, type LeadingOptions, type RunningControllers, runWhileLeading } from './leading.ts';
export {
  type ApplyObject,
  type ApplyOptions,
  type CallOptions,
  type DeleteOptions,
  type ListOptions,
  ResourceClient,
  type ResourceClientOptions,
  type ResourceList,
  type WriteObject,
  type WriteOptions,
} from './resources.ts';
export {
  apiVersionOf,
  type KubeObject,
  type MergePatch,
  type ObjectMeta,
  type OwnerReference,
  type ResourceDescriptor,
  resourcePath,
} from './types.ts';
export { type ReconcileFunc, type ReconcileResult, WorkQueue, type WorkQueueOptions } from './workqueue.ts';

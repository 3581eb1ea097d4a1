// Limits on what a managed cluster writes to the hub with its own identity: the lists and free
// strings of ManagedCluster (status and its client configs), ManifestWork status and
// ManagedClusterAddOn status. The CRD modules put them in the schemas as maxItems / maxLength /
// maxProperties, so the hub apiserver refuses an oversized write with 422 Invalid naming the field,
// before anything reaches etcd or a hub informer. Without them the only bounds were the apiserver's
// 3 MiB request body (413) and etcd's 1.5 MiB value (an opaque "request is too large"), and an
// object just under those — tens of thousands of conditions or claims — was stored and sent to
// every hub watcher.
//
// Each limit is far above anything OCM's agents write; the comment says what a legit payload holds.
// Owns the numbers only; which schema node carries which one is the CRD modules' business.

/** Conditions on a status a cluster writes (each manifest's too): OCM's components set at most ~6 types. */
export const maxClusterWrittenConditions = 64;

/**
 * ManagedCluster.status.clusterClaims: the agent reports the reserved claims (4) plus at most
 * `--max-custom-cluster-claims` custom ones (default 20, the flag accepts up to 1 000).
 */
export const maxClusterClaims = 1024;

/** capacity / allocatable resource names (cpu, memory, pods, hugepages-*, extended resources). */
export const maxClusterResourceNames = 128;

/** status.version.kubernetes (`v1.31.2+k3s1` is 12 characters). */
export const maxKubernetesVersionLength = 256;

/** status.managedNamespaces: one per namespace the cluster's sets ask for. */
export const maxManagedNamespaces = 1024;

/** spec.managedClusterClientConfigs: one per apiserver URL the agent advertises (OCM: usually one). */
export const maxClientConfigs = 16;

/** A client config's URL. */
export const maxClientConfigUrlLength = 2048;

/** A client config's base64 CA bundle: 256 KiB holds well over a hundred CA certificates. */
export const maxClientConfigCaBundleLength = 256 * 1024;

/** ManifestWork status.resourceStatus.manifests: one per manifest of the work. */
export const maxWorkManifestStatuses = 4096;

/** Status feedback values per manifest: one per well-known field or JSONPath rule. */
export const maxFeedbackValues = 256;

/** ManagedClusterAddOn status.relatedObjects: what the add-on's agent points at. */
export const maxAddOnRelatedObjects = 256;

/**
 * ManagedClusterAddOn status lists of configs and registrations (supportedConfigs,
 * configReferences, registrations, a registration's groups): add-ons use a handful.
 */
export const maxAddOnStatusEntries = 64;

/** Short free strings in an add-on's status (namespace, displayName, a subject's user or group). */
export const maxAddOnStatusStringLength = 1024;

/** An add-on's status.addOnMeta.description. */
export const maxAddOnDescriptionLength = 8192;

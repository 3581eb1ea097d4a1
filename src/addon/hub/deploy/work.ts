// The ManifestWorks that deliver an addon agent to one cluster, as OCM's addon framework writes
// them: `addon-<addon>-deploy-<i>` in the cluster namespace (in hosted mode also
// `addon-<addon>-deploy-hosting-<cluster>-<i>` in the hosting cluster's, not owned), labelled with the addon's name,
// controlled by the ManagedClusterAddOn (so the garbage collector also removes them with it), the
// config-spec-hash annotation of the configs they were rendered with, and feedback rules for the
// health probe. Manifests are split into works of at most `maxWorkBytes` of JSON (OCM: 500 KiB),
// in order. An object annotated `addon.open-cluster-management.io/deletion-orphan` stays on the
// cluster when the addon goes (the work's deleteOption SelectivelyOrphan names it, as OCM's
// framework does); the install Namespace added here is one, since other addons share it. Also:
// which namespaced objects get the install namespace, and whether a work already is what we want.
// Pure.
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  addonDeployWorkName,
  addonHostingWorkName,
  addonNameLabel,
  type ManagedClusterAddOn,
} from '../../../api/addon.ts';
import {
  configSpecHashAnnotation,
  type DeleteOption,
  DeletePropagationPolicy,
  type Manifest,
  type ManifestConfigOption,
  type ManifestWork,
} from '../../../api/work.ts';
import { canonicalJson } from '../../../kube/canonical-json.ts';
import { addonOwnerReference } from '../addon-owner.ts';

/** On a manifest: leave the object on the cluster when the addon is disabled (OCM's key). */
export const deletionOrphanAnnotation = 'addon.open-cluster-management.io/deletion-orphan';

/** OCM's limit of manifests per work. */
export const defaultMaxWorkBytes = 500 * 1024;

/** Kinds that are cluster-scoped, so never get the install namespace. */
const clusterScopedKinds = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PriorityClass',
  'StorageClass',
  'PersistentVolume',
  'APIService',
  'ValidatingWebhookConfiguration',
  'MutatingWebhookConfiguration',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'MutatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
  'IngressClass',
  'RuntimeClass',
  'CSIDriver',
  'CSINode',
  'VolumeAttachment',
  'Node',
  'ClusterClaim',
  'AppliedManifestWork',
  'FlowSchema',
  'PriorityLevelConfiguration',
]);

/**
 * The objects with the install namespace filled in for namespaced kinds that have none, and a
 * Namespace object for it first when the addon did not include one (unless `addNamespace` is
 * false: hosted mode's install namespace is the hosted klusterlet's). That Namespace is marked
 * deletion-orphan: other addons run in it, so disabling this one must not delete it.
 */
export function placeInNamespace(
  objects: readonly KubernetesObject[],
  installNamespace: string,
  opts: { addNamespace?: boolean } = {},
): KubernetesObject[] {
  const placed = objects.map((o) => {
    if (clusterScopedKinds.has(o.kind ?? '') || o.metadata?.namespace) return o;
    return { ...o, metadata: { ...(o.metadata ?? {}), namespace: installNamespace } };
  });
  const hasNamespace = placed.some(
    (o) => o.kind === 'Namespace' && o.apiVersion === 'v1' && o.metadata?.name === installNamespace,
  );
  if (hasNamespace || opts.addNamespace === false) return placed;
  return [sharedInstallNamespace(installNamespace), ...placed];
}

/**
 * An install Namespace other addons may share (OCM's default namespace is every addon's), so
 * disabling one addon must not take it, and everything else in it, away: marked deletion-orphan.
 */
export function sharedInstallNamespace(name: string): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, annotations: { [deletionOrphanAnnotation]: '' } },
  };
}

/** The plural resource of a kind, guessed as Go's meta.UnsafeGuessKindToResource does (as OCM). */
function guessResource(kind: string): string {
  const lower = kind.toLowerCase();
  if (lower === '') return lower;
  if (lower.endsWith('s')) return `${lower}es`;
  if (lower.endsWith('y')) return `${lower.slice(0, -1)}ies`;
  return `${lower}s`;
}

/** The delete option that orphans this work's deletion-orphan manifests; none when it has none. */
export function deletionOrphanOption(manifests: readonly Manifest[]): DeleteOption | undefined {
  const orphaningRules = manifests
    .filter((m) => m.metadata?.annotations?.[deletionOrphanAnnotation] !== undefined)
    .map((m) => {
      const apiVersion = m.apiVersion ?? '';
      const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
      return {
        group,
        resource: guessResource(m.kind ?? ''),
        name: m.metadata?.name ?? '',
        namespace: m.metadata?.namespace ?? '',
      };
    });
  if (orphaningRules.length === 0) return undefined;
  return {
    propagationPolicy: DeletePropagationPolicy.SelectivelyOrphan,
    selectivelyOrphans: { orphaningRules },
  };
}

export interface DeployWorksInput {
  addonName: string;
  mca: ManagedClusterAddOn;
  manifests: readonly KubernetesObject[];
  /** feedback rules for the probe (work-health.ts) */
  manifestConfigs: readonly ManifestConfigOption[];
  /** the config-spec-hash annotation value, when the MCA has configReferences */
  configSpecHash?: string;
  maxWorkBytes?: number;
  /**
   * Hosted mode's hosting works: `addon-<addon>-deploy-hosting-<cluster>-<i>` in this (the hosting
   * cluster's) namespace, with no ownerReference (the addon is in another namespace; a finalizer
   * removes them), and none at all when there is nothing to deploy there.
   */
  hostingCluster?: string;
  /** no work at all when there are no manifests (hosted mode's managed part; hosting works always) */
  skipEmpty?: boolean;
}

/** The works to write, in order: `addon-<addon>-deploy-0`, `-1`, … */
export function desiredDeployWorks(input: DeployWorksInput): ManifestWork[] {
  const max = input.maxWorkBytes ?? defaultMaxWorkBytes;
  const chunks: Manifest[][] = [[]];
  let size = 0;
  for (const obj of input.manifests) {
    const bytes = Buffer.byteLength(JSON.stringify(obj));
    const current = chunks[chunks.length - 1] as Manifest[];
    if (current.length > 0 && size + bytes > max) {
      chunks.push([]);
      size = 0;
    }
    (chunks[chunks.length - 1] as Manifest[]).push(obj as Manifest);
    size += bytes;
  }
  const { mca, hostingCluster } = input;
  const cluster = mca.metadata.namespace ?? '';
  if ((hostingCluster !== undefined || input.skipEmpty) && input.manifests.length === 0) return [];
  return chunks.map((manifests, index) => {
    const ids = new Set(manifests.map((m) => `${m.metadata?.namespace ?? ''}/${m.metadata?.name ?? ''}`));
    // Each work carries the probe rules of its own objects (the work agent rejects nothing, but
    // a rule for an object elsewhere would never get feedback).
    // The apiserver defaults feedbackScrapeType; stating it keeps "is the work current?" exact.
    const manifestConfigs = input.manifestConfigs
      .filter((c) => ids.has(`${c.resourceIdentifier.namespace ?? ''}/${c.resourceIdentifier.name}`))
      .map((c) => ({ ...c, feedbackScrapeType: c.feedbackScrapeType ?? ('Poll' as const) }));
    const deleteOption = deletionOrphanOption(manifests);
    return {
      apiVersion: 'work.open-cluster-management.io/v1',
      kind: 'ManifestWork',
      metadata: {
        name:
          hostingCluster === undefined
            ? addonDeployWorkName(input.addonName, index)
            : addonHostingWorkName(input.addonName, cluster, index),
        namespace: hostingCluster ?? cluster,
        labels: { [addonNameLabel]: input.addonName },
        ...(input.configSpecHash
          ? { annotations: { [configSpecHashAnnotation]: input.configSpecHash } }
          : {}),
        ...(hostingCluster === undefined
          ? { ownerReferences: [addonOwnerReference(mca, { controller: true })] }
          : {}),
      },
      spec: {
        workload: { manifests },
        ...(manifestConfigs.length > 0 ? { manifestConfigs } : {}),
        ...(deleteOption ? { deleteOption } : {}),
      },
    };
  });
}

/** True when `existing` already has the wanted spec, label, annotation and owner. */
export function workIsCurrent(existing: ManifestWork, want: ManifestWork): boolean {
  const annotation = (w: ManifestWork) => w.metadata.annotations?.[configSpecHashAnnotation];
  const owner = (w: ManifestWork) => (w.metadata.ownerReferences ?? []).find((o) => o.controller);
  const label = (w: ManifestWork) => w.metadata.labels?.[addonNameLabel];
  const spec = (w: ManifestWork) => ({
    workload: { manifests: w.spec.workload?.manifests ?? [] },
    manifestConfigs: w.spec.manifestConfigs ?? [],
    deleteOption: w.spec.deleteOption ?? null,
  });
  return (
    label(existing) === label(want) &&
    annotation(existing) === annotation(want) &&
    owner(existing)?.uid === owner(want)?.uid &&
    canonicalJson(spec(existing)) === canonicalJson(spec(want))
  );
}

/** The write for an existing work: ours replace its spec, label, annotation and controller owner. */
export function updatedWork(existing: ManifestWork, want: ManifestWork): ManifestWork {
  const annotations = { ...(existing.metadata.annotations ?? {}) };
  delete annotations[configSpecHashAnnotation];
  Object.assign(annotations, want.metadata.annotations ?? {});
  return {
    ...existing,
    metadata: {
      ...existing.metadata,
      labels: { ...(existing.metadata.labels ?? {}), ...want.metadata.labels },
      annotations,
      ownerReferences: [
        ...(existing.metadata.ownerReferences ?? []).filter((o) => !o.controller),
        ...(want.metadata.ownerReferences ?? []),
      ],
    },
    spec: {
      ...existing.spec,
      ...want.spec,
      ...(want.spec.manifestConfigs ? {} : { manifestConfigs: undefined }),
      ...(want.spec.deleteOption ? {} : { deleteOption: undefined }),
    },
  };
}

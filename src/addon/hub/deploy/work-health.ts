// What an addon's deploy works say about it, as OCM's addon framework reads them: the feedback rules
// a health probe needs in the work (manifestConfigs), ManifestApplied from the works' Applied
// condition, and Available for the probe modes the hub evaluates (DeploymentAvailability, WorkField)
// from the works' status feedback. Lease mode is the managed registration agent's; Customized and
// None leave Available alone. Pure.
import type { KubernetesObject } from '@kubernetes/client-node';
import type {
  FeedbackValue,
  ManifestCondition,
  ManifestConfigOption,
  ManifestWork,
  ResourceIdentifier,
} from '../../../api/work.ts';
import { type ConditionUpdate, findCondition } from '../../../kube/conditions.ts';
import type { AddonHealthProber, AddonProbeResult } from '../../sdk/types.ts';
import {
  AddonConditionType,
  AvailableReason,
  ManifestAppliedMessage,
  ManifestAppliedReason,
} from '../addon-conditions.ts';

/** status.healthCheck.mode for a prober: only Lease is Lease, every hub-side mode is Customized. */
export function healthCheckMode(health: AddonHealthProber | undefined): 'Lease' | 'Customized' {
  return (health?.type ?? 'Lease') === 'Lease' ? 'Lease' : 'Customized';
}

/** The resources (and rules) a prober reads from the works' status feedback. */
export function probeFields(
  health: AddonHealthProber | undefined,
  objects: readonly KubernetesObject[],
): { resource: ResourceIdentifier; rules: ManifestConfigOption['feedbackRules'] }[] {
  if (health?.type === 'WorkField')
    return health.probes.map((p) => ({ resource: p.resource, rules: p.rules }));
  if (health?.type !== 'DeploymentAvailability') return [];
  return objects
    .filter((o) => o.kind === 'Deployment' && o.apiVersion?.startsWith('apps/'))
    .filter((o) => (o as { spec?: { replicas?: number } }).spec?.replicas !== 0)
    .map((o) => ({
      resource: {
        group: 'apps',
        resource: 'deployments',
        name: o.metadata?.name ?? '',
        namespace: o.metadata?.namespace ?? '',
      },
      rules: [{ type: 'WellKnownStatus' as const }],
    }));
}

/**
 * The work's manifestConfigs for the probes: feedback rules on each probed resource (wildcards in a
 * WorkField probe cannot be asked of the work agent and are left out).
 */
export function probeManifestConfigs(
  health: AddonHealthProber | undefined,
  objects: readonly KubernetesObject[],
): ManifestConfigOption[] {
  return probeFields(health, objects)
    .filter((f) => !f.resource.name.includes('*') && !(f.resource.namespace ?? '').includes('*'))
    .map((f) => ({ resourceIdentifier: f.resource, feedbackRules: f.rules ?? [] }));
}

/**
 * ManifestApplied from the deploy works: True once every work is Applied, False when one is not;
 * undefined (leave it) while some work has no Applied condition yet. No works: nothing to apply.
 */
export function manifestAppliedCondition(works: readonly ManifestWork[]): ConditionUpdate | undefined {
  const applied: ConditionUpdate = {
    type: AddonConditionType.ManifestApplied,
    status: 'True',
    reason: ManifestAppliedReason.Applied,
    message: ManifestAppliedMessage.applied,
  };
  let waiting = false;
  for (const work of works) {
    const cond = findCondition(work.status?.conditions, 'Applied');
    if (!cond) {
      waiting = true;
      continue;
    }
    if (cond.status !== 'True') {
      return {
        type: AddonConditionType.ManifestApplied,
        status: 'False',
        reason: ManifestAppliedReason.ApplyFailed,
        message: ManifestAppliedMessage.applyFailed,
      };
    }
  }
  return waiting ? undefined : applied;
}

function globMatches(pattern: string | undefined, value: string | undefined): boolean {
  const p = pattern ?? '';
  const v = value ?? '';
  if (!p.includes('*')) return p === v;
  const re = p
    .split('*')
    .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${re}$`).test(v);
}

/** Feedback of every manifest the identifier matches (group, resource exact; name, namespace may glob). */
export function probeResults(
  id: ResourceIdentifier,
  manifests: readonly ManifestCondition[],
): AddonProbeResult[] {
  const out: AddonProbeResult[] = [];
  for (const m of manifests) {
    const meta = m.resourceMeta;
    if ((meta.group ?? '') !== (id.group ?? '') || meta.resource !== id.resource) continue;
    if (!globMatches(id.name, meta.name) || !globMatches(id.namespace, meta.namespace)) continue;
    const values = m.statusFeedback?.values ?? [];
    if (values.length === 0) continue;
    out.push({
      resource: {
        group: meta.group ?? '',
        resource: meta.resource ?? '',
        name: meta.name ?? '',
        namespace: meta.namespace ?? '',
      },
      values: values.map((v: FeedbackValue) => ({ name: v.name, fieldValue: { ...v.fieldValue } })),
    });
  }
  return out;
}

/** OCM's DeploymentAvailability check: every probed Deployment has at least one ready replica. */
export function deploymentAvailabilityProblem(results: readonly AddonProbeResult[]): string | undefined {
  for (const r of results) {
    const ready = r.values.find((v) => v.name === 'ReadyReplicas');
    if (!ready) return `readyReplica is not probed for deployment ${r.resource.namespace}/${r.resource.name}`;
    const n = Number(ready.fieldValue['integer'] ?? 0);
    if (!(n >= 1)) return `readyReplica is ${n} for deployment ${r.resource.namespace}/${r.resource.name}`;
  }
  return undefined;
}

/**
 * Available for the hub-evaluated probe modes (DeploymentAvailability, WorkField) from the deploy
 * works; undefined for the other modes (the condition is not this controller's then).
 */
export function availableCondition(
  addonName: string,
  health: AddonHealthProber | undefined,
  works: readonly ManifestWork[],
  objects: readonly KubernetesObject[],
): ConditionUpdate | undefined {
  if (health?.type !== 'DeploymentAvailability' && health?.type !== 'WorkField') return undefined;
  const available = (status: 'True' | 'False' | 'Unknown', reason: string, message: string) => ({
    type: AddonConditionType.Available,
    status,
    reason,
    message,
  });
  if (works.length === 0)
    return available('Unknown', AvailableReason.WorkNotFound, 'Addon manifestWork is not found');
  const manifests: ManifestCondition[] = [];
  for (const work of works) {
    const cond = findCondition(work.status?.conditions, 'Available');
    if (!cond)
      return available('Unknown', AvailableReason.WorkNotApplied, 'Addon manifestWork is not applied yet');
    if (cond.status === 'False') return available('False', AvailableReason.WorkNotApplied, cond.message);
    manifests.push(...(work.status?.resourceStatus?.manifests ?? []));
  }
  const fields = probeFields(health, objects);
  const results = fields.flatMap((f) => probeResults(f.resource, manifests));
  if (fields.length > 0 && results.length === 0) {
    return available('Unknown', AvailableReason.NoProbeResult, 'Probe results are not returned');
  }
  let problem: string | undefined;
  try {
    problem = health.type === 'WorkField' ? health.healthy(results) : deploymentAvailabilityProblem(results);
  } catch (err) {
    problem = err instanceof Error ? err.message : String(err);
  }
  if (problem !== undefined) {
    return available(
      'False',
      AvailableReason.ProbeUnavailable,
      `Probe addon unavailable with err ${problem}`,
    );
  }
  return available('True', AvailableReason.ProbeAvailable, `${addonName} add-on is available.`);
}

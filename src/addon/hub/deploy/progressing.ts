// The ManagedClusterAddOn's Progressing condition and configReferences[].lastAppliedConfig, as
// OCM's addon-progressing controller decides them: Installing / Upgrading while the deploy works do
// not yet carry the desired configs or are not Applied and Available at their generation;
// InstallSucceed / UpgradeSucceed once they are, and then lastAppliedConfig := desiredConfig. An
// "upgrade" is an addon some config was applied to before. Pure.
import type { ConfigGroupResource, ConfigReference, ManagedClusterAddOn } from '../../../api/addon.ts';
import { configSpecHashAnnotation, type ManifestWork } from '../../../api/work.ts';
import { canonicalJson } from '../../../kube/canonical-json.ts';
import { type Condition, type ConditionUpdate, findCondition } from '../../../kube/conditions.ts';
import { AddonConditionType, ProgressingReason } from '../addon-conditions.ts';
import { groupResourceKey } from '../config/references.ts';
import { configHashMap } from './configs.ts';

export interface ProgressingResult {
  /** undefined: leave Progressing as it is */
  condition?: ConditionUpdate;
  /** set when lastAppliedConfig changes */
  configReferences?: ConfigReference[];
}

/** True when both conditions are True at the work's generation. */
export function workIsReady(work: ManifestWork): boolean {
  const generation = work.metadata.generation;
  return ['Available', 'Applied'].every((type) => {
    const c = findCondition(work.status?.conditions, type);
    return c?.status === 'True' && c.observedGeneration === generation;
  });
}

/** The work was rendered with the MCA's desired configs (compares the config-spec-hash annotation). */
export function workConfigsMatch(work: ManifestWork, mca: ManagedClusterAddOn): boolean {
  const refs = mca.status?.configReferences ?? [];
  const raw = work.metadata.annotations?.[configSpecHashAnnotation];
  if (raw === undefined) return refs.length === 0;
  let workMap: Record<string, string>;
  try {
    workMap = JSON.parse(raw) as Record<string, string>;
  } catch {
    return false;
  }
  if (Object.values(workMap).some((v) => !v)) return false;
  if (refs.some((r) => !r.desiredConfig?.specHash)) return false;
  return canonicalJson(workMap) === canonicalJson(configHashMap(mca));
}

/**
 * Progressing for `mca` whose conditions are `conditions` (ManifestApplied as just computed),
 * `supported` its supported configs, `works` its deploy works.
 */
export function progressing(
  mca: ManagedClusterAddOn,
  conditions: readonly Condition[] | undefined,
  supported: readonly ConfigGroupResource[],
  works: readonly ManifestWork[],
): ProgressingResult {
  const supportedKeys = new Set(supported.map(groupResourceKey));
  const unsupported = (mca.spec.configs ?? []).find((c) => !supportedKeys.has(groupResourceKey(c)));
  if (unsupported) {
    return {
      condition: {
        type: AddonConditionType.Progressing,
        status: 'False',
        reason: ProgressingReason.ConfigurationUnsupported,
        message: `Configuration with gvr ${unsupported.group ?? ''}/${unsupported.resource} is not supported for this addon`,
      },
    };
  }
  if (!findCondition(conditions, AddonConditionType.ManifestApplied)) {
    return {
      condition: {
        type: AddonConditionType.Progressing,
        status: 'False',
        reason: ProgressingReason.WaitingForManifestApplied,
        message: 'Waiting for ManagedClusterAddOn ManifestApplied condition',
      },
    };
  }
  const refs = mca.status?.configReferences ?? [];
  // Once every desired config is applied, Progressing stays as it was (OCM skips the write).
  if (
    refs.length > 0 &&
    refs.every((r) => canonicalJson(r.lastAppliedConfig) === canonicalJson(r.desiredConfig))
  ) {
    return {};
  }
  const upgrade = refs.some((r) => !!r.lastAppliedConfig?.specHash);
  const doing = (message: string): ProgressingResult => ({
    condition: {
      type: AddonConditionType.Progressing,
      status: 'True',
      reason: upgrade ? ProgressingReason.Upgrading : ProgressingReason.Installing,
      message: `${upgrade ? 'upgrading' : 'installing'}... ${message}`,
    },
  });
  if (works.length === 0) return doing('no addon works');
  for (const work of works) {
    if (!workConfigsMatch(work, mca)) return doing('configs mismatch');
    if (!workIsReady(work)) return doing('work is not ready');
  }
  return {
    condition: {
      type: AddonConditionType.Progressing,
      status: 'False',
      reason: upgrade ? ProgressingReason.UpgradeSucceed : ProgressingReason.InstallSucceed,
      message: `${upgrade ? 'upgrade' : 'install'} completed with no errors.`,
    },
    ...(refs.length > 0
      ? {
          configReferences: refs.map((r) =>
            r.desiredConfig ? { ...r, lastAppliedConfig: { ...r.desiredConfig } } : r,
          ),
        }
      : {}),
  };
}

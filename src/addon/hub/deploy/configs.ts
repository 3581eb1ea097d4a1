// Which configs an addon's agent is rendered with on one cluster, and where it is installed. The
// install strategy controller (config/references.ts) writes the ManagedClusterAddOn's
// status.configReferences[].desiredConfig; those win. Before it did (or when it does not run), the
// configs are the ClusterManagementAddOn's supportedConfigs defaults overridden by the
// ManagedClusterAddOn's spec.configs, per group/resource, as OCM merges them. Reads only through the
// `fetch` callback it is given.
import type {
  AddOnDeploymentConfigSpec,
  ClusterManagementAddOn,
  ManagedClusterAddOn,
} from '../../../api/addon.ts';
import type { KubeObject } from '../../../kube/types.ts';
import { defaultAddonInstallNamespace, type ResolvedAddonConfig } from '../../sdk/types.ts';
import {
  addOnDeploymentConfigKind,
  type ConfigSelection,
  configSpecHash,
  defaultConfigs,
  goJson,
  overrideConfigs,
} from '../config/references.ts';

/** One referenced config before it is read. */
export interface ConfigRef {
  group: string;
  resource: string;
  namespace?: string;
  name: string;
  /** the install strategy's desiredConfig.specHash, when it wrote one */
  specHash?: string;
}

/** The configs to render with: desiredConfigs when written, else defaults overridden by spec.configs. */
export function configRefsOf(mca: ManagedClusterAddOn, cma: ClusterManagementAddOn | undefined): ConfigRef[] {
  const desired = (mca.status?.configReferences ?? []).filter((r) => r.desiredConfig?.name);
  if (desired.length > 0) {
    return desired.map((r) => ({
      group: r.group ?? '',
      resource: r.resource,
      name: r.desiredConfig?.name ?? '',
      ...(r.desiredConfig?.namespace ? { namespace: r.desiredConfig.namespace } : {}),
      ...(r.desiredConfig?.specHash ? { specHash: r.desiredConfig.specHash } : {}),
    }));
  }
  const base = cma ? defaultConfigs(cma) : new Map<string, ConfigSelection[]>();
  return [...overrideConfigs(base, mca.spec.configs).values()].flat().map((c) => ({
    group: c.group,
    resource: c.resource,
    name: c.referent.name,
    ...(c.referent.namespace ? { namespace: c.referent.namespace } : {}),
  }));
}

/** Read every referenced config; a missing one resolves without spec. */
export async function resolveConfigs(
  refs: readonly ConfigRef[],
  fetch: (ref: ConfigRef) => Promise<(KubeObject & Record<string, unknown>) | undefined>,
): Promise<ResolvedAddonConfig[]> {
  const out: ResolvedAddonConfig[] = [];
  for (const ref of refs) {
    const obj = await fetch(ref);
    out.push({
      group: ref.group,
      resource: ref.resource,
      name: ref.name,
      ...(ref.namespace ? { namespace: ref.namespace } : {}),
      ...(obj ? { spec: obj['spec'] } : {}),
      // OCM's spec hash, as the install strategy writes it into desiredConfig
      ...(ref.specHash ? { specHash: ref.specHash } : obj ? { specHash: configSpecHash(obj) } : {}),
    });
  }
  return out;
}

/** The first AddOnDeploymentConfig among the configs, when it exists (OCM uses the first one). */
export function deploymentConfigOf(
  configs: readonly ResolvedAddonConfig[],
): AddOnDeploymentConfigSpec | undefined {
  const adc = configs.find(
    (c) =>
      c.group === addOnDeploymentConfigKind.group &&
      c.resource === addOnDeploymentConfigKind.resource &&
      c.spec !== undefined,
  );
  return adc?.spec as AddOnDeploymentConfigSpec | undefined;
}

/** AddOnDeploymentConfig.agentInstallNamespace when set, else spec.installNamespace, else OCM's default. */
export function installNamespaceOf(
  mca: ManagedClusterAddOn,
  config: AddOnDeploymentConfigSpec | undefined,
): string {
  return config?.agentInstallNamespace || mca.spec.installNamespace || defaultAddonInstallNamespace;
}

/** customizedVariables by name (a later entry of the same name wins). */
export function variablesOf(config: AddOnDeploymentConfigSpec | undefined): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const v of config?.customizedVariables ?? []) vars[v.name] = v.value ?? '';
  return vars;
}

/**
 * The ManifestWork annotation `open-cluster-management.io/config-spec-hash`: JSON (Go's, as OCM) of
 * `<resource>.<group>/<namespace>/<name>` → desiredConfig.specHash of the MCA's configReferences;
 * undefined when there are none (the Progressing check compares it with the MCA's).
 */
export function configSpecHashAnnotationValue(mca: ManagedClusterAddOn): string | undefined {
  const map = configHashMap(mca);
  return Object.keys(map).length > 0 ? goJson(map) : undefined;
}

export function configHashMap(mca: ManagedClusterAddOn): Record<string, string> {
  const map: Record<string, string> = {};
  for (const r of mca.status?.configReferences ?? []) {
    if (!r.desiredConfig) continue;
    const key = `${r.resource}.${r.group ?? ''}/${r.desiredConfig.namespace ?? ''}/${r.desiredConfig.name}`;
    map[key] = r.desiredConfig.specHash ?? '';
  }
  return map;
}

// Hosted mode of an add-on (OCM's hosted add-on, enhancement 63), the pure part: a
// ManagedClusterAddOn annotated `addon.open-cluster-management.io/hosting-cluster-name` runs its
// agent on that (hosting) cluster, which must be a managed cluster of this hub, and only add-ons
// that say they can (AgentAddon.hostedMode) are deployed that way. Each rendered manifest says
// where it goes by the hosted-manifest-location annotation (or its deprecated label): `managed`
// (default) → the managed cluster's works, `hosting` → works in the hosting cluster's namespace,
// `none` → nowhere. A value other than those is bad input: the render fails with its name.
//
// The install namespace on the hosting cluster is the hosted klusterlet's own namespace
// (`klusterlet-<cluster>`): that is where the cluster's hosted agent, whose Role reaches only its own
// namespace, writes the add-on's `<addon>-hub-kubeconfig` and `<addon>-managed-kubeconfig` Secrets,
// and no other cluster's add-ons run there. Another install namespace asked for is refused with
// why (OCM's default, `open-cluster-management-agent-addon`, counts as not asked). Pure.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { AddOnDeploymentConfigSpec, ManagedClusterAddOn } from '../../../api/addon.ts';
import { addonAgentNamespace, hostedAgentNamespace } from '../../../api/cluster.ts';
import type { ConditionUpdate } from '../../../kube/conditions.ts';
import {
  AddonConditionType,
  HostedManifestLocation,
  HostingClusterValidityReason,
  hostedManifestLocationKey,
} from '../addon-conditions.ts';

const locations = new Set<string>(Object.values(HostedManifestLocation));

/** Where `obj` goes in hosted mode; throws on a value OCM does not define. */
export function manifestLocation(obj: KubernetesObject): HostedManifestLocation {
  const value =
    obj.metadata?.annotations?.[hostedManifestLocationKey] ??
    obj.metadata?.labels?.[hostedManifestLocationKey];
  if (value === undefined || value === '') return HostedManifestLocation.Managed;
  if (!locations.has(value)) {
    throw new Error(
      `${obj.kind ?? 'object'} ${obj.metadata?.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata?.name ?? ''}: ${hostedManifestLocationKey}=${JSON.stringify(value).slice(0, 80)} is not one of managed, hosting, none`,
    );
  }
  return value as HostedManifestLocation;
}

/** The manifests split by where they go in hosted mode (`none` dropped), in their order. */
export function splitByLocation(objects: readonly KubernetesObject[]): {
  managed: KubernetesObject[];
  hosting: KubernetesObject[];
} {
  const managed: KubernetesObject[] = [];
  const hosting: KubernetesObject[] = [];
  for (const obj of objects) {
    const where = manifestLocation(obj);
    if (where === HostedManifestLocation.Managed) managed.push(obj);
    else if (where === HostedManifestLocation.Hosting) hosting.push(obj);
  }
  return { managed, hosting };
}

/**
 * The install namespace of a hosted add-on on its hosting cluster: always the hosted klusterlet's.
 * Throws when the add-on asks for another (a non-default spec.installNamespace or
 * agentInstallNamespace): there the hosted agent could not write its credentials, and the hosting
 * cluster's own add-ons (in OCM's default namespace) would be overwritten by the hosted one's.
 */
export function hostedInstallNamespace(
  mca: ManagedClusterAddOn,
  config: AddOnDeploymentConfigSpec | undefined,
): string {
  const own = hostedAgentNamespace(mca.metadata.namespace ?? '');
  const asked = [
    ['AddOnDeploymentConfig agentInstallNamespace', config?.agentInstallNamespace],
    ['spec.installNamespace', mca.spec.installNamespace],
  ] as const;
  for (const [field, value] of asked) {
    if (value && value !== addonAgentNamespace && value !== own)
      throw new Error(
        `hosted mode installs into ${own}, the hosted klusterlet's namespace on the hosting cluster; ${field} ${JSON.stringify(value).slice(0, 80)} cannot be honoured (remove it, or the hosting-cluster-name annotation)`,
      );
  }
  return own;
}

/** HostingClusterValidity as OCM words it: whether the hosting cluster is a managed cluster of the hub. */
export function hostingValidityCondition(valid: boolean, hosting: string): ConditionUpdate {
  return {
    type: AddonConditionType.HostingClusterValidity,
    status: valid ? 'True' : 'False',
    reason: valid ? HostingClusterValidityReason.Valid : HostingClusterValidityReason.Invalid,
    message: valid
      ? `hosting cluster ${hosting} is a managed cluster of the hub`
      : `hosting cluster ${hosting.slice(0, 253)} is not a managed cluster of the hub`,
  };
}

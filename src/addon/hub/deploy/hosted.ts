// Hosted mode of an add-on (OCM's hosted add-on, enhancement 63), the pure part: a
// ManagedClusterAddOn annotated `addon.open-cluster-management.io/hosting-cluster-name` runs its
// agent on that (hosting) cluster, which must be a managed cluster of this hub, and only add-ons
// that say they can (AgentAddon.hostedMode) are deployed that way. Each rendered manifest says
// where it goes by the hosted-manifest-location annotation (or its deprecated label): `managed`
// (default) → the managed cluster's works, `hosting` → works in the hosting cluster's namespace,
// `none` → nowhere. A value other than those is bad input: the render fails with its name.
//
// The install namespace on the hosting cluster is the hosted klusterlet's own namespace
// (`klusterlet-<cluster>`) unless an AddOnDeploymentConfig's agentInstallNamespace or a
// non-default spec.installNamespace names another: that is where the cluster's hosted agent, whose
// Role reaches only its own namespace, writes the add-on's `<addon>-hub-kubeconfig` and
// `<addon>-managed-kubeconfig` Secrets. Pure.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { AddOnDeploymentConfigSpec, ManagedClusterAddOn } from '../../../api/addon.ts';
import { addonAgentNamespace, hostedAgentNamespace } from '../../../api/cluster.ts';
import { HostedManifestLocation, hostedManifestLocationKey } from '../addon-conditions.ts';

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

/** The install namespace of a hosted add-on on its hosting cluster (see the header). */
export function hostedInstallNamespace(
  mca: ManagedClusterAddOn,
  config: AddOnDeploymentConfigSpec | undefined,
): string {
  const asked = mca.spec.installNamespace;
  return (
    config?.agentInstallNamespace ||
    (asked && asked !== addonAgentNamespace ? asked : hostedAgentNamespace(mca.metadata.namespace ?? ''))
  );
}

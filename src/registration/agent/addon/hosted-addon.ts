// Where the registration agent keeps an add-on's Secrets: on the managed cluster, or for a hosted
// add-on (OCM's hosting-cluster-name annotation) on the hosting cluster, in the hosted agent's own
// namespace (the only one its Role reaches), next to `<addon>-managed-kubeconfig`, the agent's own
// managed-cluster kubeconfig that a hosted add-on agent reads its cluster with (OCM's name). An agent
// that is not hosted cannot keep a hosted add-on's Secrets, nor can a hosted agent outside its
// namespace: both say why, for the add-on's status. Pure.
import {
  addonManagedKubeconfigSecretName,
  hostingClusterNameAnnotation,
  type ManagedClusterAddOn,
} from '../../../api/addon.ts';
import { addonInstallNamespace } from '../../../api/addon-registration.ts';
import type { Secret } from '../kinds.ts';

export type AddonSecretPlace = { where: 'managed' | 'hosting' } | { problem: string };

/**
 * Where `mca`'s Secrets go for the agent of `clusterName`; `hostedNamespace` is that agent's
 * namespace on its hosting cluster when it runs hosted, undefined otherwise.
 */
export function addonSecretPlace(
  mca: ManagedClusterAddOn,
  clusterName: string,
  hostedNamespace: string | undefined,
): AddonSecretPlace {
  const hostingName = mca.metadata.annotations?.[hostingClusterNameAnnotation];
  if (hostingName === undefined) return { where: 'managed' };
  const addon = mca.metadata.name ?? '';
  if (hostedNamespace === undefined)
    return {
      problem: `add-on ${addon} is asked to run on hosting cluster ${hostingName.slice(0, 253)}, but the klusterlet agent of ${clusterName} runs on ${clusterName} itself: join ${clusterName} with --mode hosted on the hosting cluster`,
    };
  const namespace = addonInstallNamespace(mca);
  if (namespace !== hostedNamespace)
    return {
      problem: `hosted add-on ${addon} has install namespace ${namespace.slice(0, 253)}; its Secrets can go only to the hosted agent's namespace ${hostedNamespace} on the hosting cluster`,
    };
  return { where: 'hosting' };
}

/** Secret `<addon>-managed-kubeconfig` (key kubeconfig) in `namespace`, labelled as the agent's. */
export function managedKubeconfigSecret(
  addon: string,
  namespace: string,
  kubeconfig: string,
  labels: Record<string, string>,
): Secret {
  return {
    metadata: { name: addonManagedKubeconfigSecretName(addon), namespace, labels },
    type: 'Opaque',
    data: { kubeconfig: Buffer.from(kubeconfig).toString('base64') },
  } as Secret;
}

// `tether init` as a flow: the objects a hub needs in order (CRDs, admission policies, bootstrap
// identity, then hub.ts's namespace, RBAC, certificates and Deployments), applied or returned for
// printing, and the wait for the Deployments and the APIService to become Available.
import { AppsV1Api, CoreV1Api, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { addonConfigAdmissionObjects, installAddonConfigAdmission } from '../addon/hub/config/admission.ts';
import { type AddonConversionWebhook, hubCrdManifests, hubCrds } from '../api/index.ts';
import { isNotFound } from '../kube/index.ts';
import { installCrds } from '../localenv/crds.ts';
import {
  installPlacementAdmission,
  placementAdmissionObjects,
} from '../placement/hub/clustersets-admission.ts';
import { bootstrapIdentityObjects } from '../registration/bootstrap.ts';
import { hubAdmissionObjects, installHubAdmission } from '../registration/hub/admission-policies.ts';
import { pollUntil } from '../wait.ts';
import { applyAll } from './apply.ts';
import { type HubInstallOptions, hubManifests } from './hub.ts';
import { hubPki, type SecretLookup } from './hub-pki.ts';
import { hubNames, hubNamespace, ports } from './names.ts';

export interface HubInstallPlan {
  /** everything, in apply order (CRDs and admission first) */
  objects: KubernetesObject[];
  proxyServerCaPem: string;
  /** where the addon CRDs send conversions: the hub controllers' Service, trusted by its own CA */
  addonConversionWebhook: AddonConversionWebhook;
}

/** The addon CRDs' conversion webhook in a cluster: OCM's Service name and port, our CA. */
export function inClusterAddonWebhook(caBundle: string): AddonConversionWebhook {
  return {
    service: { namespace: hubNamespace, name: hubNames.addonWebhook, port: ports.addonWebhook },
    caBundle,
  };
}

/** The hub's client CA: what the apiserver verifies client certificates (and so agents') with. */
export async function hubClientCaPem(kc: KubeConfig): Promise<string> {
  const cm = await kc.makeApiClient(CoreV1Api).readNamespacedConfigMap({
    name: 'extension-apiserver-authentication',
    namespace: 'kube-system',
  });
  const pem = cm.data?.['client-ca-file'];
  if (!pem)
    throw new Error(
      'kube-system/extension-apiserver-authentication has no client-ca-file: the hub apiserver runs without --client-ca-file, so agents cannot authenticate with certificates',
    );
  return pem;
}

export function secretLookup(kc: KubeConfig | undefined): SecretLookup {
  if (!kc) return async () => undefined;
  const core = kc.makeApiClient(CoreV1Api);
  return async (name) => {
    try {
      const s = await core.readNamespacedSecret({ name, namespace: hubNamespace });
      return Object.fromEntries(
        Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
      );
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
}

export async function planHubInstall(
  opts: Omit<HubInstallOptions, 'gatewayCaBundle'> & {
    proxyServerHosts: string[];
    agentCaPem: string;
    /** names or IPs the user-server is reached at besides its Service */
    userServerHosts?: string[];
  },
  lookup: SecretLookup,
): Promise<HubInstallPlan> {
  const pki = await hubPki({
    proxyServerHosts: opts.proxyServerHosts,
    agentCaPem: opts.agentCaPem,
    ...(opts.userServerHosts ? { userServerHosts: opts.userServerHosts } : {}),
    lookup,
  });
  const addonConversionWebhook = inClusterAddonWebhook(pki.addonWebhookCaBundle);
  const manifests = hubManifests({ ...opts, gatewayCaBundle: pki.gatewayCaBundle });
  // namespaces first, then the certificates the Deployments mount, then the rest
  const namespaces = manifests.filter((o) => o.kind === 'Namespace');
  const rest = manifests.filter((o) => o.kind !== 'Namespace');
  return {
    objects: [
      // the plain manifests (client-node's models print keys that are not the API's)
      ...(hubCrdManifests({ addonConversionWebhook }) as unknown as KubernetesObject[]),
      ...hubAdmissionObjects(),
      ...placementAdmissionObjects(),
      ...addonConfigAdmissionObjects(),
      ...bootstrapIdentityObjects(),
      ...namespaces,
      ...pki.objects,
      ...rest,
    ] as KubernetesObject[],
    proxyServerCaPem: pki.proxyServerCaPem,
    addonConversionWebhook,
  };
}

/** Applies a plan: CRDs (waiting until Established), admission (waiting until enforced), the rest. */
export async function applyHubInstall(kc: KubeConfig, plan: HubInstallPlan): Promise<void> {
  await installCrds(kc, hubCrds({ addonConversionWebhook: plan.addonConversionWebhook }));
  await installHubAdmission(kc);
  await installPlacementAdmission(kc);
  await installAddonConfigAdmission(kc);
  const rest = plan.objects.filter(
    (o) =>
      o.kind !== 'CustomResourceDefinition' &&
      o.kind !== 'ValidatingAdmissionPolicy' &&
      o.kind !== 'ValidatingAdmissionPolicyBinding',
  );
  await applyAll(kc, rest);
}

/** Waits until every hub Deployment has all replicas available (or throws saying which is not). */
export async function waitForHub(kc: KubeConfig, timeoutMs: number): Promise<void> {
  const apps = kc.makeApiClient(AppsV1Api);
  for (const name of [hubNames.controllers, hubNames.proxyServer, hubNames.gateway]) {
    let last = 'not found';
    await pollUntil(
      async () => {
        const d = await apps.readNamespacedDeployment({ name, namespace: hubNamespace });
        const want = d.spec?.replicas ?? 1;
        const ready = d.status?.availableReplicas ?? 0;
        last = `${ready}/${want} available`;
        return ready >= want && (d.status?.updatedReplicas ?? 0) >= want;
      },
      { timeoutMs, intervalMs: 500, description: `Deployment ${hubNamespace}/${name} to be available` },
    ).catch((err: Error) => {
      throw new Error(`${err.message} (${last}); see kubectl -n ${hubNamespace} describe deployment ${name}`);
    });
  }
}

// What the in-process add-on host (host.ts) hands a built-in add-on's agent, and what it expects back.
// One runner per add-on: cluster-proxy (proxy-runner.ts), managed-serviceaccount
// (serviceaccount-runner.ts). Types and the credential decoding both runners share; no I/O.
import type { KubeConfig } from '@kubernetes/client-node';
import { HubKubeconfigSecretKey } from '../../api/cluster.ts';
import { InvalidArgumentError } from '../../errors.ts';
import { kubeconfigFromParts, parseKubeconfigYaml } from '../../kube/kubeconfig.ts';
import { unb64 } from '../../registration/agent/kinds.ts';

/** The add-on's own hub credential, from Secret `<addon>-hub-kubeconfig` (decoded). */
export interface AddonCredential {
  certPem: string;
  keyPem: string;
  /** the Secret's kubeconfig (server, CA, proxy-url of the hub), for kube-apiserver-client add-ons */
  kubeconfigYaml?: string;
}

/** Everything one run of an add-on agent starts from. */
export interface HostedAddonInput {
  /** the install namespace (where the ConfigMap and the Secret are) */
  namespace: string;
  /** ConfigMap `<addon>-in-process` data: what the hub's options say */
  config: Readonly<Record<string, string>>;
  credential: AddonCredential;
}

/** A running add-on agent. */
export interface HostedAddon {
  /** whether the agent is well: its Lease is renewed only then */
  healthy(): boolean;
  /** take a new credential (rotation) without a restart, when the agent can */
  rotate?(credential: AddonCredential): Promise<void>;
  stop(): Promise<void>;
}

export type AddonRunner = (input: HostedAddonInput) => Promise<HostedAddon>;

/** The credential in a registration Secret's data (base64), or an error saying what is missing. */
export function credentialOf(data: Readonly<Record<string, string>> | undefined): AddonCredential {
  const text = (key: string) => unb64(data?.[key]);
  const certPem = text(HubKubeconfigSecretKey.TlsCert);
  const keyPem = text(HubKubeconfigSecretKey.TlsKey);
  if (!certPem || !keyPem) throw new InvalidArgumentError('the Secret has no tls.crt and tls.key yet');
  const kubeconfigYaml = text(HubKubeconfigSecretKey.Kubeconfig);
  return { certPem, keyPem, ...(kubeconfigYaml ? { kubeconfigYaml } : {}) };
}

/**
 * The add-on's hub KubeConfig: the Secret's kubeconfig (it names tls.crt / tls.key as files next to
 * it, where a pod mounts them) with the certificate and key in-line instead.
 */
export function addonHubKubeconfig(addon: string, credential: AddonCredential): KubeConfig {
  if (!credential.kubeconfigYaml) throw new InvalidArgumentError(`${addon}: the Secret has no kubeconfig`);
  const stored = parseKubeconfigYaml(credential.kubeconfigYaml, `Secret ${addon}-hub-kubeconfig`);
  const cluster = stored.getCurrentCluster();
  if (!cluster?.caData) throw new InvalidArgumentError(`${addon}: the Secret's kubeconfig has no hub CA`);
  return kubeconfigFromParts({
    name: addon,
    server: cluster.server,
    caPem: Buffer.from(cluster.caData, 'base64').toString('utf8'),
    certPem: credential.certPem,
    keyPem: credential.keyPem,
    ...(cluster.proxyUrl ? { proxyUrl: cluster.proxyUrl } : {}),
    ...(cluster.tlsServerName ? { tlsServerName: cluster.tlsServerName } : {}),
  });
}

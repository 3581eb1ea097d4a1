// Secret `hub-kubeconfig-secret` in the agent namespace on the managed cluster: the agent's own hub
// credential once the hub signed its CSR. Laid out exactly as OCM's registration agent writes it
// (keys kubeconfig, tls.crt, tls.key, cluster-name, agent-name; a kubeconfig with cluster
// `default-cluster`, user `default-auth` whose client-certificate / client-key are the relative
// paths `tls.crt` / `tls.key`, context `default-context`), so OCM's work agent and add-ons can mount
// the same secret. tether's agents read it from the API instead of a mount: loading puts the
// secret's tls.crt / tls.key into the in-memory kubeconfig. A secret written by tether before this
// layout (certificate embedded in the kubeconfig, other names) still loads. Owns building that
// kubeconfig, deciding whether a stored secret can be reused, and the agent name kept in it.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { agentNamespaceLabel, HubKubeconfigSecretKey, hubKubeconfigSecretName } from '../../api/index.ts';
import { errorMessage } from '../../errors.ts';
import {
  applyEnvProxy,
  checkKubeconfig,
  isAlreadyExists,
  isForbidden,
  kubeconfigToYaml,
  type ProxyEnv,
  ResourceClient,
} from '../../kube/index.ts';
import { certificateInfo } from '../../pki/index.ts';
import { agentSubject } from '../../tunnel/identity.ts';
import type { HubEndpoint } from './bootstrap-kubeconfig.ts';
import { b64, namespaceResource, type Secret, secretResource, unb64 } from './kinds.ts';

/** Field manager of everything the registration agent writes. */
export const fieldManager = 'registration-agent';

/** A hub credential the agent can use: client certificate, key and the kubeconfig around them. */
export interface HubCredentials {
  /** ready for hub calls (proxy from the environment applied) */
  kubeconfig: KubeConfig;
  /** the kubeconfig YAML as stored in the secret */
  kubeconfigYaml: string;
  /** the hub it points at, with the configured (not environment) proxy */
  hub: HubEndpoint;
  certPem: string;
  keyPem: string;
  /** hex serial of the client certificate */
  serial: string;
  notBefore: Date;
  notAfter: Date;
}

export interface Identity {
  clusterName: string;
  agentName: string;
}

/** Credentials from a freshly issued certificate: the kubeconfig points at the bootstrap hub. */
export function credentialsFromCertificate(
  hub: HubEndpoint,
  certPem: string,
  keyPem: string,
  identity: Identity,
  proxyEnv: ProxyEnv = process.env,
): HubCredentials {
  const stored = hubKubeconfigLayout(hub);
  const kubeconfigYaml = kubeconfigToYaml(stored);
  const checked = checkCertificate(certPem, keyPem, identity);
  if (typeof checked === 'string') throw new Error(`the hub issued an unusable certificate: ${checked}`);
  const { kubeconfig } = loadStored(kubeconfigYaml, proxyEnv, { certPem, keyPem });
  return { ...checked, kubeconfig, kubeconfigYaml, hub, certPem, keyPem };
}

/** Names OCM gives the cluster, user and context of the hub kubeconfig it stores. */
export const hubKubeconfigNames = {
  cluster: 'default-cluster',
  user: 'default-auth',
  context: 'default-context',
  /** the context namespace OCM writes (unused by the agents) */
  namespace: 'configuration',
} as const;

/**
 * The hub kubeconfig as OCM stores it: the hub server, CA and proxy from the bootstrap kubeconfig,
 * and a user whose certificate and key are the files tls.crt / tls.key next to the kubeconfig
 * where the secret is mounted (relative paths resolve against the kubeconfig's directory).
 */
export function hubKubeconfigLayout(hub: HubEndpoint): KubeConfig {
  const names = hubKubeconfigNames;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: names.cluster,
        server: hub.server,
        caData: b64(hub.caPem),
        skipTLSVerify: false,
        ...(hub.proxyUrl ? { proxyUrl: hub.proxyUrl } : {}),
        ...(hub.tlsServerName ? { tlsServerName: hub.tlsServerName } : {}),
      },
    ],
    users: [
      {
        name: names.user,
        certFile: HubKubeconfigSecretKey.TlsCert,
        keyFile: HubKubeconfigSecretKey.TlsKey,
      },
    ],
    contexts: [{ name: names.context, cluster: names.cluster, user: names.user, namespace: names.namespace }],
    currentContext: names.context,
  });
  return kc;
}

/**
 * The credentials in a stored hub kubeconfig secret, or why they cannot be reused: a key missing, a
 * different cluster or agent name, a certificate for another identity, expired, or not matching its
 * key, a kubeconfig that does not load, or (when `hub` is given) a different hub server.
 */
export function credentialsFromSecret(
  secret: Secret,
  identity: Identity,
  hub?: HubEndpoint,
  proxyEnv: ProxyEnv = process.env,
): HubCredentials | string {
  const data = secret.data ?? {};
  for (const key of Object.values(HubKubeconfigSecretKey)) {
    if (!data[key]) return `key "${key}" is missing`;
  }
  const clusterName = unb64(data[HubKubeconfigSecretKey.ClusterName]);
  const agentName = unb64(data[HubKubeconfigSecretKey.AgentName]);
  if (clusterName !== identity.clusterName) return `it is for cluster "${clusterName}"`;
  if (agentName !== identity.agentName) return `it is for agent "${agentName}"`;
  const certPem = unb64(data[HubKubeconfigSecretKey.TlsCert]);
  const keyPem = unb64(data[HubKubeconfigSecretKey.TlsKey]);
  const checked = checkCertificate(certPem, keyPem, identity);
  if (typeof checked === 'string') return checked;
  const kubeconfigYaml = unb64(data[HubKubeconfigSecretKey.Kubeconfig]);
  let loaded: { kubeconfig: KubeConfig; hub: HubEndpoint };
  try {
    // OCM's own secret points at tls.crt/tls.key files; the secret's keys are what counts.
    loaded = loadStored(kubeconfigYaml, proxyEnv, { certPem, keyPem });
  } catch (err) {
    return `its kubeconfig is unusable: ${errorMessage(err)}`;
  }
  if (hub && loaded.hub.server !== hub.server) {
    return `it is for hub ${loaded.hub.server}, the bootstrap kubeconfig names ${hub.server}`;
  }
  return { ...checked, ...loaded, kubeconfigYaml, certPem, keyPem };
}

function checkCertificate(
  certPem: string,
  keyPem: string,
  identity: Identity,
): Pick<HubCredentials, 'serial' | 'notBefore' | 'notAfter'> | string {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch (err) {
    return `tls.crt is not a certificate: ${errorMessage(err)}`;
  }
  const info = certificateInfo(certPem);
  const want = agentSubject(identity.clusterName, identity.agentName).commonName;
  if (info.commonName !== want) return `its certificate is for "${info.commonName}", not "${want}"`;
  if (Date.now() >= info.notAfter.getTime())
    return `its certificate expired at ${info.notAfter.toISOString()}`;
  try {
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) return 'tls.key does not belong to tls.crt';
  } catch (err) {
    return `tls.key is not a private key: ${errorMessage(err)}`;
  }
  return { serial: cert.serialNumber, notBefore: info.notBefore, notAfter: info.notAfter };
}

/** A stored kubeconfig ready for hub calls, and the hub endpoint it names (before the env proxy). */
function loadStored(
  yaml: string,
  env: ProxyEnv,
  client?: { certPem: string; keyPem: string },
): { kubeconfig: KubeConfig; hub: HubEndpoint } {
  const kc = new KubeConfig();
  kc.loadFromString(yaml);
  if (client) {
    const name = kc.getCurrentUser()?.name;
    kc.users = kc.users.map((u) =>
      u.name === name
        ? { ...u, certData: b64(client.certPem), keyData: b64(client.keyPem), certFile: '', keyFile: '' }
        : u,
    );
  }
  checkKubeconfig(kc, `secret ${hubKubeconfigSecretName}`);
  const cluster = kc.getCurrentCluster();
  const hub: HubEndpoint = {
    server: (cluster?.server ?? '').replace(/\/$/, ''),
    caPem: unb64(cluster?.caData),
    ...(cluster?.proxyUrl ? { proxyUrl: cluster.proxyUrl } : {}),
    ...(cluster?.tlsServerName ? { tlsServerName: cluster.tlsServerName } : {}),
  };
  if (!hub.caPem.includes('BEGIN CERTIFICATE')) throw new Error('no certificate-authority-data for the hub');
  applyEnvProxy(kc, env);
  return { kubeconfig: kc, hub };
}

/** The secret's data for these credentials. */
export function hubKubeconfigSecretData(creds: HubCredentials, identity: Identity): Record<string, string> {
  return {
    [HubKubeconfigSecretKey.Kubeconfig]: b64(creds.kubeconfigYaml),
    [HubKubeconfigSecretKey.TlsCert]: b64(creds.certPem),
    [HubKubeconfigSecretKey.TlsKey]: b64(creds.keyPem),
    [HubKubeconfigSecretKey.ClusterName]: b64(identity.clusterName),
    [HubKubeconfigSecretKey.AgentName]: b64(identity.agentName),
  };
}

/**
 * Creates the agent namespace if it is missing (an agent run by hand may not have one), labelled as
 * an agent's (no ManifestWork may touch it: src/work/agent/agent-boundary.ts), and labels one made
 * without the label. A hosted agent may neither read nor change namespaces on its hosting cluster
 * (its Role is its own namespace's): forbidden means the installer made and labelled it.
 */
export async function ensureAgentNamespace(
  kc: KubeConfig,
  namespace: string,
  signal?: AbortSignal,
): Promise<void> {
  const namespaces = new ResourceClient(kc, namespaceResource);
  const ignoreForbidden = (err: unknown): undefined => {
    if (!isForbidden(err)) throw err;
  };
  const labels = { [agentNamespaceLabel]: 'true' };
  const existing = await namespaces.get(namespace, undefined, { signal }).catch(ignoreForbidden);
  if (existing) {
    if (existing.metadata?.labels?.[agentNamespaceLabel] !== 'true')
      await namespaces
        .patchMerge(namespace, { metadata: { labels } }, undefined, { signal })
        .catch(ignoreForbidden);
    return;
  }
  await namespaces.create({ metadata: { name: namespace, labels } }, { signal }).catch((err: unknown) => {
    if (!isAlreadyExists(err) && !isForbidden(err)) throw err;
  });
}

/** Write (create or take over) the hub kubeconfig secret; creates the agent namespace if it is missing. */
export async function writeHubKubeconfigSecret(
  managed: KubeConfig,
  namespace: string,
  creds: HubCredentials,
  identity: Identity,
  signal?: AbortSignal,
): Promise<Secret> {
  await ensureAgentNamespace(managed, namespace, signal);
  const secrets = new ResourceClient<Secret>(managed, secretResource);
  return secrets.apply(
    {
      metadata: { name: hubKubeconfigSecretName, namespace },
      type: 'Opaque',
      data: hubKubeconfigSecretData(creds, identity),
    },
    { fieldManager, force: true, signal },
  );
}

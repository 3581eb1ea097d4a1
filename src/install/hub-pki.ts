// The certificates of an in-cluster hub, as Secrets `tether init` applies (and `--dry-run` prints):
//   - tether-proxy-server-ca: the CA agents trust for the proxy-server (ca.crt, ca.key); kept across
//     runs, since every joined agent holds its ca.crt;
//   - tether-proxy-server-tls: the proxy-server's serving certificate for its Service names and the
//     addresses agents dial (--proxy-server-host), reissued from that CA on every run (a new host
//     needs no re-join);
//   - tether-proxy-client-ca + tether-gateway-connect: hub services' client CA (never the CA that
//     signs agents) and the gateway's certificate from it (user system:tether:gateway);
//   - tether-gateway-tls: the gateway's serving certificate for the aggregator, kept across runs
//     (the APIService caBundle names its CA);
//   - tether-addon-webhook-tls: the addon conversion webhook's serving certificate (Service
//     cluster-manager-addon-webhook), kept across runs (the addon CRDs' caBundle names its CA);
//   - ConfigMap tether-agent-ca: the hub's client CA (kube-system/extension-apiserver-authentication
//     client-ca-file), which signs agents' hub certificates, so the proxy-server verifies agents with
//     the same CA the hub apiserver does.
// Generating here (not in the pods) keeps every Deployment's RBAC free of Secret writes.
import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import type { KubernetesObject } from '@kubernetes/client-node';
import { errorMessage } from '../errors.ts';
import { userServerServiceName } from '../gateway/user-server.ts';
import { meta } from '../kube/workload.ts';
import {
  type CertificateAuthority,
  certificateInfo,
  createCertificateAuthority,
  issueCertificate,
  loadCertificateAuthority,
} from '../pki/index.ts';
import { gatewayConnectUser, hubNames, hubNamespace } from './names.ts';

/** Reads a Secret's data (decoded) if it exists; `undefined` when absent or when nothing can be read (dry run). */
export type SecretLookup = (name: string) => Promise<Record<string, string> | undefined>;

export interface HubPki {
  objects: KubernetesObject[];
  /** base64 caBundle for the gateway's APIService */
  gatewayCaBundle: string;
  /** base64 caBundle for the addon CRDs' conversion webhook */
  addonWebhookCaBundle: string;
  /** PEM agents verify the proxy-server with (`tether join --proxy-server-ca-file`) */
  proxyServerCaPem: string;
}

function secret(name: string, data: Record<string, string>, component: string): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: meta(name, hubNamespace, component),
    type: data['tls.crt'] ? 'kubernetes.io/tls' : 'Opaque',
    stringData: data,
  } as KubernetesObject;
}

async function keptCa(lookup: SecretLookup, name: string, commonName: string): Promise<CertificateAuthority> {
  const found = await lookup(name);
  if (found?.['ca.crt'] && found['ca.key']) {
    try {
      return await loadCertificateAuthority(found['ca.crt'], found['ca.key']);
    } catch (err) {
      // e.g. the Helm chart's RSA CA: replacing it would cut off every agent that trusts it
      throw new Error(
        `Secret ${hubNamespace}/${name} holds a CA tether init cannot use (${errorMessage(err)}); was the hub installed with the Helm chart? Keep installing it with helm, or delete the Secret to start over (joined agents then need the new CA)`,
      );
    }
  }
  return createCertificateAuthority(commonName);
}

/** Service DNS names of `name` in the hub namespace, short to fully qualified. */
export function serviceNames(name: string, namespace = hubNamespace): string[] {
  return [name, `${name}.${namespace}`, `${name}.${namespace}.svc`, `${name}.${namespace}.svc.cluster.local`];
}

/** A kept serving certificate this close to expiry is replaced (with its CA) on the next run. */
const servingRenewBeforeMs = 30 * 24 * 3600 * 1000;

function expiresSoon(certPem: string): boolean {
  try {
    return certificateInfo(certPem).notAfter.getTime() - Date.now() < servingRenewBeforeMs;
  } catch {
    return true;
  }
}

/**
 * A serving certificate for Service `service` with a CA of its own, kept across runs as long as the
 * Secret holds all three keys and it is not about to expire: the API server trusts it through a
 * caBundle, which the same run writes again when the certificate is replaced.
 */
async function keptServing(
  lookup: SecretLookup,
  name: string,
  caCommonName: string,
  service: string,
  /** more names or IPs the certificate must cover (a kept one that does not is replaced) */
  extraHosts: string[] = [],
): Promise<Record<string, string>> {
  const kept = await lookup(name);
  const hosts = [...new Set([...serviceNames(service), ...extraHosts])];
  if (
    kept?.['ca.crt'] &&
    kept['tls.crt'] &&
    kept['tls.key'] &&
    !expiresSoon(kept['tls.crt']) &&
    covers(kept['tls.crt'], hosts)
  )
    return kept;
  const ca = await createCertificateAuthority(caCommonName);
  const cert = await issueCertificate(ca, {
    commonName: `${service}.${hubNamespace}.svc`,
    usage: 'server',
    dnsNames: hosts.filter((h) => !isIP(h)),
    ipAddresses: hosts.filter((h) => isIP(h)),
  });
  return { 'tls.crt': cert.certPem, 'tls.key': cert.keyPem, 'ca.crt': ca.certPem };
}

/** Whether the certificate names every host (DNS name or IP) in its subjectAltName. */
function covers(certPem: string, hosts: string[]): boolean {
  try {
    const cert = new X509Certificate(certPem);
    return hosts.every((h) => (isIP(h) ? cert.checkIP(h) : cert.checkHost(h)) !== undefined);
  } catch {
    return false;
  }
}

export async function hubPki(opts: {
  /** DNS names or IPs agents dial the proxy-server at (its certificate covers them) */
  proxyServerHosts: string[];
  /**
   * DNS names or IPs clients reach the user-server at besides its Service (the gateway's serving
   * certificate, which the user-server shares, covers them and Service cluster-proxy-addon-user)
   */
  userServerHosts?: string[];
  /** PEM of the CA that signs agents' hub client certificates */
  agentCaPem: string;
  lookup: SecretLookup;
}): Promise<HubPki> {
  const n = hubNames;
  const serverCa = await keptCa(opts.lookup, n.proxyServerCa, 'tether-proxy-server-ca');
  const hosts = [
    ...serviceNames(n.proxyServer),
    ...serviceNames(n.proxyServerAgents),
    ...opts.proxyServerHosts,
  ];
  const serving = await issueCertificate(serverCa, {
    commonName: n.proxyServer,
    usage: 'server',
    dnsNames: [...new Set(hosts.filter((h) => !isIP(h)))],
    ipAddresses: [...new Set(hosts.filter((h) => isIP(h)))],
  });
  const clientCa = await keptCa(opts.lookup, n.proxyClientCa, 'tether-proxy-client-ca');
  const connect = await issueCertificate(clientCa, { commonName: gatewayConnectUser, usage: 'client' });
  const gatewayTls = await keptServing(opts.lookup, n.gatewayTls, 'tether-gateway-serving-ca', n.gateway, [
    ...serviceNames(userServerServiceName),
    ...(opts.userServerHosts ?? []),
  ]);
  const addonWebhookTls = await keptServing(
    opts.lookup,
    n.addonWebhookTls,
    'tether-addon-webhook-serving-ca',
    n.addonWebhook,
  );
  return {
    objects: [
      secret(n.proxyServerCa, { 'ca.crt': serverCa.certPem, 'ca.key': serverCa.keyPem }, n.proxyServer),
      secret(
        n.proxyServerTls,
        { 'tls.crt': serving.certPem, 'tls.key': serving.keyPem, 'ca.crt': serverCa.certPem },
        n.proxyServer,
      ),
      secret(n.proxyClientCa, { 'ca.crt': clientCa.certPem, 'ca.key': clientCa.keyPem }, n.proxyServer),
      secret(
        n.gatewayConnect,
        { 'tls.crt': connect.certPem, 'tls.key': connect.keyPem, 'ca.crt': clientCa.certPem },
        n.gateway,
      ),
      secret(n.gatewayTls, gatewayTls, n.gateway),
      secret(n.addonWebhookTls, addonWebhookTls, n.controllers),
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: meta(n.agentCa, hubNamespace, n.proxyServer),
        data: { 'ca.crt': opts.agentCaPem },
      } as KubernetesObject,
    ],
    gatewayCaBundle: Buffer.from(gatewayTls['ca.crt'] ?? '').toString('base64'),
    addonWebhookCaBundle: Buffer.from(addonWebhookTls['ca.crt'] ?? '').toString('base64'),
    proxyServerCaPem: serverCa.certPem,
  };
}

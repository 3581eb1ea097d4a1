// Which forward proxy the tunnel takes when the agent is given none: the hub kubeconfig's own.
//
// A bootstrap kubeconfig made the OCM way for a firewalled network (`clusteradm join --proxy-url
// --proxy-ca-file`) carries the way out in the kubeconfig alone: `proxy-url`, and the proxy's CA
// appended to `certificate-authority-data`. Go clients verify the proxy hop with that same bundle.
// The tunnel to the proxy-server leaves the cluster the same way as the hub API calls, so without
// `--proxy-url` it follows the kubeconfig's `proxy-url`, and without `--proxy-ca-file` an https://
// proxy is verified against the kubeconfig's CA bundle next to Node's default CAs.
import { getCACertificates } from 'node:tls';

export interface ForwardProxyFlags {
  /** --proxy-url (wins) */
  proxyUrl?: string;
  /** --proxy-ca-file's PEM (wins) */
  proxyCaPem?: string;
}

export interface HubCluster {
  proxyUrl?: string;
  /** the kubeconfig's certificate-authority-data, PEM */
  caPem?: string;
}

export interface TunnelForwardProxy {
  /** undefined: HTTPS_PROXY / NO_PROXY decide, as before */
  proxyUrl?: string;
  proxyCa?: string | string[];
}

export function tunnelForwardProxy(
  flags: ForwardProxyFlags,
  hub: HubCluster | undefined,
): TunnelForwardProxy {
  const proxyUrl = flags.proxyUrl ?? hub?.proxyUrl;
  if (flags.proxyCaPem) return { proxyUrl, proxyCa: flags.proxyCaPem };
  const caPem = hub?.caPem;
  const fromKubeconfig = !flags.proxyUrl && hub?.proxyUrl?.startsWith('https:') && caPem;
  return fromKubeconfig ? { proxyUrl, proxyCa: [caPem, ...getCACertificates('default')] } : { proxyUrl };
}

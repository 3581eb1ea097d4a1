// The one format of a CONNECT frontend authority, written by whoever dials a cluster through the
// proxy-server's frontend (the gateway's dialer, hub services) and parsed by the frontend:
//   <cluster>:443                → that cluster's kube-apiserver (konnectivity's addressing)
//   <cluster>.open-cluster-management-agent-addon:443
//                                → the same (cluster-proxy's second agent identifier, host=<cluster>.<addon
//                                  install namespace>; parsed, never written)
//   <export>.<cluster>:<port>    → a service the cluster's agent exports under that name
// Both directions live here so the two ends cannot drift. Pure functions.
import { KUBE_APISERVER_TARGET } from './protocol.ts';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** cluster-proxy names a cluster's apiserver `<cluster>.<its add-on install namespace>` too (default one only). */
const CLUSTER_PROXY_NAMESPACE = 'open-cluster-management-agent-addon';

/** `kube-apiserver:443` in `cluster` → `<cluster>:443`; `<name>:<port>` → `<name>.<cluster>:<port>`. */
export function connectAuthority(cluster: string, target: string): string {
  const i = target.lastIndexOf(':');
  const name = target.slice(0, i);
  const port = target.slice(i + 1);
  return name === KUBE_APISERVER_TARGET ? `${cluster}:${port}` : `${name}.${cluster}:${port}`;
}

/** Maps a CONNECT authority to (cluster, logical target); undefined when malformed. */
export function parseConnectAuthority(authority: string): { cluster: string; target: string } | undefined {
  const m = /^([a-z0-9.-]{1,253}):(\d{1,5})$/.exec(authority);
  if (!m) return undefined;
  const host = m[1] as string;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  const labels = host.split('.');
  if (labels.length === 1 && DNS_LABEL.test(host)) {
    return port === 443 ? { cluster: host, target: `${KUBE_APISERVER_TARGET}:443` } : undefined;
  }
  if (labels.length === 2 && labels.every((l) => DNS_LABEL.test(l))) {
    const [name, cluster] = labels as [string, string];
    if (cluster === CLUSTER_PROXY_NAMESPACE)
      return port === 443 ? { cluster: name, target: `${KUBE_APISERVER_TARGET}:443` } : undefined;
    return { cluster, target: `${name}:${port}` };
  }
  return undefined;
}

// How a hub service on this machine reaches the managed clusters of a real-node `tether up` (hub
// components in the hub cluster): the proxy-server's CONNECT / gRPC frontend and cluster-proxy's
// user-server, both exposed as NodePorts on the hub node by `tether init`, plus a proxy-client
// certificate (user PROXY_CLIENT_USER, hub RBAC `get managedclusters/proxy` on every cluster — a
// local environment's hub-admin convenience, as `tether up --processes` hands out) and the CA files
// that verify both endpoints. Everything is written under the environment's state directory.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { TetherError } from '../errors.ts';
import { hubNames, hubNamespace } from '../install/names.ts';
import { issueCertificate, loadCertificateAuthority } from '../pki/index.ts';
import { grantManagedClusterProxy, PROXY_CLIENT_ROLE, PROXY_CLIENT_USER, writeFile } from './tunnel-stack.ts';

/** NodePorts on the hub node: the CONNECT / gRPC frontend, the user-server. */
export const CONNECT_NODE_PORT = 31090;
export const USER_SERVER_NODE_PORT = 31092;

/** `tether init` flags that expose both endpoints on the hub node at `hubNodeAddress`. */
export function hubServiceInitArgs(hubNodeAddress: string): string[] {
  return [
    `--connect-node-port=${CONNECT_NODE_PORT}`,
    `--user-server-host=${hubNodeAddress}`,
    `--user-server-node-port=${USER_SERVER_NODE_PORT}`,
  ];
}

export interface HubServicesInfo {
  /** https://<hub node>:<port>: HTTP CONNECT, HTTP/2 CONNECT and konnectivity's gRPC ProxyService */
  connectFrontendUrl: string;
  proxyClientCertPath: string;
  proxyClientKeyPath: string;
  /** verifies the frontend (the proxy-server's serving CA) */
  connectCaPath: string;
  /** https://<hub node>:<port>/<cluster>/…, bearer tokens passed through */
  userServerUrl: string;
  /** verifies the user-server (the gateway's serving CA) */
  userServerCaPath: string;
}

/** After `tether init` (with hubServiceInitArgs): the client certificate, its RBAC, the CA files. */
export async function hubServiceAccess(o: {
  hubKc: KubeConfig;
  hubNodeAddress: string;
  dir: string;
}): Promise<HubServicesInfo> {
  const core = o.hubKc.makeApiClient(CoreV1Api);
  const secretData = async (name: string, keys: string[]): Promise<string[]> => {
    const secret = await core.readNamespacedSecret({ name, namespace: hubNamespace });
    return keys.map((key) => {
      const value = secret.data?.[key];
      if (!value)
        throw new TetherError('TETHER_PROCESS_FAILED', `Secret ${hubNamespace}/${name} has no ${key}`);
      return Buffer.from(value, 'base64').toString('utf8');
    });
  };
  const [clientCaPem, clientCaKey] = await secretData(hubNames.proxyClientCa, ['ca.crt', 'ca.key']);
  const [serverCaPem] = await secretData(hubNames.proxyServerCa, ['ca.crt']);
  const [gatewayCaPem] = await secretData(hubNames.gatewayTls, ['ca.crt']);
  const ca = await loadCertificateAuthority(clientCaPem as string, clientCaKey as string);
  const client = await issueCertificate(ca, { commonName: PROXY_CLIENT_USER, usage: 'client' });
  await grantManagedClusterProxy(o.hubKc, PROXY_CLIENT_USER, PROXY_CLIENT_ROLE);
  return {
    connectFrontendUrl: `https://${o.hubNodeAddress}:${CONNECT_NODE_PORT}`,
    proxyClientCertPath: writeFile(o.dir, 'proxy-client.crt', client.certPem),
    proxyClientKeyPath: writeFile(o.dir, 'proxy-client.key', client.keyPem),
    connectCaPath: writeFile(o.dir, 'proxy-server-ca.crt', serverCaPem as string),
    userServerUrl: `https://${o.hubNodeAddress}:${USER_SERVER_NODE_PORT}`,
    userServerCaPath: writeFile(o.dir, 'user-server-ca.crt', gatewayCaPem as string),
  };
}

// Names of everything `tether init` / `tether join` (and the Helm charts) install, in one place so
// the manifests, the CLI and the tests agree. OCM's own names where OCM has one (namespaces, the
// agent's Secrets, the klusterlet-agent Deployment of OCM's singleton mode); tether-* otherwise.
import { agentNamespace, bootstrapHubKubeconfigSecretName, hubKubeconfigSecretName } from '../api/index.ts';

export const hubNamespace = 'open-cluster-management-hub';

/** Label on every object tether installs, with the component as value (unjoin / uninstall select by it). */
export { componentLabel, partOf, partOfLabel } from '../kube/workload.ts';
export { agentNamespace, bootstrapHubKubeconfigSecretName, hubKubeconfigSecretName };

export const hubNames = {
  controllers: 'tether-hub-controllers',
  proxyServer: 'tether-proxy-server',
  /** Service of the agent endpoint (NodePort / LoadBalancer / ClusterIP, by flag) */
  proxyServerAgents: 'tether-proxy-server-agents',
  gateway: 'tether-gateway',
  /** Secret: serving certificate of the proxy-server (tls.crt, tls.key, ca.crt) */
  proxyServerTls: 'tether-proxy-server-tls',
  /** Secret: the CA that signs the proxy-server's serving certificate (ca.crt, ca.key) */
  proxyServerCa: 'tether-proxy-server-ca',
  /** Secret: the CA hub services' client certificates come from (ca.crt, ca.key) */
  proxyClientCa: 'tether-proxy-client-ca',
  /** Secret: the gateway's client certificate on the CONNECT frontend */
  gatewayConnect: 'tether-gateway-connect',
  /** Secret: the gateway's serving certificate for the aggregator (tls.crt, tls.key, ca.crt) */
  gatewayTls: 'tether-gateway-tls',
  /** ConfigMap: the CA that signs agents' hub client certificates (from the hub's client CA) */
  agentCa: 'tether-agent-ca',
  /** Service of the addon conversion webhook (`tether hub`): OCM's name, which its CRDs point at */
  addonWebhook: 'cluster-manager-addon-webhook',
  /** Secret: the addon conversion webhook's serving certificate (tls.crt, tls.key, ca.crt) */
  addonWebhookTls: 'tether-addon-webhook-tls',
} as const;

/** The user of the gateway's client certificate on the CONNECT frontend (hub RBAC names it). */
export const gatewayConnectUser = 'system:tether:gateway';

export const agentNames = {
  /** OCM's singleton-mode klusterlet Deployment */
  deployment: 'klusterlet-agent',
  serviceAccount: 'klusterlet-agent-sa',
  /** Secret: the CA that verifies the hub's proxy-server (ca.crt) */
  proxyServerCa: 'tether-proxy-server-ca',
  /** Secret: the CA bundle of an https:// forward proxy (ca.crt) */
  forwardProxyCa: 'tether-forward-proxy-ca',
} as const;

/** Ports inside the pods (Services map to them). */
export const ports = {
  proxyServerConnect: 8090,
  proxyServerAgents: 8091,
  proxyServerOps: 8092,
  gateway: 9443,
  /** the user-server in the gateway's pod (OCM's port, as Service cluster-proxy-addon-user has it) */
  userServer: 9092,
  gatewayOps: 8097,
  controllersOps: 8096,
  /** the addon conversion webhook in the hub controllers' pod (OCM's port) */
  addonWebhook: 9443,
  agentOps: 8095,
} as const;

// What `tether init` installs on a hub besides the CRDs, admission policies and bootstrap identity:
// the namespace open-cluster-management-hub with three Deployments — the hub controllers
// (`tether hub`, leader-elected, every replica also serving the addon conversion webhook behind
// Service cluster-manager-addon-webhook, and offering tether's built-in addons with its own image
// as their agents' image and, given the agent endpoint's address, cluster-proxy verified by the
// proxy-server CA), the proxy-server (agents' tunnels + the CONNECT frontend) and the
// gateway (the ClusterGateway aggregated API) — their ServiceAccounts and RBAC (hub-rbac.ts), the
// Services, and the APIService v1alpha1.cluster.core.oam.dev pointing at the gateway's Service.
// Certificates come from Secrets (hub-pki.ts); this file only names them. Pure data.

import type { KubernetesObject } from '@kubernetes/client-node';
import { signingCaNamespace } from '../addon/hub/template/agent.ts';
import {
  consoleViewerRbac,
  defaultCredentialNamespace,
  gatewayApiServiceName,
  gatewayGroup,
  gatewayVersion,
  userServerServiceName,
} from '../gateway/index.ts';
import { deployment, type ImageOptions, labels, meta } from '../kube/workload.ts';
import { hubRbac } from './hub-rbac.ts';
import { hubNames, hubNamespace, ports } from './names.ts';

export type AgentEndpointType = 'NodePort' | 'LoadBalancer' | 'ClusterIP';
export const agentEndpointTypes: readonly AgentEndpointType[] = ['NodePort', 'LoadBalancer', 'ClusterIP'];

export interface HubInstallOptions extends ImageOptions {
  /** replicas of each Deployment (the controllers elect a leader; proxy-servers each hold a tunnel per agent) */
  replicas: number;
  /** how agents reach the proxy-server: cluster-proxy's choices */
  agentEndpoint: { type: AgentEndpointType; nodePort?: number };
  /** base64 of the CA that signed the gateway's serving certificate (APIService caBundle) */
  gatewayCaBundle: string;
  /**
   * host:port of the agent endpoint as managed clusters reach it: the cluster-proxy addon's agents
   * dial it (verified by the tether-proxy-server-ca). Without it cluster-proxy is not offered.
   */
  clusterProxyServer?: string;
  /**
   * how clients reach the user-server (Service cluster-proxy-addon-user): its nodePort (type
   * NodePort) or none (ClusterIP), and the URL ManagedServiceAccount kubeconfigs name (default the
   * Service's in-cluster URL)
   */
  userServer?: { nodePort?: number; url?: string };
  /** nodePort of the CONNECT / gRPC frontend (Service tether-proxy-server becomes NodePort); default ClusterIP */
  connectNodePort?: number;
}

/** The in-cluster URL of the user-server (cluster-proxy's Service name and port). */
export const userServerInClusterUrl = `https://${userServerServiceName}.${hubNamespace}.svc:${ports.userServer}`;

const mountDir = '/etc/tether';

function service(name: string, component: string, spec: Record<string, unknown>): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(name, hubNamespace, component),
    spec,
  } as KubernetesObject;
}

function serviceAccount(name: string): KubernetesObject {
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: meta(name, hubNamespace, name),
  } as KubernetesObject;
}

/** The in-cluster URL of the CONNECT frontend (hub services dial managed clusters through it). */
export const connectFrontendUrl = `https://${hubNames.proxyServer}.${hubNamespace}.svc:${ports.proxyServerConnect}`;

export function hubManifests(o: HubInstallOptions): KubernetesObject[] {
  const n = hubNames;
  const image = { image: o.image, imagePullPolicy: o.imagePullPolicy };
  const ns = (name: string): KubernetesObject =>
    ({ apiVersion: 'v1', kind: 'Namespace', metadata: meta(name, undefined, 'hub') }) as KubernetesObject;
  const endpoint = o.agentEndpoint;
  return [
    ns(hubNamespace),
    ns(defaultCredentialNamespace),
    // template add-ons' custom signer CAs (src/addon/hub/template)
    ns(signingCaNamespace),
    serviceAccount(n.controllers),
    serviceAccount(n.proxyServer),
    serviceAccount(n.gateway),
    ...hubRbac(),
    deployment({
      ...image,
      name: n.controllers,
      namespace: hubNamespace,
      serviceAccount: n.controllers,
      replicas: o.replicas,
      opsPort: ports.controllersOps,
      ports: [{ name: 'webhook', containerPort: ports.addonWebhook }],
      args: [
        'hub',
        `--ops-port=${ports.controllersOps}`,
        '--ops-bind-address=0.0.0.0',
        '--webhook-bind-address=0.0.0.0',
        `--webhook-port=${ports.addonWebhook}`,
        `--webhook-tls-cert-file=${mountDir}/webhook-tls/tls.crt`,
        `--webhook-tls-private-key-file=${mountDir}/webhook-tls/tls.key`,
        // the built-in addons' agents run the hub's own image
        `--addon-image=${o.image}`,
        `--addon-image-pull-policy=${o.imagePullPolicy}`,
        ...(o.clusterProxyServer
          ? [
              `--cluster-proxy-server=${o.clusterProxyServer}`,
              `--cluster-proxy-ca-file=${mountDir}/proxy-server-ca/ca.crt`,
            ]
          : []),
        // ManagedServiceAccount token Secrets get a kubeconfig for the user-server (the gateway's CA)
        `--user-server-url=${o.userServer?.url ?? userServerInClusterUrl}`,
        `--user-server-ca-file=${mountDir}/user-server-ca/ca.crt`,
      ],
      mounts: [
        {
          kind: 'Secret',
          name: n.addonWebhookTls,
          mountPath: `${mountDir}/webhook-tls`,
          items: ['tls.crt', 'tls.key'],
        },
        { kind: 'Secret', name: n.gatewayTls, mountPath: `${mountDir}/user-server-ca`, items: ['ca.crt'] },
        ...(o.clusterProxyServer
          ? [
              {
                kind: 'Secret' as const,
                name: n.proxyServerCa,
                mountPath: `${mountDir}/proxy-server-ca`,
                items: ['ca.crt'],
              },
            ]
          : []),
      ],
    }),
    // OCM's Service name and port: the addon CRDs' conversion webhook (src/api/addon.ts)
    service(n.addonWebhook, n.controllers, {
      type: 'ClusterIP',
      selector: { app: n.controllers },
      ports: [{ name: 'webhook', port: ports.addonWebhook, targetPort: 'webhook' }],
    }),
    deployment({
      ...image,
      name: n.proxyServer,
      namespace: hubNamespace,
      serviceAccount: n.proxyServer,
      replicas: o.replicas,
      opsPort: ports.proxyServerOps,
      ports: [
        { name: 'connect', containerPort: ports.proxyServerConnect },
        { name: 'agents', containerPort: ports.proxyServerAgents },
      ],
      args: [
        'proxy-server',
        '--server-id=$(TETHER_POD_NAME)',
        `--server-count=${o.replicas}`,
        '--bind-address=0.0.0.0',
        `--agent-port=${ports.proxyServerAgents}`,
        `--connect-port=${ports.proxyServerConnect}`,
        `--ops-port=${ports.proxyServerOps}`,
        `--tls-cert-file=${mountDir}/tls/tls.crt`,
        `--tls-key-file=${mountDir}/tls/tls.key`,
        `--agent-ca-file=${mountDir}/agent-ca/ca.crt`,
        `--proxy-client-ca-file=${mountDir}/proxy-client-ca/ca.crt`,
      ],
      mounts: [
        {
          kind: 'Secret',
          name: n.proxyServerTls,
          mountPath: `${mountDir}/tls`,
          items: ['tls.crt', 'tls.key'],
        },
        { kind: 'ConfigMap', name: n.agentCa, mountPath: `${mountDir}/agent-ca` },
        {
          kind: 'Secret',
          name: n.proxyClientCa,
          mountPath: `${mountDir}/proxy-client-ca`,
          items: ['ca.crt'],
        },
      ],
    }),
    service(n.proxyServer, n.proxyServer, {
      type: o.connectNodePort ? 'NodePort' : 'ClusterIP',
      selector: { app: n.proxyServer },
      ports: [
        {
          name: 'connect',
          port: ports.proxyServerConnect,
          targetPort: 'connect',
          ...(o.connectNodePort ? { nodePort: o.connectNodePort } : {}),
        },
      ],
    }),
    service(n.proxyServerAgents, n.proxyServer, {
      type: endpoint.type,
      selector: { app: n.proxyServer },
      ports: [
        {
          name: 'agents',
          port: ports.proxyServerAgents,
          targetPort: 'agents',
          ...(endpoint.type === 'NodePort' && endpoint.nodePort ? { nodePort: endpoint.nodePort } : {}),
        },
      ],
    }),
    deployment({
      ...image,
      name: n.gateway,
      namespace: hubNamespace,
      serviceAccount: n.gateway,
      replicas: o.replicas,
      opsPort: ports.gatewayOps,
      ports: [
        { name: 'https', containerPort: ports.gateway },
        { name: 'user-server', containerPort: ports.userServer },
      ],
      args: [
        'gateway',
        '--bind-address=0.0.0.0',
        `--port=${ports.gateway}`,
        // cluster-proxy's user-server, on the gateway's serving certificate (it names the Service)
        `--user-server-port=${ports.userServer}`,
        `--tls-cert-file=${mountDir}/tls/tls.crt`,
        `--tls-key-file=${mountDir}/tls/tls.key`,
        `--connect-url=${connectFrontendUrl}`,
        `--connect-ca-file=${mountDir}/connect-ca/ca.crt`,
        `--connect-cert-file=${mountDir}/connect/tls.crt`,
        `--connect-key-file=${mountDir}/connect/tls.key`,
        `--ops-port=${ports.gatewayOps}`,
        '--ops-bind-address=0.0.0.0',
      ],
      mounts: [
        { kind: 'Secret', name: n.gatewayTls, mountPath: `${mountDir}/tls`, items: ['tls.crt', 'tls.key'] },
        { kind: 'Secret', name: n.proxyServerTls, mountPath: `${mountDir}/connect-ca`, items: ['ca.crt'] },
        {
          kind: 'Secret',
          name: n.gatewayConnect,
          mountPath: `${mountDir}/connect`,
          items: ['tls.crt', 'tls.key'],
        },
      ],
    }),
    service(n.gateway, n.gateway, {
      type: 'ClusterIP',
      selector: { app: n.gateway },
      ports: [{ name: 'https', port: 443, targetPort: 'https' }],
    }),
    // OCM's name and port for cluster-proxy's user-server
    service(userServerServiceName, n.gateway, {
      type: o.userServer?.nodePort ? 'NodePort' : 'ClusterIP',
      selector: { app: n.gateway },
      ports: [
        {
          name: 'user-server',
          port: ports.userServer,
          targetPort: 'user-server',
          ...(o.userServer?.nodePort ? { nodePort: o.userServer.nodePort } : {}),
        },
      ],
    }),
    {
      apiVersion: 'apiregistration.k8s.io/v1',
      kind: 'APIService',
      metadata: meta(gatewayApiServiceName, undefined, n.gateway),
      spec: {
        group: gatewayGroup,
        version: gatewayVersion,
        groupPriorityMinimum: 1000,
        versionPriority: 15,
        service: { namespace: hubNamespace, name: n.gateway, port: 443 },
        caBundle: o.gatewayCaBundle,
      },
    } as KubernetesObject,
    // every hub user may load the console's static files from the gateway (public, no data)
    ...(consoleViewerRbac(labels(n.gateway)) as KubernetesObject[]),
  ];
}

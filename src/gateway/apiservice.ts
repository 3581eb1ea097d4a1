// Registering the gateway with the hub aggregator: Namespace + Service + APIService
// v1alpha1.cluster.core.oam.dev (caBundle = the CA of the gateway's serving certificate), and a
// serving certificate for `<service>.<namespace>.svc`, the name the aggregator verifies. The local
// environment points the Service at localhost (ExternalName); a cluster deployment points it at the
// gateway's pods with a selector instead (pass `externalName: undefined` and a `selector`).
// With the APIService comes the ClusterRole tether:console-viewer (rbac.ts consoleViewerRbac): the
// console's static files the gateway serves are open to every authenticated hub user. It is left
// in place on unregister (shared, harmless without a gateway: it names only `console`).
import type { KubeConfig } from '@kubernetes/client-node';
import { errorMessage } from '../errors.ts';
import {
  apiServiceResource,
  clusterRoleBindingResource,
  clusterRoleResource,
  type KubeObject,
  namespaceResource,
  ResourceClient,
  serviceResource,
} from '../kube/index.ts';
import { createCertificateAuthority, issueCertificate } from '../pki/index.ts';
import { pollUntil } from '../wait.ts';
import { consoleViewerRbac } from './rbac.ts';
import { gatewayApiServiceName, gatewayGroup, gatewayVersion } from './types.ts';

const fieldManager = 'tether-gateway';

interface ApiService extends KubeObject {
  spec?: Record<string, unknown>;
  status?: { conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

export interface ApiServiceRegistration {
  namespace: string;
  serviceName: string;
  /** the port the aggregator connects to (the gateway's port for ExternalName localhost) */
  port: number;
  /** PEM of the CA that signed the gateway's serving certificate */
  caPem: string;
  /** ExternalName target (default localhost); undefined with `selector` for an in-cluster Service */
  externalName?: string;
  selector?: Record<string, string>;
  /** how long to wait for the APIService to turn Available (default 60 s; 0 = do not wait) */
  timeoutMs?: number;
}

/** A serving certificate for the name the aggregator dials, with its own CA (for the caBundle). */
export async function issueGatewayServingCertificate(opts: {
  namespace: string;
  serviceName: string;
}): Promise<{ caPem: string; certPem: string; keyPem: string }> {
  const ca = await createCertificateAuthority('tether-gateway-serving-ca');
  const svc = `${opts.serviceName}.${opts.namespace}.svc`;
  const serving = await issueCertificate(ca, {
    commonName: svc,
    usage: 'server',
    dnsNames: [svc, `${svc}.cluster.local`, 'localhost'],
    ipAddresses: ['127.0.0.1'],
  });
  return { caPem: ca.certPem, ...serving };
}

/** Creates or updates Namespace, Service and APIService; waits until the APIService is Available. */
export async function registerGatewayApiService(
  hubKubeConfig: KubeConfig,
  reg: ApiServiceRegistration,
): Promise<void> {
  const namespaces = new ResourceClient(hubKubeConfig, namespaceResource);
  const services = new ResourceClient(hubKubeConfig, serviceResource);
  const apiServices = new ResourceClient<ApiService>(hubKubeConfig, apiServiceResource);
  await namespaces.apply({ metadata: { name: reg.namespace } }, { fieldManager, force: true });
  const useSelector = reg.selector !== undefined;
  await services.apply(
    {
      metadata: { name: reg.serviceName, namespace: reg.namespace },
      spec: useSelector
        ? {
            type: 'ClusterIP',
            selector: reg.selector,
            ports: [{ name: 'https', port: reg.port, protocol: 'TCP' }],
          }
        : {
            type: 'ExternalName',
            externalName: reg.externalName ?? 'localhost',
            ports: [{ name: 'https', port: reg.port, protocol: 'TCP' }],
          },
    } as KubeObject,
    { fieldManager, force: true },
  );
  await apiServices.apply(
    {
      metadata: { name: gatewayApiServiceName },
      spec: {
        group: gatewayGroup,
        version: gatewayVersion,
        groupPriorityMinimum: 1000,
        versionPriority: 15,
        service: { namespace: reg.namespace, name: reg.serviceName, port: reg.port },
        caBundle: Buffer.from(reg.caPem).toString('base64'),
      },
    },
    { fieldManager, force: true },
  );
  const [role, binding] = consoleViewerRbac();
  await new ResourceClient(hubKubeConfig, clusterRoleResource).apply(role as KubeObject, {
    fieldManager,
    force: true,
  });
  await new ResourceClient(hubKubeConfig, clusterRoleBindingResource).apply(binding as KubeObject, {
    fieldManager,
    force: true,
  });
  const timeoutMs = reg.timeoutMs ?? 60_000;
  if (timeoutMs <= 0) return;
  let last = '';
  await pollUntil(
    async () => {
      const svc = await apiServices.get(gatewayApiServiceName);
      const available = svc?.status?.conditions?.find((c) => c.type === 'Available');
      last = available
        ? `${available.reason ?? ''}: ${available.message ?? ''}`
        : 'no Available condition yet';
      return available?.status === 'True';
    },
    { timeoutMs, intervalMs: 250, description: `APIService ${gatewayApiServiceName} to be Available` },
  ).catch((err: unknown) => {
    throw new Error(`${errorMessage(err)}; last condition: ${last}`);
  });
}

/** Removes the APIService and the Service (the namespace stays: it may hold other things). */
export async function unregisterGatewayApiService(
  hubKubeConfig: KubeConfig,
  reg: { namespace: string; serviceName: string },
): Promise<void> {
  await new ResourceClient(hubKubeConfig, apiServiceResource).delete(gatewayApiServiceName, undefined, {
    ignoreNotFound: true,
  });
  await new ResourceClient(hubKubeConfig, serviceResource).delete(reg.serviceName, reg.namespace, {
    ignoreNotFound: true,
  });
}

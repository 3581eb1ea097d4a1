// Cluster DNS for a real node: CoreDNS (hack/coredns, packed by node-images.ts) as the Deployment
// `coredns` behind the Service `kube-dns` in kube-system at a fixed ClusterIP, so pods resolve
// Service names (`<svc>`, `<svc>.<ns>.svc`, `kubernetes.default.svc.cluster.local`) as on any
// cluster. Owns the manifests and the wait until a query through the Service answers; the kubelet
// side (clusterDNS, clusterDomain) is in node-configs.ts. Nothing here leaves the control plane's
// objects: the Deployment's pod dies with the node, the objects with the control plane.
import { CoreV1Api, type KubeConfig, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import { TimeoutError } from '../errors.ts';
import { applyObjects } from '../kube/index.ts';
import { pollUntil } from '../wait.ts';
import { runInNetns } from './node-command.ts';

/**
 * The `kube-dns` Service's ClusterIP, the kubelet's clusterDNS. Inside the control plane's service
 * range (10.0.0.0/24, controlplane.ts) and in its lower band (the first 16 addresses), which the
 * apiserver hands out dynamically only when the rest is used up, so no other Service takes it first.
 */
export const CLUSTER_DNS_IP = '10.0.0.10';
export const CLUSTER_DOMAIN = 'cluster.local';
export const DNS_NAMESPACE = 'kube-system';
export const DNS_DEPLOYMENT = 'coredns';
export const DNS_SERVICE = 'kube-dns';
/** The port CoreDNS listens on in its pod: unprivileged, so it runs as nobody without capabilities. */
export const DNS_POD_PORT = 1053;
const FIELD_MANAGER = 'tether-node';
const LABELS = { 'k8s-app': 'kube-dns' };

/**
 * The Corefile. Every name outside the cluster zones gets NXDOMAIN at once, as an upstream resolver
 * would answer for a name that does not exist: there is no upstream to forward to (a node namespace
 * reaches nothing but its host end), and a refusal would make clients report "server misbehaving" /
 * EAI_AGAIN for a mistyped Service name, since the bare name is the last one the search path tries.
 * Reverse zones answer for Service and pod addresses, NXDOMAIN for the rest.
 */
export function corefile(domain = CLUSTER_DOMAIN): string {
  return `${domain}:${DNS_POD_PORT} in-addr.arpa:${DNS_POD_PORT} ip6.arpa:${DNS_POD_PORT} {
    errors
    health :8080
    ready :8181
    kubernetes ${domain} in-addr.arpa ip6.arpa {
        pods insecure
        ttl 30
    }
    cache 30
    loadbalance
}
.:${DNS_POD_PORT} {
    errors
    template ANY ANY {
        rcode NXDOMAIN
    }
}
`;
}

/** Everything cluster DNS needs, in apply order: identity, RBAC, Corefile, Deployment, Service. */
export function clusterDnsObjects(image: string): KubernetesObject[] {
  const meta = (name: string): { name: string; namespace: string; labels: Record<string, string> } => ({
    name,
    namespace: DNS_NAMESPACE,
    labels: LABELS,
  });
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(DNS_DEPLOYMENT) },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'system:coredns', labels: LABELS },
      // `pods insecure` answers pod A records from the name alone: no pod watch (only `verified` has one)
      rules: [
        { apiGroups: [''], resources: ['services', 'namespaces'], verbs: ['list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    } as KubernetesObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system:coredns', labels: LABELS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
      subjects: [{ kind: 'ServiceAccount', name: DNS_DEPLOYMENT, namespace: DNS_NAMESPACE }],
    } as KubernetesObject,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: meta(DNS_DEPLOYMENT),
      data: { Corefile: corefile() },
    } as KubernetesObject,
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(DNS_DEPLOYMENT),
      spec: {
        replicas: 1,
        selector: { matchLabels: LABELS },
        template: {
          metadata: { labels: LABELS },
          spec: {
            serviceAccountName: DNS_DEPLOYMENT,
            priorityClassName: 'system-cluster-critical',
            // CoreDNS resolves nothing itself; it must not point at its own Service
            dnsPolicy: 'Default',
            // no lame duck to wait for: the node's one DNS pod goes when the node goes
            terminationGracePeriodSeconds: 2,
            tolerations: [{ key: 'CriticalAddonsOnly', operator: 'Exists' }],
            containers: [
              {
                name: 'coredns',
                image,
                // no registry: the node imported the image
                imagePullPolicy: 'Never',
                args: ['-conf', '/etc/coredns/Corefile'],
                ports: [
                  { name: 'dns', containerPort: DNS_POD_PORT, protocol: 'UDP' },
                  { name: 'dns-tcp', containerPort: DNS_POD_PORT, protocol: 'TCP' },
                ],
                resources: { requests: { cpu: '50m', memory: '32Mi' }, limits: { memory: '170Mi' } },
                // `ready` answers 200 once the kubernetes plugin has synced its caches
                readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 1 },
                livenessProbe: {
                  httpGet: { path: '/health', port: 8080 },
                  initialDelaySeconds: 10,
                  periodSeconds: 10,
                  failureThreshold: 5,
                },
                securityContext: {
                  runAsNonRoot: true,
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                },
                volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
              },
            ],
            volumes: [{ name: 'config', configMap: { name: DNS_DEPLOYMENT } }],
          },
        },
      },
    } as KubernetesObject,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { ...meta(DNS_SERVICE), labels: { ...LABELS, 'kubernetes.io/name': 'CoreDNS' } },
      spec: {
        selector: LABELS,
        clusterIP: CLUSTER_DNS_IP,
        ports: [
          { name: 'dns', port: 53, targetPort: DNS_POD_PORT, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53, targetPort: DNS_POD_PORT, protocol: 'TCP' },
        ],
      },
    } as KubernetesObject,
  ];
}

/**
 * Resolves `name` (A records) by asking `server` directly from inside the network namespace
 * `netns`, as a pod there would; rejects with the resolver's code in the message (ENOTFOUND for
 * NXDOMAIN, EREFUSED, ETIMEOUT, …).
 */
export async function resolveInNetns(netns: string, server: string, name: string): Promise<string[]> {
  // node's resolver (c-ares) with one try of 1 s: a poll around it retries, not the resolver
  const script = `const r=new (require('node:dns').promises.Resolver)({timeout:1000,tries:1});r.setServers([${JSON.stringify(server)}]);r.resolve4(${JSON.stringify(name)}).then(a=>process.stdout.write(a.join('\\n')),e=>{process.stderr.write(String(e.code));process.exit(1)})`;
  const { stdout } = await runInNetns(netns, process.execPath, ['-e', script]);
  return stdout.split('\n').filter(Boolean);
}

export interface DeployClusterDnsOptions {
  kc: KubeConfig;
  image: string;
  /** the node's network namespace, where the test query is made from */
  netns: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /** throws when a node process died meanwhile */
  alive?: () => void;
}

/**
 * Applies the cluster DNS objects (server-side apply: a second node start on the same control
 * plane changes nothing) and resolves once the CoreDNS pod is Ready and a query for
 * `kubernetes.default.svc.<domain>` through the Service's ClusterIP from the node's namespace
 * answers with the `kubernetes` Service's address, i.e. kube-proxy has programmed the Service too.
 */
export async function deployClusterDns(o: DeployClusterDnsOptions): Promise<void> {
  await applyObjects(o.kc, clusterDnsObjects(o.image), FIELD_MANAGER);
  const core = o.kc.makeApiClient(CoreV1Api);
  let lastPod: V1Pod | undefined;
  await pollUntil(
    async () => {
      o.alive?.();
      const pods = await core.listNamespacedPod({
        namespace: DNS_NAMESPACE,
        labelSelector: 'k8s-app=kube-dns',
      });
      lastPod = pods.items[0];
      return pods.items.some((p) =>
        p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      );
    },
    { timeoutMs: o.timeoutMs, intervalMs: 200, signal: o.signal, description: 'the CoreDNS pod to be Ready' },
  ).catch((err: Error) => {
    if (o.signal?.aborted) throw err;
    throw new TimeoutError(`${err.message}; pod: ${describePod(lastPod)}`);
  });
  const kubernetesIp = (await core.readNamespacedService({ name: 'kubernetes', namespace: 'default' })).spec
    ?.clusterIP;
  const name = `kubernetes.default.svc.${CLUSTER_DOMAIN}`;
  await pollUntil(
    async () => {
      o.alive?.();
      return (
        kubernetesIp !== undefined &&
        (await resolveInNetns(o.netns, CLUSTER_DNS_IP, name)).includes(kubernetesIp)
      );
    },
    {
      timeoutMs: o.timeoutMs,
      intervalMs: 200,
      signal: o.signal,
      description: `${name} to resolve to ${kubernetesIp} through ${CLUSTER_DNS_IP} in ${o.netns}`,
    },
  );
}

/** Phase and container states of a pod, for an error message. */
function describePod(pod: V1Pod | undefined): string {
  if (!pod) return 'none created';
  const states = (pod.status?.containerStatuses ?? []).map((s) => {
    const st = s.state?.waiting ?? s.state?.terminated;
    return `${s.name} ${st ? `${st.reason ?? ''} ${st.message ?? ''}`.trim() : 'running'} (restarts ${s.restartCount})`;
  });
  return `${pod.metadata?.name} ${pod.status?.phase ?? 'unknown'}${states.length ? `: ${states.join(', ')}` : ''}`;
}

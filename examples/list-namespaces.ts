// Lists the namespaces of every managed cluster through the ClusterGateway on the hub: the hub
// kubeconfig is all it needs (seed scenario "Pushing Kubernetes API requests to the managed
// clusters"). Unhealthy clusters are reported, not fatal.
//
//   node examples/list-namespaces.ts [path/to/hub.kubeconfig]     (default: $KUBECONFIG)
import { type ClusterGateway, clusterGatewayResource, kubeConfigForCluster } from '../src/gateway/index.ts';
import { type KubeObject, loadKubeconfig, ResourceClient } from '../src/kube/index.ts';

const namespaceResource = {
  group: '',
  version: 'v1',
  plural: 'namespaces',
  kind: 'Namespace',
  namespaced: false,
} as const;

async function main(): Promise<void> {
  const path = process.argv[2] ?? process.env.KUBECONFIG;
  if (!path) throw new Error('usage: node examples/list-namespaces.ts <hub kubeconfig> (or set KUBECONFIG)');
  const hub = loadKubeconfig(path);
  const gateways = await new ResourceClient<ClusterGateway>(hub, clusterGatewayResource).list();
  if (gateways.items.length === 0) console.log('no ClusterGateways on this hub');
  for (const gateway of gateways.items) {
    const cluster = gateway.metadata.name ?? '';
    const managed = new ResourceClient<KubeObject>(kubeConfigForCluster(hub, cluster), namespaceResource, {
      requestTimeoutMs: 10_000,
    });
    try {
      const namespaces = await managed.list();
      const names = namespaces.items.map((ns) => ns.metadata?.name).join(' ');
      console.log(`${cluster}: ${names}`);
    } catch (err) {
      const why = gateway.status.healthy ? '' : ` (unhealthy: ${gateway.status.healthyReason ?? 'unknown'})`;
      console.log(`${cluster}: error${why}: ${(err as Error).message}`);
    }
  }
}

main().catch((err: unknown) => {
  console.error((err as Error).message);
  process.exitCode = 1;
});

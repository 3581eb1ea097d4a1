// For the end-to-end add-on flows (helloworld, the built-in add-ons) in process mode: a cluster
// joined to the registration hub by a real registration agent (add-on registration and Lease
// health on), and a real work agent applying to cluster1 with that cluster's hub identity. The
// cleanups given stop both and remove the cluster, also when a later step fails.
import type { KubeConfig } from '@kubernetes/client-node';
import { startWorkAgent } from '../../src/work/agent/index.ts';
import { type JoinedCluster, joinedCluster } from '../registration/e2e-joined-cluster.ts';
import type { Cleanups } from '../registration/hub/e2e-fixtures.ts';

/** Join a cluster named after `prefix` and start its work agent against `managed` (cluster1). */
export async function joinedClusterWithWorkAgent(
  prefix: string,
  managed: KubeConfig,
  cleanups: Cleanups,
): Promise<JoinedCluster> {
  const joined = await joinedCluster(prefix, 60);
  cleanups.add(() => joined.cleanup());
  const registration = await joined.startAgent();
  await registration.joined(90_000);
  const clusterHub = await registration.waitForHubKubeConfig();
  const work = await startWorkAgent({
    clusterName: joined.name,
    agentId: `${joined.name}-work`,
    hubKubeConfig: clusterHub,
    managedKubeConfig: managed,
    statusSyncIntervalMs: 2_000,
    agentNamespace: joined.agentNamespace,
  });
  cleanups.add(() => work.stop());
  return joined;
}

// The placement benchmark's hub process: startPlacementHub (no leader election, no admission
// install, no ClusterProfiles) on the kubeconfig named by argv[2], until the parent sends 'stop' or goes away. It loads
// as `tether hub` does: Node's compile cache on before the first tether module (bin/tether.js), and
// nothing of the benchmark itself, so its CPU and startup are the placement hub's.
import { enableCompileCache } from 'node:module';

enableCompileCache();
const kubeconfigPath = process.argv[2];
if (!kubeconfigPath) throw new Error('usage: placement-hub-child.ts KUBECONFIG');
const { loadKubeconfig } = await import('../../src/kube/index.ts');
const { startPlacementHub } = await import('../../src/placement/hub/index.ts');
const hub = await startPlacementHub({
  hubKubeConfig: loadKubeconfig(kubeconfigPath),
  leaderElection: false,
  installAdmission: false,
  // the placement controllers only: a ClusterProfile per cluster is another controller's work
  clusterProfiles: false,
});
process.send?.('started');
let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  hub.stop().finally(() => process.exit(0));
};
process.on('message', (m) => {
  if (m === 'stop') stop();
});
process.on('disconnect', stop);

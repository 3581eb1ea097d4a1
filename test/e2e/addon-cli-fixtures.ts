// Shared by the `tether addon …` / `tether get addon` e2e files (test/e2e/addon-cli*.test.ts): the
// real `tether` command against the shared hub, admin clients for the addon kinds, and
// ClusterManagementAddOns that clean up after themselves. No addon manager runs: the tests look at
// what the command wrote and set conditions themselves.
import { execFile } from 'node:child_process';
import {
  type AddOnDeploymentConfig,
  addOnDeploymentConfigResource,
  type ClusterManagementAddOn,
  type ClusterManagementAddOnSpec,
  clusterManagementAddOnResource,
  type ManagedClusterAddOn,
  managedClusterAddOnResource,
} from '../../src/api/index.ts';
import { ResourceClient } from '../../src/kube/index.ts';
import { admin, type Cleanups, createBareCluster, hub } from '../placement/e2e-fixtures.ts';
import { env } from '../registration/hub/e2e-fixtures.ts';
import { uniqueName } from './helpers.ts';

export const addonAdmin = {
  ...admin,
  cmas: new ResourceClient<ClusterManagementAddOn>(hub, clusterManagementAddOnResource),
  mcas: new ResourceClient<ManagedClusterAddOn>(hub, managedClusterAddOnResource),
  deploymentConfigs: new ResourceClient<AddOnDeploymentConfig>(hub, addOnDeploymentConfigResource),
};

export interface TetherRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `tether <args> --kubeconfig=<hub admin>` as a child process. */
export function tether(args: string[]): Promise<TetherRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['bin/tether.js', ...args, `--kubeconfig=${env.hub.kubeconfigPath}`],
      { timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

export const deploymentConfigKind = {
  group: 'addon.open-cluster-management.io',
  resource: 'addondeploymentconfigs',
} as const;

/** A ClusterManagementAddOn (accepting AddOnDeploymentConfigs unless `spec` says otherwise); deleted by `cleanups`. */
export async function createClusterManagementAddOn(
  cleanups: Cleanups,
  spec: ClusterManagementAddOnSpec = { supportedConfigs: [deploymentConfigKind] },
  prefix = 'addon',
): Promise<string> {
  const name = uniqueName(prefix);
  cleanups.add(() => addonAdmin.cmas.delete(name, undefined, { ignoreNotFound: true }));
  await addonAdmin.cmas.create({ metadata: { name }, spec });
  return name;
}

/** Deletes ManagedClusterAddOn `name` in `cluster` when the test ends (the namespace outlives the cluster). */
export function cleanUpAddon(cleanups: Cleanups, cluster: string, name: string): void {
  cleanups.add(() => addonAdmin.mcas.delete(name, cluster, { ignoreNotFound: true }));
}

/**
 * A ManagedCluster without an agent and its namespace on the hub (what accepting it creates; no
 * registration hub runs here); both deleted by `cleanups`.
 */
export async function createAcceptedCluster(cleanups: Cleanups): Promise<string> {
  const name = await createBareCluster(cleanups, {}, 'addon-cl', true);
  cleanups.add(() => admin.namespaces.delete(name, undefined, { ignoreNotFound: true }));
  await admin.namespaces.create({ metadata: { name } });
  return name;
}

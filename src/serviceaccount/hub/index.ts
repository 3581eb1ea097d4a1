// serviceaccount hub side: the TTL controller (deletes ManagedServiceAccounts whose
// ttlSecondsAfterCreation passed) and the helpers the CLI uses to create and list them.
import type { KubeConfig } from '@kubernetes/client-node';
import { type ManagedServiceAccount, managedServiceAccountResource } from '../../api/index.ts';
import { Informer, type KubeObject, ResourceClient, runController } from '../../kube/index.ts';
import { type Logger, logger } from '../../log.ts';
import { ManagedServiceAccountTtlReconciler } from './ttl.ts';

export {
  type CreateManagedServiceAccountOptions,
  type CreateManagedServiceAccountResult,
  createManagedServiceAccount,
  listManagedServiceAccounts,
  type ManagedServiceAccountRow,
} from './manage.ts';
export { expiresAtMs } from './ttl.ts';

export interface ServiceAccountHubOptions {
  /** needs managedserviceaccounts get/list/watch/delete in every namespace */
  hubKubeConfig: KubeConfig;
  log?: Logger;
}

export interface ServiceAccountHub {
  /** true once the cache synced and reconciling started */
  readonly ready: Promise<boolean>;
  stop(): Promise<void>;
}

/** Start the hub controllers of ManagedServiceAccount (today: TTL). */
export async function startServiceAccountHub(opts: ServiceAccountHubOptions): Promise<ServiceAccountHub> {
  const log = opts.log ?? logger('serviceaccount-hub');
  const client = new ResourceClient<ManagedServiceAccount>(opts.hubKubeConfig, managedServiceAccountResource);
  const informer = new Informer(client, { log });
  const reconciler = new ManagedServiceAccountTtlReconciler(informer, client, log);
  const controller = runController({
    name: 'managedserviceaccount-ttl',
    informers: [informer as unknown as Informer<KubeObject>],
    reconcile: (key) => reconciler.reconcile(key),
    log,
  });
  return { ready: controller.ready, stop: () => controller.stop() };
}

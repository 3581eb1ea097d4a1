// serviceaccount hub side: the TTL controller (deletes ManagedServiceAccounts whose
// ttlSecondsAfterCreation passed), the token Secrets RBAC controller (grants each cluster's agents
// their MSA token Secrets by name, token-secrets-rbac.ts) and the helpers the CLI uses to create
// and list MSAs.
import type { KubeConfig } from '@kubernetes/client-node';
import { type ManagedServiceAccount, managedServiceAccountResource } from '../../api/index.ts';
import { Informer, type KubeObject, ResourceClient, runController } from '../../kube/index.ts';
import { type Logger, logger } from '../../log.ts';
import { type Role, type RoleBinding, roleBindingResource, roleResource } from '../core.ts';
import { TokenSecretsRbacReconciler } from './token-secrets-rbac.ts';
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
  /** needs managedserviceaccounts get/list/watch/delete, roles and rolebindings get/create/patch/
   * delete (with escalate and bind: it grants Secrets it does not read) in every namespace */
  hubKubeConfig: KubeConfig;
  log?: Logger;
}

export interface ServiceAccountHub {
  /** true once the cache synced and reconciling started */
  readonly ready: Promise<boolean>;
  stop(): Promise<void>;
}

/** Start the hub controllers of ManagedServiceAccount: TTL and token Secrets RBAC. */
export async function startServiceAccountHub(opts: ServiceAccountHubOptions): Promise<ServiceAccountHub> {
  const log = opts.log ?? logger('serviceaccount-hub');
  const client = new ResourceClient<ManagedServiceAccount>(opts.hubKubeConfig, managedServiceAccountResource);
  const informer = new Informer(client, { log });
  const informers = [informer as unknown as Informer<KubeObject>];
  // Started here so both controllers share it; stopped after both.
  informer.start();
  const ttl = new ManagedServiceAccountTtlReconciler(informer, client, log);
  const ttlController = runController({
    name: 'managedserviceaccount-ttl',
    informers,
    reconcile: (key) => ttl.reconcile(key),
    log,
  });
  const rbac = new TokenSecretsRbacReconciler(
    informer,
    new ResourceClient<Role>(opts.hubKubeConfig, roleResource),
    new ResourceClient<RoleBinding>(opts.hubKubeConfig, roleBindingResource),
    log,
  );
  const rbacController = runController({
    name: 'managedserviceaccount-token-secrets-rbac',
    informers,
    keyFunc: (obj) => obj.metadata?.namespace,
    reconcile: (namespace) => rbac.reconcile(namespace),
    log,
  });
  const ready = Promise.all([ttlController.ready, rbacController.ready]).then(([a, b]) => a && b);
  return {
    ready,
    stop: async () => {
      await Promise.all([ttlController.stop(), rbacController.stop()]);
      await informer.stop();
    },
  };
}

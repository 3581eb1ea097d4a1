// TokenSecretsRbacReconciler: keeps, in each namespace that has ManagedServiceAccounts, the Role
// `open-cluster-management:managed-serviceaccount:token-secrets` granting get/list/watch/update/
// patch/delete on exactly the Secrets named like those MSAs (their token Secrets), bound to the
// cluster's group and its managed-serviceaccount add-on's group. A namespace without MSAs gets
// neither Role nor RoleBinding: an empty resourceNames would grant every Secret. Keyed by namespace.
// Touches only that Role and RoleBinding; the hub's ClusterRole lets it grant what it does not
// hold (escalate/bind on roles).
import type { ManagedServiceAccount } from '../../api/index.ts';
import { managedClustersGroup } from '../../api/index.ts';
import type { Informer, ResourceClient } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import type { Role, RoleBinding } from '../core.ts';
import { tokenSecretsRbac, tokenSecretsRoleName, tokenSecretsSubjects } from '../rbac.ts';

const apply = { fieldManager: 'tether-serviceaccount-hub', force: true };

export class TokenSecretsRbacReconciler {
  private readonly informer: Informer<ManagedServiceAccount>;
  private readonly roles: ResourceClient<Role>;
  private readonly roleBindings: ResourceClient<RoleBinding>;
  private readonly log: Logger;

  constructor(
    informer: Informer<ManagedServiceAccount>,
    roles: ResourceClient<Role>,
    roleBindings: ResourceClient<RoleBinding>,
    log: Logger,
  ) {
    this.informer = informer;
    this.roles = roles;
    this.roleBindings = roleBindings;
    this.log = log;
  }

  async reconcile(namespace: string): Promise<undefined> {
    // A namespace whose group is every cluster's would hand all clusters these Secrets.
    if (tokenSecretsSubjects(namespace).includes(managedClustersGroup)) {
      this.log.warn({ namespace }, 'not granting token Secrets: the namespace is no cluster namespace');
      return undefined;
    }
    const names = this.informer
      .list()
      .filter((m) => m.metadata.namespace === namespace && !m.metadata.deletionTimestamp)
      .map((m) => m.metadata.name ?? '')
      .filter((name) => name !== '');
    if (names.length === 0) {
      const unbound = await this.roleBindings.delete(tokenSecretsRoleName, namespace, {
        ignoreNotFound: true,
      });
      const removed = await this.roles.delete(tokenSecretsRoleName, namespace, { ignoreNotFound: true });
      if (unbound || removed)
        this.log.info({ namespace }, 'no ManagedServiceAccount left: token Secrets Role deleted');
      return undefined;
    }
    const { role, roleBinding } = tokenSecretsRbac(namespace, names);
    await this.roles.apply(role, apply);
    await this.roleBindings.apply(roleBinding, apply);
    return undefined;
  }
}

// The hub's half of registration, played by e2e tests of the registration agent (the real hub
// controllers live elsewhere): a bootstrap identity (ServiceAccount token bound to the production
// bootstrap rules), a CSR approver, and "accept" = cluster namespace + the production per-cluster
// RBAC (no test-only copy of what the hub grants) + lease + hubAcceptsClient +
// HubAcceptedManagedCluster. So the agent under test runs with exactly the permissions the hub
// grants it. Everything created is removed by cleanup().
import { readFileSync } from 'node:fs';
import {
  CertificatesV1Api,
  CoreV1Api,
  type KubeConfig,
  RbacAuthorizationV1Api,
  type V1CertificateSigningRequest,
} from '@kubernetes/client-node';
import {
  clusterNameLabel,
  type ManagedCluster,
  ManagedClusterCondition,
  ManagedClusterReason,
  managedClusterLeaseName,
  managedClusterResource,
} from '../../../src/api/index.ts';
import {
  formatMicroTime,
  formatTime,
  isNotFound,
  type KubeObject,
  kubeconfigFromParts,
  kubeconfigToYaml,
  type Lease,
  leaseResource,
  ResourceClient,
} from '../../../src/kube/index.ts';
import type { ControlPlaneInfo } from '../../../src/localenv/types.ts';
import { bootstrapClusterRoleRules } from '../../../src/registration/bootstrap.ts';
import { clusterRbac, sharedClusterRoles } from '../../../src/registration/hub/rbac.ts';

const hubManager = 'e2e-hub';

export interface FakeHubOptions {
  hub: ControlPlaneInfo;
  admin: KubeConfig;
  /** unique prefix for the hub objects this instance creates */
  name: string;
}

export class FakeHub {
  readonly admin: KubeConfig;
  readonly clusters: ResourceClient<ManagedCluster>;
  readonly leases: ResourceClient<Lease>;
  /** CSRs this hub approved, by name */
  readonly approved: string[] = [];
  private readonly opts: FakeHubOptions;
  private readonly core: CoreV1Api;
  private readonly rbac: RbacAuthorizationV1Api;
  private readonly certs: CertificatesV1Api;
  private readonly undo: Array<() => Promise<unknown>> = [];
  private approvers: Array<() => void> = [];

  constructor(opts: FakeHubOptions) {
    this.opts = opts;
    this.admin = opts.admin;
    this.core = opts.admin.makeApiClient(CoreV1Api);
    this.rbac = opts.admin.makeApiClient(RbacAuthorizationV1Api);
    this.certs = opts.admin.makeApiClient(CertificatesV1Api);
    this.clusters = new ResourceClient<ManagedCluster>(opts.admin, managedClusterResource);
    this.leases = new ResourceClient<Lease>(opts.admin, leaseResource);
  }

  /** A client for one RBAC kind, taking the production RBAC objects as they are. */
  private rbacObjects(plural: 'clusterroles' | 'clusterrolebindings' | 'rolebindings') {
    const kinds = {
      clusterroles: 'ClusterRole',
      clusterrolebindings: 'ClusterRoleBinding',
      rolebindings: 'RoleBinding',
    };
    return new ResourceClient<KubeObject>(this.admin, {
      group: 'rbac.authorization.k8s.io',
      version: 'v1',
      plural,
      kind: kinds[plural],
      namespaced: plural === 'rolebindings',
    });
  }

  /** A ServiceAccount allowed what the hub's bootstrap ClusterRole allows; returns its user name. */
  async createBootstrapIdentity(): Promise<string> {
    const { name } = this.opts;
    await this.core.createNamespace({ body: { metadata: { name } } });
    this.undo.push(() => this.core.deleteNamespace({ name }));
    await this.core.createNamespacedServiceAccount({
      namespace: name,
      body: { metadata: { name: 'bootstrap' } },
    });
    await this.rbac.createClusterRole({
      body: {
        metadata: { name },
        rules: bootstrapClusterRoleRules(),
      },
    });
    this.undo.push(() => this.rbac.deleteClusterRole({ name }));
    await this.rbac.createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ kind: 'ServiceAccount', name: 'bootstrap', namespace: name }],
      },
    });
    this.undo.push(() => this.rbac.deleteClusterRoleBinding({ name }));
    return `system:serviceaccount:${name}:bootstrap`;
  }

  /** A bootstrap kubeconfig (YAML) with a fresh token of the bootstrap ServiceAccount. */
  /** `appendCaPem` is appended to the hub's CA, as `clusteradm join --proxy-ca-file` writes it. */
  async bootstrapKubeconfig(proxyUrl?: string, appendCaPem?: string): Promise<string> {
    const tr = await this.core.createNamespacedServiceAccountToken({
      name: 'bootstrap',
      namespace: this.opts.name,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const kc = kubeconfigFromParts({
      name: 'hub',
      server: this.opts.hub.apiserverUrl,
      caPem: [readFileSync(this.opts.hub.caCertPath, 'utf8').trimEnd(), appendCaPem?.trimEnd()]
        .filter(Boolean)
        .join('\n'),
      token: tr.status?.token ?? '',
      ...(proxyUrl ? { proxyUrl } : {}),
    });
    return kubeconfigToYaml(kc);
  }

  /** Approve every CSR of `cluster` as soon as it appears (until cleanup or the returned stop). */
  startApprover(cluster: string, delayMs = 0): () => void {
    let stopped = false;
    const started = Date.now();
    const loop = async () => {
      while (!stopped) {
        if (Date.now() - started >= delayMs) await this.approvePending(cluster).catch(() => {});
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    void loop();
    const stop = () => {
      stopped = true;
    };
    this.approvers.push(stop);
    this.undo.push(async () => {
      for (const csr of await this.csrs(cluster)) {
        await this.certs.deleteCertificateSigningRequest({ name: csr.metadata?.name ?? '' }).catch(() => {});
      }
    });
    return stop;
  }

  /** CSRs labelled for `cluster`, oldest first. */
  async csrs(cluster: string): Promise<V1CertificateSigningRequest[]> {
    const list = await this.certs.listCertificateSigningRequest({
      labelSelector: `${clusterNameLabel}=${cluster}`,
    });
    const created = (c: V1CertificateSigningRequest) =>
      new Date(c.metadata?.creationTimestamp ?? 0).getTime();
    return list.items.sort((a, b) => created(a) - created(b));
  }

  /** Approve every pending CSR of `cluster` once, now. */
  approveNow(cluster: string): Promise<void> {
    return this.approvePending(cluster);
  }

  private async approvePending(cluster: string): Promise<void> {
    for (const csr of await this.csrs(cluster)) {
      const done = csr.status?.conditions?.some((c) => c.type === 'Approved' || c.type === 'Denied');
      if (done) continue;
      const name = csr.metadata?.name ?? '';
      const condition = {
        type: 'Approved',
        status: 'True',
        reason: 'E2EHubApproved',
        message: 'approved by the e2e fake hub',
        lastUpdateTime: new Date(),
      };
      csr.status = { ...csr.status, conditions: [...(csr.status?.conditions ?? []), condition] };
      await this.certs.replaceCertificateSigningRequestApproval({ name, body: csr });
      this.approved.push(name);
    }
  }

  /**
   * What the hub does on accept: cluster namespace, the production per-cluster RBAC
   * (src/registration/hub/rbac.ts: ClusterRole + binding, RoleBindings to the shared ClusterRoles),
   * the lease, hubAcceptsClient and the condition.
   */
  async accept(cluster: string, options: { createLease?: boolean } = {}): Promise<void> {
    await this.core.createNamespace({ body: { metadata: { name: cluster } } });
    this.undo.push(() => this.core.deleteNamespace({ name: cluster }));
    // The shared ClusterRoles are cluster-wide and the same for every hub: applied, never removed.
    for (const role of sharedClusterRoles()) {
      await this.rbacObjects('clusterroles').apply(
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', ...role },
        {
          fieldManager: hubManager,
          force: true,
        },
      );
    }
    const rbac = clusterRbac(cluster, true);
    const name = rbac.clusterRole.metadata?.name ?? '';
    await this.rbacObjects('clusterroles').create(rbac.clusterRole);
    this.undo.push(() => this.rbac.deleteClusterRole({ name }));
    await this.rbacObjects('clusterrolebindings').create(rbac.clusterRoleBinding);
    this.undo.push(() => this.rbac.deleteClusterRoleBinding({ name }));
    for (const binding of rbac.roleBindings) {
      // No hub controller here releases the manifest-work-cleanup finalizer: leave it off.
      const { finalizers: _held, ...metadata } = binding.metadata ?? {};
      await this.rbacObjects('rolebindings').create({ ...binding, metadata });
    }
    if (options.createLease ?? true) await this.createLease(cluster);
    this.undo.push(() => this.clusters.delete(cluster, undefined, { ignoreNotFound: true }));
    await this.clusters.patchMerge(cluster, { spec: { hubAcceptsClient: true } });
    await this.clusters.applyStatus(
      {
        metadata: { name: cluster },
        status: {
          conditions: [
            {
              type: ManagedClusterCondition.HubAccepted,
              status: 'True',
              reason: ManagedClusterReason.HubClusterAdminAccepted,
              message: 'Accepted by hub cluster admin',
              lastTransitionTime: formatTime(new Date()),
            },
          ],
        },
      },
      { fieldManager: hubManager, force: true },
    );
  }

  /** The lease the hub creates on accept. */
  async createLease(cluster: string): Promise<void> {
    await this.leases.create({
      metadata: {
        name: managedClusterLeaseName,
        namespace: cluster,
        labels: { [clusterNameLabel]: cluster },
      },
      spec: { leaseDurationSeconds: 60, renewTime: formatMicroTime(new Date(Date.now() - 3600_000)) },
    });
  }

  /**
   * The hub's lease watchdog: Available Unknown. Its own field manager: an apply as `e2e-hub`
   * without HubAccepted would delete the condition that manager applied before.
   */
  async markUnknown(cluster: string): Promise<void> {
    await this.clusters.applyStatus(
      {
        metadata: { name: cluster },
        status: {
          conditions: [
            {
              type: ManagedClusterCondition.Available,
              status: 'Unknown',
              reason: ManagedClusterReason.ManagedClusterLeaseUpdateStopped,
              message: 'Registration agent stopped updating its lease.',
              lastTransitionTime: formatTime(new Date()),
            },
          ],
        },
      },
      { fieldManager: `${hubManager}-lease-watchdog`, force: true },
    );
  }

  /** Stop approvers, remove everything this hub created (last first). */
  async cleanup(): Promise<void> {
    for (const stop of this.approvers.splice(0)) stop();
    const errors: unknown[] = [];
    for (const step of this.undo.splice(0).reverse()) {
      await step().catch((err: unknown) => isNotFound(err) || errors.push(err));
    }
    if (errors.length > 0) throw errors[0];
  }
}

// The registration hub as an OCM user meets it, on the real hub control plane: clusteradm's
// bootstrap identity (ServiceAccount agent-registration-bootstrap, ClusterRole
// system:open-cluster-management:bootstrap, ClusterRoleBinding cluster-bootstrap), manual approval
// as clusteradm's accept does it (one requester, `tether Approve`), renewal approval only while the
// requester may `renew` managedclusters/clientcertificates, the ClockSynced condition, and the
// Kubernetes Events OCM's hub controllers emit (accept, deny, CSR auto-approval).
import { readFileSync } from 'node:fs';
import { CertificatesV1Api, V1CertificateSigningRequestCondition } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManagedClusterCondition, managedClusterLeaseName } from '../../src/api/index.ts';
import {
  formatMicroTime,
  isForbidden,
  type KubeObject,
  kubeconfigFromParts,
  ResourceClient,
} from '../../src/kube/index.ts';
import {
  BOOTSTRAP_CLUSTER_ROLE,
  BOOTSTRAP_CLUSTER_ROLE_BINDING,
  BOOTSTRAP_NAMESPACE,
  BOOTSTRAP_SERVICE_ACCOUNT,
  BOOTSTRAP_USER,
  createBootstrapToken,
  ensureBootstrapIdentity,
} from '../../src/registration/bootstrap.ts';
import { mayRenewClientCertificate } from '../../src/registration/hub/csr-approval.ts';
import { approveClusterCsrs } from '../../src/registration/hub/index.ts';
import type { CertificateSigningRequest } from '../../src/registration/hub/resources.ts';
import { agentSubject } from '../../src/tunnel/identity.ts';
import { uniqueName } from './fixtures/helpers.ts';
import {
  admin,
  agentKubeconfig,
  allowCsrRequests,
  approvalOf,
  Cleanups,
  clientsFor,
  conditionOf,
  createCluster,
  env,
  hub,
  kubeconfigAs,
  requestCertificate,
  startScopedHub,
  waitFor,
} from './fixtures/registration-hub.ts';

const scope = uniqueName('hubocm');
const fileCleanups = new Cleanups();
const cleanups = new Cleanups();
const autoUser = uniqueName('tether-e2e-auto');
const tokenUser = `system:bootstrap:${uniqueName('o').replaceAll('-', '').slice(-6)}`;
const tokenGroup = 'system:bootstrappers:managedcluster';
const events = new ResourceClient<KubeObject & { reason?: string; message?: string }>(hub, {
  group: '',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
});

beforeAll(async () => {
  await allowCsrRequests(fileCleanups, [autoUser, tokenUser]);
  await startScopedHub(fileCleanups, scope, { autoApprovedCsrUsers: [autoUser] });
});
afterEach(() => cleanups.run());
afterAll(() => fileCleanups.run());

const accepted = (name: string) =>
  waitFor(
    async () => (await conditionOf(name, ManagedClusterCondition.HubAccepted))?.status === 'True',
    `${name} accepted`,
  );

/** Reasons of the events recorded about `name` (a ManagedCluster or a CSR). */
async function eventReasons(name: string): Promise<string[]> {
  const { items } = await events.list({ namespace: 'default', fieldSelector: `involvedObject.name=${name}` });
  return items.map((e) => e.reason ?? '');
}

describe("clusteradm's bootstrap identity", () => {
  it('agent-registration-bootstrap gets a token, may register a cluster and ask a CSR, and tether accept approves it', async () => {
    await ensureBootstrapIdentity(hub);
    const binding = await admin.clusterRoleBindings.get(BOOTSTRAP_CLUSTER_ROLE_BINDING);
    expect(binding?.roleRef).toMatchObject({ kind: 'ClusterRole', name: BOOTSTRAP_CLUSTER_ROLE });
    expect(binding?.subjects).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'ServiceAccount', name: BOOTSTRAP_SERVICE_ACCOUNT }),
        expect.objectContaining({ kind: 'Group', name: tokenGroup }),
      ]),
    );
    expect(BOOTSTRAP_CLUSTER_ROLE).toBe('system:open-cluster-management:bootstrap');
    expect(`${BOOTSTRAP_NAMESPACE}/${BOOTSTRAP_SERVICE_ACCOUNT}`).toBe(
      'open-cluster-management/agent-registration-bootstrap',
    );

    const { token } = await createBootstrapToken(hub, 3600);
    const caPem = readFileSync(env.hub.caCertPath, 'utf8');
    const sa = clientsFor(
      kubeconfigFromParts({ name: 'bootstrap', server: env.hub.apiserverUrl, caPem, token }),
    );
    const name = await createCluster(cleanups, scope, { hubAcceptsClient: false });
    await waitFor(() => sa.clusters.list(), 'the bootstrap identity may list ManagedClusters');
    expect(await sa.clusters.get(name)).toBeDefined();
    await expect(sa.clusters.patchMerge(name, { spec: { hubAcceptsClient: true } })).rejects.toSatisfy(
      isForbidden,
    );
    await expect(sa.secrets.list({ namespace: 'kube-system' })).rejects.toSatisfy(isForbidden);

    const csr = await requestCertificate(cleanups, sa.csrs, {
      subject: agentSubject(name, 'a1'),
      cluster: name,
    });
    const created = await admin.csrs.get(csr);
    expect(created?.spec.username).toBe(BOOTSTRAP_USER);
    const result = await approveClusterCsrs(hub, name);
    expect(result.approved).toEqual([csr]);
    expect(approvalOf(await admin.csrs.get(csr))).toMatchObject({ reason: 'tether Approve' });
    await accepted(name);
  });
});

describe('tether accept, as clusteradm accept', () => {
  it('approves nothing when the pending CSRs name more than one agent, and still accepts the cluster', async () => {
    const name = await createCluster(cleanups, scope, { hubAcceptsClient: false });
    const token = clientsFor(await kubeconfigAs({ commonName: tokenUser, organizations: [tokenGroup] }));
    const first = await waitFor(
      () => requestCertificate(cleanups, token.csrs, { subject: agentSubject(name, 'a1'), cluster: name }),
      'the token user may create CSRs',
    );
    const second = await requestCertificate(cleanups, token.csrs, {
      subject: agentSubject(name, 'a2'),
      cluster: name,
    });
    const result = await approveClusterCsrs(hub, name);
    expect(result.approved).toEqual([]);
    expect(result.ambiguous).toContain('2 different agents');
    for (const csr of [first, second]) expect(approvalOf(await admin.csrs.get(csr))).toBeUndefined();
    expect((await admin.clusters.get(name))?.spec.hubAcceptsClient).toBe(true);

    // Once the other is denied, one requester is left, and it is approved (a Denied CSR is skipped).
    const csrApi = hub.makeApiClient(CertificatesV1Api);
    const body = await csrApi.readCertificateSigningRequest({ name: second });
    body.status = {
      conditions: [
        Object.assign(new V1CertificateSigningRequestCondition(), {
          type: 'Denied',
          status: 'True',
          reason: 'E2E',
          message: 'not this one',
        }),
      ],
    };
    await csrApi.replaceCertificateSigningRequestApproval({ name: second, body });
    const again = await approveClusterCsrs(hub, name);
    expect(again.approved).toEqual([first]);
    expect(again.ambiguous).toBeUndefined();
  });
});

describe('renewal approval', () => {
  it('is not automatic once the cluster lost the `renew` permission (denied), and is while it has it', async () => {
    const name = await createCluster(cleanups, scope);
    await accepted(name);
    const agent = clientsFor(await agentKubeconfig(name, 'agent1'));
    const renewal = await waitFor(
      () =>
        requestCertificate(cleanups, agent.csrs, { subject: agentSubject(name, 'agent1'), cluster: name }),
      'the agent identity may create CSRs',
    );
    await waitFor(async () => approvalOf(await admin.csrs.get(renewal)), 'renewal approved while accepted');
    expect(await eventReasons(renewal)).toContain('ManagedClusterCSRAutoApproved');

    await admin.clusters.patchMerge(name, { spec: { hubAcceptsClient: false } });
    const asAgent = (await admin.csrs.get(renewal)) as CertificateSigningRequest;
    await waitFor(
      async () => !(await mayRenewClientCertificate(hub, asAgent, name)),
      'the denied cluster to lose managedclusters/clientcertificates renew',
    );
    // A denied cluster's own role no longer lets it create CSRs; another grant still might (an
    // admin's, a leftover): the approver must check `renew` itself, not trust that the CSR exists.
    await allowCsrRequests(cleanups, [agentSubject(name, 'agent1').commonName]);
    const pending = await waitFor(
      () =>
        requestCertificate(cleanups, agent.csrs, { subject: agentSubject(name, 'agent1'), cluster: name }),
      'the agent identity may create CSRs through the extra grant',
    );
    // The approver takes CSRs in order: once a later one is approved, it has decided on `pending`.
    const sentinelCluster = await createCluster(cleanups, scope, { hubAcceptsClient: false });
    const auto = clientsFor(await kubeconfigAs({ commonName: autoUser }));
    const sentinel = await requestCertificate(cleanups, auto.csrs, {
      subject: agentSubject(sentinelCluster, 'agent1'),
      cluster: sentinelCluster,
    });
    await waitFor(async () => approvalOf(await admin.csrs.get(sentinel)), 'a later CSR approved');
    expect(approvalOf(await admin.csrs.get(pending))).toBeUndefined();
  });
});

describe('events and ClockSynced', () => {
  it('records ManagedClusterAccepted and ManagedClusterDenied on the cluster', async () => {
    const name = await createCluster(cleanups, scope);
    await accepted(name);
    await waitFor(
      async () => (await eventReasons(name)).includes('ManagedClusterAccepted'),
      'accepted event',
    );
    await admin.clusters.patchMerge(name, { spec: { hubAcceptsClient: false } });
    await waitFor(async () => (await eventReasons(name)).includes('ManagedClusterDenied'), 'denied event');
  });

  it("sets ManagedClusterConditionClockSynced from the agent's lease renewals", async () => {
    const name = await createCluster(cleanups, scope, { hubAcceptsClient: true, leaseDurationSeconds: 60 });
    await accepted(name);
    const lease = await waitFor(() => admin.leases.get(managedClusterLeaseName, name), 'the cluster lease');
    const renewAt = async (at: Date) => {
      const current = await admin.leases.get(managedClusterLeaseName, name);
      await admin.leases.replace({
        ...(current ?? lease),
        spec: { ...current?.spec, renewTime: formatMicroTime(at) },
      });
    };
    // Ten minutes ahead of the hub: out of sync.
    await renewAt(new Date(Date.now() + 600_000));
    await waitFor(
      async () => (await conditionOf(name, ManagedClusterCondition.ClockSynced))?.status === 'False',
      'ClockSynced False',
    );
    expect(await conditionOf(name, ManagedClusterCondition.ClockSynced)).toMatchObject({
      reason: 'ManagedClusterClockOutOfSync',
      message:
        'The clock of hub and agent is out of sync. This may cause the Unknown status and affect agent functionalities.',
    });
    await renewAt(new Date());
    await waitFor(
      async () => (await conditionOf(name, ManagedClusterCondition.ClockSynced))?.status === 'True',
      'ClockSynced True',
    );
    expect(await conditionOf(name, ManagedClusterCondition.ClockSynced)).toMatchObject({
      reason: 'ManagedClusterClockSynced',
      message: 'The clock of the managed cluster is synced with the hub.',
    });
    expect(await eventReasons(name)).toContain('ManagedClusterClockSyncedConditionUpdated');
  });
});

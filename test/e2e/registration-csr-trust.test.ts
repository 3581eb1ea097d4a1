// Finding 2 of issue 10: a cluster's identity is handed out only to whoever is entitled to it. A
// bootstrap-token holder gets the certificate of a cluster that has not joined yet (that is what the
// token is for), never of one that has joined — neither from the auto-approver nor from a plain
// `tether accept`; only the hub admin's rebootstrap (`--skip-approve-check`) approves it. One
// cluster's agent identity, which may create CSRs to renew its own certificate, never obtains
// another cluster's. The agent side is played by clients holding certificates minted from the hub
// CA; the real kube-controller-manager signs what is approved.
import { describe, expect, it } from 'vitest';
import { ManagedClusterCondition } from '../../src/api/index.ts';
import { approveClusterCsrs, CsrApprovalReason } from '../../src/registration/hub/index.ts';
import { agentSubject } from '../../src/tunnel/identity.ts';
import {
  admin,
  agentKubeconfig,
  approvalOf,
  clientsFor,
  conditionOf,
  createCluster,
  joinedCluster,
  kubeconfigAs,
  requestCertificate,
  scopedHubWithBootstrapUser,
  waitFor,
} from './fixtures/registration-hub.ts';

const { scope, cleanups, bootstrapUser } = scopedHubWithBootstrapUser('csrtrust');

const bootstrapClients = async () => clientsFor(await kubeconfigAs({ commonName: bootstrapUser }));

/** A bootstrap CSR for a fresh, unjoined cluster: once it is approved, the approver has seen every earlier CSR. */
async function approverPassedEverythingBefore(): Promise<void> {
  const control = await createCluster(cleanups, scope, { hubAcceptsClient: false });
  const bootstrap = await bootstrapClients();
  const csr = await requestCertificate(cleanups, bootstrap.csrs, {
    subject: agentSubject(control, 'agent1'),
    cluster: control,
  });
  await waitFor(async () => approvalOf(await admin.csrs.get(csr)), 'the control CSR approved');
}

/** A CSR for `cluster`'s agent identity, requested with the bootstrap token. */
async function bootstrapRequestFor(cluster: string): Promise<string> {
  const bootstrap = await bootstrapClients();
  return requestCertificate(cleanups, bootstrap.csrs, { subject: agentSubject(cluster, 'agent1'), cluster });
}

describe('CSR approval binds identities', () => {
  it('a bootstrap-token holder cannot obtain the certificate of an already joined cluster', async () => {
    const victim = await joinedCluster(cleanups, scope, (await bootstrapClients()).csrs);
    const stolen = await bootstrapRequestFor(victim);
    await approverPassedEverythingBefore();
    expect(approvalOf(await admin.csrs.get(stolen))).toBeUndefined();

    // A plain `tether accept` refuses it too, and says how the admin rebootstraps.
    const plain = await approveClusterCsrs(admin.clusters.kubeconfig, victim);
    expect(plain.approved).toEqual([]);
    expect(plain.skipped).toEqual([
      { name: stolen, problem: expect.stringContaining('--skip-approve-check') },
    ]);
    expect(approvalOf(await admin.csrs.get(stolen))).toBeUndefined();

    // The hub admin's rebootstrap is the one way a joined cluster's identity is issued again.
    const rebootstrap = await approveClusterCsrs(admin.clusters.kubeconfig, victim, {
      skipApproveCheck: true,
    });
    expect(rebootstrap.approved).toEqual([stolen]);
    expect(approvalOf(await admin.csrs.get(stolen))).toMatchObject({ reason: CsrApprovalReason.Manual });
  });

  it('a bootstrap-token holder cannot obtain the certificate of a cluster whose agent reported Joined', async () => {
    // Approved CSRs are garbage-collected after an hour; the agent's Joined condition still counts.
    const victim = await createCluster(cleanups, scope);
    await waitFor(
      async () => (await conditionOf(victim, ManagedClusterCondition.HubAccepted))?.status === 'True',
      `${victim} accepted`,
    );
    await waitFor(async () => {
      const current = await admin.clusters.get(victim);
      if (!current) return false;
      const joined = {
        type: ManagedClusterCondition.Joined,
        status: 'True',
        reason: 'ManagedClusterJoined',
        message: 'the agent has joined the hub',
        lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      };
      const conditions = [...(current.status?.conditions ?? []), joined];
      await admin.clusters.patchStatus(victim, {
        metadata: { resourceVersion: current.metadata.resourceVersion },
        status: { conditions },
      });
      return true;
    }, `${victim} reports Joined`);
    const stolen = await bootstrapRequestFor(victim);
    await approverPassedEverythingBefore();
    expect(approvalOf(await admin.csrs.get(stolen))).toBeUndefined();
    expect((await approveClusterCsrs(admin.clusters.kubeconfig, victim)).approved).toEqual([]);
  });

  it("cluster1's agent identity cannot obtain cluster2's certificate, even through tether accept", async () => {
    const cluster1 = await joinedCluster(cleanups, scope, (await bootstrapClients()).csrs);
    const cluster2 = await createCluster(cleanups, scope, { hubAcceptsClient: false });
    const agent1 = clientsFor(await agentKubeconfig(cluster1));
    const foreign = await waitFor(
      () =>
        requestCertificate(cleanups, agent1.csrs, {
          subject: agentSubject(cluster2, 'agent1'),
          cluster: cluster2,
        }),
      `${cluster1}'s identity may create CSRs`,
    );
    await approverPassedEverythingBefore();
    expect(approvalOf(await admin.csrs.get(foreign))).toBeUndefined();

    for (const skipApproveCheck of [false, true]) {
      const result = await approveClusterCsrs(admin.clusters.kubeconfig, cluster2, { skipApproveCheck });
      expect(result.approved).toEqual([]);
      expect(result.skipped).toEqual([
        { name: foreign, problem: expect.stringContaining('another identity') },
      ]);
    }
    expect(approvalOf(await admin.csrs.get(foreign))).toBeUndefined();
  });
});

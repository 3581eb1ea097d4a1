// The registration hub on the real hub control plane: accepting a ManagedCluster grants its agent
// identity exactly its own objects, denying takes that back, and the CSR approver hands a
// cluster's identity only to requests that are entitled to it (the real kube-controller-manager
// signs them; the built-in signer signs its own signer name). The agent side is played by clients
// holding certificates minted from the hub CA. Lifecycle (lease, taints, delete, leader election)
// is in registration-hub-lifecycle.test.ts.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  clusterAgentGroups,
  clusterNameLabel,
  ManagedClusterCondition,
  managedClusterFinalizer,
  managedClusterLeaseName,
} from '../../src/api/index.ts';
import { formatMicroTime, isForbidden } from '../../src/kube/index.ts';
import { certificateInfo, createCertificateAuthority } from '../../src/pki/index.ts';
import {
  approveClusterCsrs,
  CsrApprovalReason,
  clusterRbacName,
  manifestWorkCleanupFinalizer,
  manualApprovalMessage,
  namespaceRbacName,
  sharedClusterRoleName,
} from '../../src/registration/hub/index.ts';
import { clusterRules } from '../../src/registration/hub/rbac.ts';
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
  kubeconfigAs,
  requestCertificate,
  startScopedHub,
  waitFor,
} from './fixtures/registration-hub.ts';

const scope = uniqueName('hub');
const fileCleanups = new Cleanups();
const cleanups = new Cleanups();
const bootstrapUser = uniqueName('tether-e2e-bootstrap');
const strangerUser = uniqueName('tether-e2e-stranger');
/** A bootstrap-token user as clusteradm's accept takes it (not auto-approved here). */
const tokenUser = `system:bootstrap:${uniqueName('t').slice(-6)}`;
const tokenGroup = 'system:bootstrappers:managedcluster';
const hubClientSigner = 'tether.dev/hub-client';
const signerCa = await createCertificateAuthority('tether e2e hub-client signer');
const grants = ['registration', 'work', 'serviceaccount'] as const;

beforeAll(async () => {
  // Bootstrap users may create CSRs and nothing else, as with a real bootstrap kubeconfig.
  await allowCsrRequests(fileCleanups, [bootstrapUser, strangerUser, tokenUser]);
  await startScopedHub(fileCleanups, scope, {
    autoApprovedCsrUsers: [bootstrapUser],
    signer: { certPem: signerCa.certPem, keyPem: signerCa.keyPem, signerName: hubClientSigner },
  });
});
afterEach(() => cleanups.run());
afterAll(() => fileCleanups.run());

const expectForbidden = (call: Promise<unknown>) => expect(call).rejects.toSatisfy(isForbidden);

/** Renew the cluster's lease as the agent does (get + update: OCM grants no patch on leases). */
async function renewLease(agent: ReturnType<typeof clientsFor>, cluster: string) {
  const lease = await agent.leases.get(managedClusterLeaseName, cluster);
  if (!lease) throw new Error(`no lease in ${cluster}`);
  return agent.leases.replace({ ...lease, spec: { ...lease.spec, renewTime: formatMicroTime(new Date()) } });
}

async function waitAccepted(cluster: string) {
  await waitFor(
    async () => (await conditionOf(cluster, ManagedClusterCondition.HubAccepted))?.status === 'True',
    `${cluster} accepted`,
  );
}

describe('accepting a ManagedCluster', () => {
  it('creates its namespace, RBAC, lease, finalizer and condition; its identity reaches only its own objects', async () => {
    const [mine, other] = [await createCluster(cleanups, scope), await createCluster(cleanups, scope)];
    await waitAccepted(mine);
    await waitAccepted(other);
    const cluster = await admin.clusters.get(mine);
    expect(cluster?.metadata.finalizers).toContain(managedClusterFinalizer);
    expect(await conditionOf(mine, ManagedClusterCondition.HubAccepted)).toMatchObject({
      reason: 'HubClusterAdminAccepted',
    });
    expect((await admin.namespaces.get(mine))?.metadata?.labels?.[clusterNameLabel]).toBe(mine);
    expect((await admin.clusterRoles.get(clusterRbacName(mine)))?.rules).toEqual(clusterRules(mine, true));
    const binding = await admin.clusterRoleBindings.get(clusterRbacName(mine));
    expect(binding?.subjects).toEqual([
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: clusterAgentGroups(mine)[0] },
    ]);
    for (const grant of grants) {
      const roleBinding = await admin.roleBindings.get(namespaceRbacName(mine, grant), mine);
      expect(roleBinding).toMatchObject({
        roleRef: { kind: 'ClusterRole', name: sharedClusterRoleName(grant) },
        subjects: [{ kind: 'Group', name: clusterAgentGroups(mine)[0] }],
      });
      expect(await admin.clusterRoles.get(sharedClusterRoleName(grant))).toBeDefined();
      expect(await admin.roles.get(namespaceRbacName(mine, grant), mine)).toBeUndefined();
    }
    const workBinding = await admin.roleBindings.get(namespaceRbacName(mine, 'work'), mine);
    expect(workBinding?.metadata?.finalizers).toEqual([manifestWorkCleanupFinalizer]);
    expect(await admin.leases.get(managedClusterLeaseName, mine)).toBeDefined();

    const agent = clientsFor(await agentKubeconfig(mine));
    // The authorizer sees new RBAC a moment after it is written.
    await waitFor(
      () => agent.clusters.patchStatus(mine, { status: { version: { kubernetes: 'v1.99.0' } } }),
      `${mine}'s identity to patch its own status`,
    );
    expect((await agent.clusters.list({ fieldSelector: `metadata.name=${mine}` })).items).toHaveLength(1);
    await waitFor(() => renewLease(agent, mine), `${mine}'s identity to renew its lease`);
    // Not even its own namespace's Secrets: it reads only its ManagedServiceAccount token Secrets, by name.
    await expectForbidden(agent.secrets.list({ namespace: mine }));

    await expectForbidden(agent.clusters.get(other));
    await expectForbidden(agent.clusters.patchStatus(other, { status: { version: { kubernetes: 'v0' } } }));
    await expectForbidden(agent.clusters.list());
    await expectForbidden(agent.leases.get(managedClusterLeaseName, other));
    await expectForbidden(agent.leases.patchMerge(managedClusterLeaseName, { spec: {} }, other));
    await expectForbidden(agent.roles.list({ namespace: other }));
    await expectForbidden(agent.secrets.list({ namespace: other }));
  });

  it('denying shrinks the RBAC back to reading its own ManagedCluster and says so in the condition', async () => {
    const name = await createCluster(cleanups, scope);
    await waitAccepted(name);
    const agent = clientsFor(await agentKubeconfig(name));
    const renew = () => renewLease(agent, name);
    await waitFor(renew, `${name}'s identity to renew its lease`);

    await admin.clusters.patchMerge(name, { spec: { hubAcceptsClient: false } });
    await waitFor(
      async () => (await conditionOf(name, ManagedClusterCondition.HubAccepted))?.status === 'False',
      'denied',
    );
    expect(await conditionOf(name, ManagedClusterCondition.HubAccepted)).toMatchObject({
      reason: 'HubClusterAdminDenied',
    });
    for (const grant of grants)
      expect(await admin.roleBindings.get(namespaceRbacName(name, grant), name)).toBeUndefined();
    expect((await admin.clusterRoles.get(clusterRbacName(name)))?.rules).toEqual(clusterRules(name, false));
    await waitFor(
      () =>
        renew().then(
          () => false,
          (err: unknown) => isForbidden(err),
        ),
      'lease renewal to be forbidden',
    );
    expect((await agent.clusters.get(name))?.spec.hubAcceptsClient).toBe(false);
  });
});

describe('CSR approval', () => {
  it("approves an auto-approved user's bootstrap CSR, and the kube-controller-manager signs it", async () => {
    const name = await createCluster(cleanups, scope, { hubAcceptsClient: false });
    const bootstrap = clientsFor(await kubeconfigAs({ commonName: bootstrapUser }));
    const subject = agentSubject(name, 'agent1');
    const csr = await waitFor(
      () => requestCertificate(cleanups, bootstrap.csrs, { subject, cluster: name }),
      'CSR created',
    );
    const signed = await waitFor(async () => {
      const current = await admin.csrs.get(csr);
      return current?.status?.certificate ? current : undefined;
    }, 'CSR approved and signed');
    expect(approvalOf(signed)).toMatchObject({ status: 'True', reason: CsrApprovalReason.Auto });
    const cert = new X509Certificate(Buffer.from(signed.status?.certificate ?? '', 'base64'));
    expect(cert.verify(new X509Certificate(readFileSync(env.hub.caCertPath)).publicKey)).toBe(true);
    // Go writes both organizations into one RDN: "O=a + O=b".
    expect(cert.subject.split('\n').sort()).toEqual([
      `CN=${subject.commonName}`,
      `O=${subject.organizations.join(' + O=')}`,
    ]);
  });

  it('leaves invalid CSRs alone and others waiting until approveClusterCsrs approves the valid ones', async () => {
    const name = await createCluster(cleanups, scope, { hubAcceptsClient: false });
    const otherCluster = uniqueName('reg');
    const bootstrap = clientsFor(await kubeconfigAs({ commonName: bootstrapUser }));
    const stranger = clientsFor(await kubeconfigAs({ commonName: strangerUser }));
    const token = clientsFor(await kubeconfigAs({ commonName: tokenUser, organizations: [tokenGroup] }));
    const mine = agentSubject(name, 'agent1');
    const waiting = await waitFor(
      () => requestCertificate(cleanups, token.csrs, { subject: mine, cluster: name }),
      'CSR',
    );
    // Not a requester clusteradm's accept approves for: left pending, reported.
    const strangers = await waitFor(
      () => requestCertificate(cleanups, stranger.csrs, { subject: mine, cluster: name }),
      "a stranger's CSR",
    );
    const invalid = {
      wrongOrg: { ...mine, organizations: [...mine.organizations, 'tether-e2e:cluster-admins'] },
      otherClustersCn: { ...mine, commonName: agentSubject(otherCluster, 'agent1').commonName },
      foreignLabel: agentSubject(otherCluster, 'agent1'),
    };
    const invalidCsrs: string[] = [];
    for (const subject of Object.values(invalid)) {
      invalidCsrs.push(await requestCertificate(cleanups, bootstrap.csrs, { subject, cluster: name }));
    }
    const serverUsage = ['client auth', 'server auth'];
    invalidCsrs.push(
      await requestCertificate(cleanups, bootstrap.csrs, {
        subject: mine,
        cluster: name,
        usages: serverUsage,
      }),
    );
    // One approver worker takes CSRs in arrival order: once this one is approved, all above were seen.
    // It is another cluster's: an approved CSR for `name` would count as `name` having joined.
    const sentinelCluster = await createCluster(cleanups, scope, { hubAcceptsClient: false });
    const sentinel = await requestCertificate(cleanups, bootstrap.csrs, {
      subject: agentSubject(sentinelCluster, 'agent1'),
      cluster: sentinelCluster,
    });
    await waitFor(async () => approvalOf(await admin.csrs.get(sentinel)), 'the last CSR approved');
    for (const csr of [waiting, strangers, ...invalidCsrs])
      expect(approvalOf(await admin.csrs.get(csr))).toBeUndefined();

    const result = await approveClusterCsrs(admin.clusters.kubeconfig, name);
    expect(result.approved).toEqual([waiting]);
    expect(result.skipped.map((s) => s.name).sort()).toEqual([...invalidCsrs, strangers].sort());
    expect(result.skipped.find((s) => s.name === strangers)?.problem).toContain('not a bootstrap identity');
    expect(result.accepted).toBe(true);
    // As clusteradm writes it, with tether as argv0.
    expect(approvalOf(await admin.csrs.get(waiting))).toMatchObject({
      status: 'True',
      reason: 'tether Approve',
      message: manualApprovalMessage,
    });
    expect(CsrApprovalReason.Manual).toBe('tether Approve');
    expect(manualApprovalMessage).toBe('This CSR was approved by tether certificate approve.');
    for (const csr of [strangers, ...invalidCsrs])
      expect(approvalOf(await admin.csrs.get(csr))).toBeUndefined();
    expect((await admin.clusters.get(name))?.spec.hubAcceptsClient).toBe(true);
    await waitAccepted(name);
  });

  it("approves a renewal by the same identity, not that identity asking for another cluster's", async () => {
    const name = await createCluster(cleanups, scope);
    await waitAccepted(name);
    const agent = clientsFor(await agentKubeconfig(name, 'agent1'));
    const otherCluster = uniqueName('reg');
    const foreign = await waitFor(
      () =>
        requestCertificate(cleanups, agent.csrs, {
          subject: agentSubject(otherCluster, 'agent1'),
          cluster: otherCluster,
        }),
      'the identity may create CSRs',
    );
    const renewal = await requestCertificate(cleanups, agent.csrs, {
      subject: agentSubject(name, 'agent1'),
      cluster: name,
    });
    await waitFor(async () => approvalOf(await admin.csrs.get(renewal)), 'renewal approved');
    expect(approvalOf(await admin.csrs.get(renewal))).toMatchObject({ reason: CsrApprovalReason.Auto });
    expect(approvalOf(await admin.csrs.get(foreign))).toBeUndefined();
  });

  it('the built-in signer signs approved CSRs of its signer name with its own CA', async () => {
    const name = await createCluster(cleanups, scope, { hubAcceptsClient: false });
    const bootstrap = clientsFor(await kubeconfigAs({ commonName: bootstrapUser }));
    const subject = agentSubject(name, 'agent1');
    const request = { subject, cluster: name, signerName: hubClientSigner, expirationSeconds: 3600 };
    const csr = await waitFor(() => requestCertificate(cleanups, bootstrap.csrs, request), 'CSR created');
    const pem = await waitFor(async () => {
      const certificate = (await admin.csrs.get(csr))?.status?.certificate;
      return certificate && Buffer.from(certificate, 'base64').toString();
    }, 'CSR signed by the built-in signer');
    const cert = new X509Certificate(pem);
    expect(cert.verify(new X509Certificate(signerCa.certPem).publicKey)).toBe(true);
    expect(certificateInfo(pem)).toMatchObject({ commonName: subject.commonName });
    expect(certificateInfo(pem).organizations.sort()).toEqual([...subject.organizations].sort());
    const lifetimeSeconds = (Date.parse(cert.validTo) - Date.now()) / 1000;
    expect(lifetimeSeconds).toBeGreaterThan(3600 - 120);
    expect(lifetimeSeconds).toBeLessThan(3600 + 120);
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']); // client auth only
  });
});

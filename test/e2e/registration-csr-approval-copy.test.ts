// Approving a CSR from a copy the approver already holds (the hub's informer, `tether accept`'s
// list) instead of reading it first: the approval keeps everything the CSR carries (its
// cluster-name label above all: agents and the hub find a cluster's CSRs by it), and a copy that
// is out of date never overrides a decision someone made meanwhile (its resourceVersion guards the
// write; the fresh read after the 409 decides). Real hub apiserver and kube-controller-manager.
import { CertificatesV1Api, V1CertificateSigningRequestCondition } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { clusterNameLabel } from '../../src/api/index.ts';
import { approveCsr } from '../../src/registration/hub/csr-approval.ts';
import { agentSubject } from '../../src/tunnel/identity.ts';
import { uniqueName } from './fixtures/helpers.ts';
import { admin, approvalOf, Cleanups, hub, requestCertificate } from './fixtures/registration-hub.ts';

const cleanups = new Cleanups();
afterAll(() => cleanups.run());

const approval = { reason: 'TestApprove', message: 'approved from a held copy' };

describe('CSR approval from a held copy', () => {
  it('keeps the CSR’s labels and approves it in one write', async () => {
    const cluster = uniqueName('copy');
    const name = await requestCertificate(cleanups, admin.csrs, {
      subject: agentSubject(cluster, 'a1'),
      cluster,
    });
    const held = await admin.csrs.get(name);
    expect(await approveCsr(hub, name, approval, held)).toBe(true);
    const after = await admin.csrs.get(name);
    expect(approvalOf(after)).toMatchObject({ status: 'True', reason: 'TestApprove' });
    expect(after?.metadata?.labels?.[clusterNameLabel]).toBe(cluster);
    const listed = await admin.csrs.list({ labelSelector: `${clusterNameLabel}=${cluster}` });
    expect(listed.items.map((c) => c.metadata?.name)).toEqual([name]);
  });

  it('leaves a CSR someone denied after the copy was taken', async () => {
    const cluster = uniqueName('copy');
    const name = await requestCertificate(cleanups, admin.csrs, {
      subject: agentSubject(cluster, 'a1'),
      cluster,
    });
    const held = await admin.csrs.get(name);
    const api = hub.makeApiClient(CertificatesV1Api);
    const live = await api.readCertificateSigningRequest({ name });
    const denied = Object.assign(new V1CertificateSigningRequestCondition(), {
      type: 'Denied',
      status: 'True',
      reason: 'TestDeny',
      message: 'denied meanwhile',
      lastUpdateTime: new Date(),
    });
    live.status = { ...live.status, conditions: [denied] };
    await api.replaceCertificateSigningRequestApproval({ name, body: live });

    expect(await approveCsr(hub, name, approval, held)).toBe(false);
    const conditions = (await admin.csrs.get(name))?.status?.conditions ?? [];
    expect(conditions.map((c) => [c.type, c.reason])).toEqual([['Denied', 'TestDeny']]);
  });
});

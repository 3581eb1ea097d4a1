// The pure rules of addon registration: which registrations the hub hands out, which subject the
// agent asks for, and which CSRs the hub approves (who asked, for what). No apiserver.
import { describe, expect, it } from 'vitest';
import { checkAddonCsr, subjectMatches } from '../../src/addon/hub/registration/csr-policy.ts';
import type { ManagedClusterAddOn, RegistrationConfig } from '../../src/api/addon.ts';
import {
  addonAgentUser,
  addonDefaultGroups,
  defaultAddonRegistration,
  registrationProblem,
  registrationSecretName,
  registrationSubject,
} from '../../src/api/addon-registration.ts';
import type { ManagedCluster } from '../../src/api/cluster.ts';
import { createAddonCertificateRequest } from '../../src/registration/agent/addon/csr.ts';
import type { CertificateSigningRequest } from '../../src/registration/hub/resources.ts';

const kubeClient = 'kubernetes.io/kube-apiserver-client';
const mca = (cluster: string, registrations: RegistrationConfig[]): ManagedClusterAddOn => ({
  apiVersion: 'addon.open-cluster-management.io/v1alpha1',
  kind: 'ManagedClusterAddOn',
  metadata: { name: 'demo', namespace: cluster },
  spec: {},
  status: { registrations },
});
const cluster = (name: string, accepted = true) =>
  ({ metadata: { name }, spec: { hubAcceptsClient: accepted } }) as unknown as ManagedCluster;

async function csr(
  labels: { cluster: string; addon: string },
  subject: { commonName: string; organizations: string[]; organizationalUnits?: string[] },
  requester: { username: string; groups: string[] },
  signerName = kubeClient,
): Promise<CertificateSigningRequest> {
  const { csrPem } = await createAddonCertificateRequest(
    { organizationalUnits: [], ...subject },
    'demo.addon.open-cluster-management.io',
  );
  return {
    metadata: {
      name: 'addon-c1-demo-x',
      labels: {
        'open-cluster-management.io/cluster-name': labels.cluster,
        'open-cluster-management.io/addon-name': labels.addon,
      },
    },
    spec: {
      request: Buffer.from(csrPem).toString('base64'),
      signerName,
      usages: ['digital signature', 'key encipherment', 'client auth'],
      ...requester,
    },
  };
}

const clusterAgent = (c: string) => ({
  username: `system:open-cluster-management:${c}:agent1`,
  groups: [`system:open-cluster-management:${c}`, 'system:open-cluster-management:managed-clusters'],
});
const defaultSubject = (c: string) => ({
  commonName: addonAgentUser(c, 'demo', 'addon-agent'),
  organizations: addonDefaultGroups(c, 'demo'),
});

describe('addon registrations the hub hands out', () => {
  it('the default is OCM’s: kube-apiserver-client, user …:agent:addon-agent, the three default groups', () => {
    expect(defaultAddonRegistration('c1', 'demo')).toEqual({
      signerName: kubeClient,
      subject: {
        user: 'system:open-cluster-management:cluster:c1:addon:demo:agent:addon-agent',
        groups: [
          'system:open-cluster-management:cluster:c1:addon:demo',
          'system:open-cluster-management:addon:demo',
          'system:authenticated',
        ],
      },
    });
    expect(registrationProblem(defaultAddonRegistration('c1', 'demo'), 'c1', 'demo')).toBeUndefined();
  });

  it('refuses a hub credential naming another cluster, another addon or a foreign group', () => {
    const reg = (user: string, groups: string[]) => ({ signerName: kubeClient, subject: { user, groups } });
    expect(registrationProblem(reg(addonAgentUser('c2', 'demo', 'a'), []), 'c1', 'demo')).toMatch(
      /names its cluster/,
    );
    expect(registrationProblem(reg(addonAgentUser('c1', 'other', 'a'), []), 'c1', 'demo')).toMatch(
      /names its cluster/,
    );
    expect(
      registrationProblem(reg(`${addonAgentUser('c1', 'demo', 'a')}:x`, []), 'c1', 'demo'),
    ).toBeDefined();
    expect(
      registrationProblem(
        reg('', ['system:open-cluster-management:cluster:c1:addon:demo', 'system:masters']),
        'c1',
        'demo',
      ),
    ).toMatch(/system:masters/);
    expect(registrationProblem(reg('', ['system:open-cluster-management:addon:demo']), 'c1', 'demo')).toMatch(
      /must include/,
    );
    expect(
      registrationProblem(
        { signerName: 'example.com/s', subject: { groups: ['system:masters'] } },
        'c1',
        'demo',
      ),
    ).toMatch(/reserved/);
  });

  it('the agent fills an empty subject as OCM does; secrets are named as OCM names them', () => {
    expect(registrationSubject({ signerName: kubeClient }, 'c1', 'demo', 'ag')).toEqual({
      commonName: 'system:open-cluster-management:cluster:c1:addon:demo:agent:ag',
      organizations: ['system:open-cluster-management:cluster:c1:addon:demo'],
      organizationalUnits: [],
    });
    expect(registrationSubject({ signerName: 'example.com/s' }, 'c1', 'demo', 'ag').organizations).toEqual(
      [],
    );
    expect(registrationSecretName('demo', kubeClient)).toBe('demo-hub-kubeconfig');
    expect(registrationSecretName('cluster-proxy', 'open-cluster-management.io/proxy-agent-signer')).toBe(
      'cluster-proxy-open-cluster-management.io-proxy-agent-signer-client-cert',
    );
  });

  it('an empty registration user accepts any agent name, never one with a colon', () => {
    const reg: RegistrationConfig = { signerName: kubeClient };
    const subject = (cn: string) => ({
      commonName: cn,
      organizations: ['system:open-cluster-management:cluster:c1:addon:demo'],
      organizationalUnits: [],
    });
    expect(subjectMatches(subject(addonAgentUser('c1', 'demo', 'x')), reg, 'c1', 'demo')).toBe(true);
    expect(subjectMatches(subject(addonAgentUser('c1', 'demo', 'x:y')), reg, 'c1', 'demo')).toBe(false);
    expect(subjectMatches(subject(addonAgentUser('c2', 'demo', 'x')), reg, 'c1', 'demo')).toBe(false);
  });
});

describe('addon CSR approval', () => {
  const published = [defaultAddonRegistration('c1', 'demo')];

  it('approves the cluster’s registration identity asking for its addon’s registered subject', async () => {
    const check = checkAddonCsr(
      await csr({ cluster: 'c1', addon: 'demo' }, defaultSubject('c1'), clusterAgent('c1')),
      'demo',
      mca('c1', published),
      cluster('c1'),
      published,
    );
    expect(check.ok).toBe(true);
  });

  it('approves a renewal by the very addon identity, not by another addon of the cluster', async () => {
    const own = { username: defaultSubject('c1').commonName, groups: addonDefaultGroups('c1', 'demo') };
    const other = { username: addonAgentUser('c1', 'other', 'a'), groups: addonDefaultGroups('c1', 'other') };
    const labels = { cluster: 'c1', addon: 'demo' };
    expect(
      checkAddonCsr(
        await csr(labels, defaultSubject('c1'), own),
        'demo',
        mca('c1', published),
        cluster('c1'),
        published,
      ).ok,
    ).toBe(true);
    const refused = checkAddonCsr(
      await csr(labels, defaultSubject('c1'), other),
      'demo',
      mca('c1', published),
      cluster('c1'),
      published,
    );
    expect(refused).toMatchObject({ ok: false, problem: expect.stringMatching(/neither cluster c1/) });
  });

  it('refuses another cluster’s identity, a bootstrap token, an unaccepted cluster, a missing addon', async () => {
    const labels = { cluster: 'c1', addon: 'demo' };
    const fromC2 = await csr(labels, defaultSubject('c1'), clusterAgent('c2'));
    expect(checkAddonCsr(fromC2, 'demo', mca('c1', published), cluster('c1'), published).ok).toBe(false);
    const bootstrap = await csr(labels, defaultSubject('c1'), {
      username: 'system:bootstrap:abc',
      groups: ['system:bootstrappers'],
    });
    expect(checkAddonCsr(bootstrap, 'demo', mca('c1', published), cluster('c1'), published).ok).toBe(false);
    const fine = await csr(labels, defaultSubject('c1'), clusterAgent('c1'));
    expect(checkAddonCsr(fine, 'demo', mca('c1', published), cluster('c1', false), published).ok).toBe(false);
    expect(checkAddonCsr(fine, 'demo', undefined, cluster('c1'), published).ok).toBe(false);
    expect(checkAddonCsr(fine, 'demo', mca('c1', published), cluster('c1'), []).ok).toBe(false);
  });

  it('judges by the hub’s registrations, not by status.registrations the cluster may have rewritten', async () => {
    const tampered: RegistrationConfig = {
      signerName: kubeClient,
      subject: {
        user: addonAgentUser('c1', 'demo', 'mine'),
        groups: ['system:open-cluster-management:cluster:c1:addon:demo'],
      },
    };
    const subject = {
      commonName: addonAgentUser('c1', 'demo', 'mine'),
      organizations: tampered.subject!.groups!,
    };
    const request = await csr({ cluster: 'c1', addon: 'demo' }, subject, clusterAgent('c1'));
    expect(checkAddonCsr(request, 'demo', mca('c1', [tampered]), cluster('c1'), published).ok).toBe(false);
  });

  it('refuses a subject other than the registration’s, and server usages', async () => {
    const labels = { cluster: 'c1', addon: 'demo' };
    const moreGroups = {
      ...defaultSubject('c1'),
      organizations: [...addonDefaultGroups('c1', 'demo'), 'system:open-cluster-management:c1'],
    };
    expect(
      checkAddonCsr(
        await csr(labels, moreGroups, clusterAgent('c1')),
        'demo',
        mca('c1', published),
        cluster('c1'),
        published,
      ).ok,
    ).toBe(false);
    const server = await csr(labels, defaultSubject('c1'), clusterAgent('c1'));
    server.spec.usages = ['server auth', 'client auth'];
    expect(checkAddonCsr(server, 'demo', mca('c1', published), cluster('c1'), published)).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/server auth/),
    });
  });
});

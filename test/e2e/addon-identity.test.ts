// The addon identity's trust boundary on a real hub: who may obtain an addon's certificate. A
// registration hub (scoped to this file's clusters) gives clusters A and B their RBAC; the hub end
// of addon registration (startAddonRegistrationController) runs for three addons; identities are
// minted from the hub CA as the signer would issue them. Every refusal is proven by the
// controller's own "addon CSR left alone" line for that CSR (it looked and said no), then by the
// CSR carrying no Approved condition. The positive cases (the cluster's own registration identity,
// the addon renewing itself, a custom signer) show the same controller does approve.
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAddonRegistrationController } from '../../src/addon/hub/registration/index.ts';
import type { AgentAddon } from '../../src/addon/sdk/types.ts';
import {
  type AddonCertificateSubject,
  addonAgentUser,
  addonDefaultGroups,
  defaultAddonAgentName,
} from '../../src/api/addon-registration.ts';
import { type ManagedClusterAddOn, managedClusterAddOnResource } from '../../src/api/index.ts';
import { ResourceClient } from '../../src/kube/index.ts';
import { createCertificateAuthority, signCertificateRequest } from '../../src/pki/index.ts';
import { createAddonCsr } from '../../src/registration/agent/addon/csr.ts';
import type { CertificateSigningRequest as AgentCsr } from '../../src/registration/agent/kinds.ts';
import type { CertificateSigningRequest } from '../../src/registration/hub/resources.ts';
import { certificateSigningRequestResource } from '../../src/registration/hub/resources.ts';
import { uniqueName } from './fixtures/helpers.ts';
import {
  admin,
  agentKubeconfig,
  allowCsrRequests,
  approvalOf,
  Cleanups,
  capturingLogger,
  createCluster,
  hub,
  kubeconfigAs,
  startScopedHub,
  waitFor,
} from './fixtures/registration-hub.ts';

const cleanups = new Cleanups();
const addons = new ResourceClient<ManagedClusterAddOn>(hub, managedClusterAddOnResource);
const kubeClient = 'kubernetes.io/kube-apiserver-client';
const customSigner = 'e2e.tether.dev/addon-signer';
const first = uniqueName('e2e-addon-a');
const second = uniqueName('e2e-addon-b');
const signed = uniqueName('e2e-addon-s');
const logs = capturingLogger();
let clusterA: string;
let clusterB: string;

const csrsAs = (kc: KubeConfig) => new ResourceClient<AgentCsr>(kc, certificateSigningRequestResource);
const defaultSubject = (cluster: string, addon: string): AddonCertificateSubject => ({
  commonName: addonAgentUser(cluster, addon, defaultAddonAgentName),
  organizations: addonDefaultGroups(cluster, addon),
  organizationalUnits: [],
});

/** Create an addon CSR as `kc` (labels name `cluster` and `addon`); cleaned up afterwards. */
async function request(
  kc: KubeConfig,
  cluster: string,
  addon: string,
  subject: AddonCertificateSubject,
  signerName = kubeClient,
): Promise<string> {
  const { csrName } = await createAddonCsr(csrsAs(kc), { cluster, addon, signerName, subject });
  cleanups.add(() => admin.csrs.delete(csrName, undefined, { ignoreNotFound: true }));
  return csrName;
}

/** The controller looked at `csr` and left it alone; it carries no Approved condition. */
async function leftAlone(csr: string): Promise<string> {
  const line = await waitFor(
    () => logs.lines.find((l) => l.includes('addon CSR left alone') && l.includes(csr)),
    `the addon controller to refuse ${csr}`,
  );
  expect(approvalOf(await admin.csrs.get(csr))).toBeUndefined();
  return JSON.parse(line).problem ?? JSON.parse(line).msg;
}

async function issued(csr: string): Promise<CertificateSigningRequest> {
  return waitFor(async () => {
    const c = await admin.csrs.get(csr);
    return approvalOf(c)?.status === 'True' && c?.status?.certificate ? c : undefined;
  }, `${csr} approved and issued`);
}

beforeAll(async () => {
  const scope = uniqueName('addon-identity');
  await startScopedHub(cleanups, scope);
  clusterA = await createCluster(cleanups, scope);
  clusterB = await createCluster(cleanups, scope);
  // Both accepted: their namespaces and their registration identities' RBAC exist.
  for (const c of [clusterA, clusterB]) await waitFor(() => admin.namespaces.get(c), `namespace ${c}`);
  const ca = await createCertificateAuthority('e2e addon signer');
  const registered: AgentAddon[] = [
    { name: first, manifests: () => [], registration: {} },
    { name: second, manifests: () => [], registration: {} },
    {
      name: signed,
      manifests: () => [],
      registration: {
        configs: () => [{ signerName: customSigner, subject: { user: 'e2e-agent', groups: ['e2e-group'] } }],
        sign: (csr) =>
          signCertificateRequest(ca, Buffer.from(csr.spec.request, 'base64').toString('utf8'), {
            usage: 'client',
          }),
      },
    },
  ];
  for (const addon of registered) {
    const controller = startAddonRegistrationController({ hubKubeConfig: hub, addon, log: logs.log });
    cleanups.add(() => controller.stop());
    for (const cluster of [clusterA, clusterB]) {
      await addons.create({ metadata: { name: addon.name, namespace: cluster }, spec: {} });
      cleanups.add(() => addons.delete(addon.name, cluster, { ignoreNotFound: true }));
      await waitFor(
        async () => (await addons.get(addon.name, cluster))?.status?.registrations?.length,
        'registrations',
      );
    }
  }
}, 60_000);

afterAll(() => cleanups.run());

describe('addon identity', () => {
  it('a cluster’s registration identity obtains its own addon’s identity (the control case)', async () => {
    const csr = await request(
      await agentKubeconfig(clusterA),
      clusterA,
      first,
      defaultSubject(clusterA, first),
    );
    const done = await issued(csr);
    expect(approvalOf(done)?.reason).toBe('AutoApprovedByHubCSRApprovingController');
  });

  it('a cluster identity never obtains another cluster’s addon identity', async () => {
    const a = await agentKubeconfig(clusterA);
    // labelled for B, as B's addon
    expect(await leftAlone(await request(a, clusterB, first, defaultSubject(clusterB, first)))).toContain(
      'neither cluster',
    );
    // labelled for A, asking B's subject
    expect(await leftAlone(await request(a, clusterA, first, defaultSubject(clusterB, first)))).toContain(
      'is not what a registration',
    );
  });

  it('a cluster identity that rewrites its addon’s status.registrations still obtains only the hub’s registration', async () => {
    const a = await agentKubeconfig(clusterA);
    const asCluster = new ResourceClient<ManagedClusterAddOn>(a, managedClusterAddOnResource);
    const mca = await asCluster.get(first, clusterA);
    const mine = addonAgentUser(clusterA, first, 'mine');
    const groups = [`system:open-cluster-management:cluster:${clusterA}:addon:${first}`];
    // The registration agent's RBAC lets it write its addons' status; the hub does not trust it.
    await asCluster.replaceStatus({
      ...mca!,
      status: {
        ...mca!.status,
        registrations: [{ signerName: kubeClient, subject: { user: mine, groups } }],
      },
    });
    const subject = { commonName: mine, organizations: groups, organizationalUnits: [] };
    expect(await leftAlone(await request(a, clusterA, first, subject))).toContain(
      'is not what a registration',
    );
  });

  it('a bootstrap token never obtains an addon identity', async () => {
    const user = `system:bootstrap:${uniqueName('tok')}`;
    await allowCsrRequests(cleanups, [user]);
    const bootstrap = await kubeconfigAs({ commonName: user, organizations: ['system:bootstrappers'] });
    await leftAlone(await request(bootstrap, clusterA, first, defaultSubject(clusterA, first)));
  });

  it('a cluster identity never obtains an addon identity that carries the cluster’s group', async () => {
    const subject = defaultSubject(clusterA, first);
    // its cluster's own group: the certificate would act as the cluster (system:masters the apiserver refuses itself)
    subject.organizations.push(`system:open-cluster-management:${clusterA}`);
    await leftAlone(await request(await agentKubeconfig(clusterA), clusterA, first, subject));
  });

  it('an addon identity never obtains another addon’s identity, and renews only its own', async () => {
    const own = defaultSubject(clusterA, first);
    await allowCsrRequests(cleanups, [own.commonName]); // as if an admin let it create CSRs
    const addonKc = await kubeconfigAs({ commonName: own.commonName, organizations: own.organizations });
    expect(
      await leftAlone(await request(addonKc, clusterA, second, defaultSubject(clusterA, second))),
    ).toContain('neither cluster');
    await issued(await request(addonKc, clusterA, first, own)); // a renewal by the same identity
  });

  it('an addon identity never obtains its cluster’s identity', async () => {
    const own = defaultSubject(clusterA, first);
    await allowCsrRequests(cleanups, [own.commonName]);
    const addonKc = await kubeconfigAs({ commonName: own.commonName, organizations: own.organizations });
    const cluster = {
      commonName: `system:open-cluster-management:${clusterA}:agent1`,
      organizations: [
        `system:open-cluster-management:${clusterA}`,
        'system:open-cluster-management:managed-clusters',
      ],
      organizationalUnits: [],
    };
    // Labelled as a cluster CSR (no addon label): the registration hub's approver decides, and never for another identity.
    const { csrName } = await createAddonCsr(csrsAs(addonKc), {
      cluster: clusterA,
      addon: first,
      signerName: kubeClient,
      subject: cluster,
    });
    cleanups.add(() => admin.csrs.delete(csrName, undefined, { ignoreNotFound: true }));
    await leftAlone(csrName);
  });

  it('an addon that asks for a hub credential beyond its own scope gets no registration (RegistrationApplied False)', async () => {
    const greedy = uniqueName('e2e-addon-g');
    const controller = startAddonRegistrationController({
      hubKubeConfig: hub,
      log: logs.log,
      addon: {
        name: greedy,
        manifests: () => [],
        registration: {
          configs: (mc) => [
            {
              signerName: kubeClient,
              subject: {
                groups: [
                  `system:open-cluster-management:cluster:${mc.metadata?.name}:addon:${greedy}`,
                  'system:cluster-admins',
                ],
              },
            },
          ],
        },
      },
    });
    cleanups.add(() => controller.stop());
    await addons.create({ metadata: { name: greedy, namespace: clusterA }, spec: {} });
    cleanups.add(() => addons.delete(greedy, clusterA, { ignoreNotFound: true }));
    const mca = await waitFor(async () => {
      const m = await addons.get(greedy, clusterA);
      return m?.status?.conditions?.some((c) => c.type === 'RegistrationApplied') ? m : undefined;
    }, 'RegistrationApplied');
    expect(mca.status?.conditions?.find((c) => c.type === 'RegistrationApplied')).toMatchObject({
      status: 'False',
      reason: 'SetPermissionFailed',
      message: expect.stringContaining('system:cluster-admins'),
    });
    expect(mca.status?.registrations ?? []).toEqual([]);
  });

  it('a custom signer’s certificate is signed by the addon for the cluster’s registration identity only', async () => {
    const subject = { commonName: 'e2e-agent', organizations: ['e2e-group'], organizationalUnits: [] };
    const mine = await issued(
      await request(await agentKubeconfig(clusterA), clusterA, signed, subject, customSigner),
    );
    expect(Buffer.from(mine.status?.certificate ?? '', 'base64').toString()).toContain('BEGIN CERTIFICATE');
    await leftAlone(await request(await agentKubeconfig(clusterA), clusterB, signed, subject, customSigner));
  });
});

// The managed end of addon registration against a hub whose add-on API has no conversion webhook:
// ManagedClusterAddOn stored at v1beta1 and served at v1alpha1 with conversion strategy None (as on
// an OCM hub missing the webhook), on a control plane of its own. The v1alpha1 reader then gets
// registrations without a signerName. The agent must say so on the add-on — ClusterCertificateRotated
// False, reason InvalidRegistration, naming the entry — create no CSR and keep going (the report
// goes with the bad entries), instead of
// failing on `undefined.replaceAll` and retrying forever with nothing to show (issue 28's report).
// The same control plane also shows that an agent cleans up only the add-on Secrets it wrote: a
// cluster joined to two hubs runs two agents, and the second hub's must not delete the first's.
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toCustomResourceDefinition } from '../../src/api/crds.ts';
import {
  type ManagedClusterAddOn,
  type ManagedClusterAddOnV1beta1,
  managedClusterAddOnCrd,
  managedClusterAddOnResource,
  managedClusterAddOnV1beta1Resource,
} from '../../src/api/index.ts';
import { findCondition, type KubeObject, ResourceClient } from '../../src/kube/index.ts';
import {
  certificateSigningRequestResource,
  namespaceResource,
  secretResource,
} from '../../src/kube/kinds.ts';
import { type ControlPlane, startControlPlane } from '../../src/localenv/controlplane.ts';
import { installCrds } from '../../src/localenv/crds.ts';
import {
  type AddonRegistrationAgent,
  startAddonRegistrationAgent,
} from '../../src/registration/agent/addon/registration.ts';
import { pollUntil } from '../../src/wait.ts';
import { adminKubeConfig } from './fixtures/helpers.ts';

const CLUSTER = 'cluster1';

/** The control plane as the agents' hub: its server and CA. */
function hubEndpointOf(kc: KubeConfig): { server: string; caPem: string } {
  const cluster = kc.getCurrentCluster();
  return {
    server: cluster?.server ?? '',
    caPem: Buffer.from(cluster?.caData ?? '', 'base64').toString('utf8'),
  };
}
let cp: ControlPlane | undefined;
let agent: AddonRegistrationAgent | undefined;
let second: AddonRegistrationAgent | undefined;

beforeAll(async () => {
  cp = await startControlPlane(`nowebhook${process.pid % 10000}`);
  const kc = adminKubeConfig(cp);
  // The add-on CRD as a hub without the webhook has it: v1beta1 stored, no conversion.
  const crd = structuredClone(managedClusterAddOnCrd()) as ReturnType<typeof managedClusterAddOnCrd> & {
    spec: { conversion?: unknown; versions: Array<{ name: string; storage: boolean }> };
  };
  crd.spec.conversion = { strategy: 'None' };
  for (const v of crd.spec.versions) v.storage = v.name === 'v1beta1';
  await installCrds(kc, [toCustomResourceDefinition(crd)]);
  await new ResourceClient(kc, namespaceResource).create({ metadata: { name: CLUSTER } });
}, 180_000);

afterAll(async () => {
  await agent?.stop();
  await second?.stop();
  await cp?.stop();
});

describe('addon registration without the hub’s conversion webhook', () => {
  it('reports registrations without a signerName on the add-on (InvalidRegistration), creates no CSR, and clears the report once they are gone', async () => {
    if (!cp) throw new Error('no control plane');
    const kc = adminKubeConfig(cp);
    const beta = new ResourceClient<ManagedClusterAddOnV1beta1>(kc, managedClusterAddOnV1beta1Resource);
    const alpha = new ResourceClient<ManagedClusterAddOn>(kc, managedClusterAddOnResource);
    const created = await beta.create({
      apiVersion: 'addon.open-cluster-management.io/v1beta1',
      kind: 'ManagedClusterAddOn',
      metadata: { name: 'legacy', namespace: CLUSTER },
      spec: {},
    });
    await beta.replaceStatus({
      ...created,
      status: { registrations: [{ type: 'kubeClient', kubeClient: { subject: { user: 'someone' } } }] },
    });
    // what a v1alpha1 reader (the agent) gets: no signerName
    const seen = await alpha.get('legacy', CLUSTER);
    expect(seen?.status?.registrations?.[0]?.signerName).toBeUndefined();

    agent = startAddonRegistrationAgent({
      clusterName: CLUSTER,
      agentName: 'agent',
      managedKubeConfig: kc,
      agentNamespace: 'open-cluster-management-agent',
    });
    agent.setHubCredentials(kc, hubEndpointOf(kc));
    const condition = await pollUntil(
      async () => {
        const mca = await alpha.get('legacy', CLUSTER);
        const c = findCondition(mca?.status?.conditions, 'ClusterCertificateRotated');
        return c?.reason === 'InvalidRegistration' ? c : undefined;
      },
      { timeoutMs: 30_000, description: 'ClusterCertificateRotated InvalidRegistration on the add-on' },
    );
    expect(condition.status).toBe('False');
    expect(condition.message).toContain('status.registrations[0] has no signerName');
    const csrs = new ResourceClient(kc, certificateSigningRequestResource);
    expect(
      (await csrs.list({ labelSelector: 'open-cluster-management.io/addon-name=legacy' })).items,
    ).toEqual([]);

    // The hub withdraws the registrations (a status without them): the report goes, still no CSR.
    const current = (await beta.get('legacy', CLUSTER)) as ManagedClusterAddOnV1beta1;
    await beta.replaceStatus({ ...current, status: { ...current.status, registrations: [] } });
    await pollUntil(
      async () => {
        const mca = await alpha.get('legacy', CLUSTER);
        return findCondition(mca?.status?.conditions, 'ClusterCertificateRotated') === undefined;
      },
      { timeoutMs: 30_000, description: 'the InvalidRegistration report cleared' },
    );
    expect(
      (await csrs.list({ labelSelector: 'open-cluster-management.io/addon-name=legacy' })).items,
    ).toEqual([]);
  }, 90_000);

  it("an agent deletes only the add-on Secrets it wrote: a second hub's agent on the cluster leaves the first's alone", async () => {
    if (!cp) throw new Error('no control plane');
    const kc = adminKubeConfig(cp);
    const secrets = new ResourceClient(kc, secretResource);
    const labels = (owner: string, addon: string) => ({
      'addon.tether.dev/registration-secret': 'true',
      'addon.tether.dev/agent-namespace': owner,
      'open-cluster-management.io/cluster-name': CLUSTER,
      'open-cluster-management.io/addon-name': addon,
    });
    await new ResourceClient(kc, namespaceResource).create({ metadata: { name: 'addon-ns' } });
    // the first hub's agent wrote cluster-proxy's credential; the second's once wrote one for an add-on since gone
    await secrets.create({
      metadata: {
        name: 'cluster-proxy-hub-kubeconfig',
        namespace: 'addon-ns',
        labels: labels('open-cluster-management-agent', 'cluster-proxy'),
      },
      stringData: { kubeconfig: 'first hub' },
    } as KubeObject);
    await secrets.create({
      metadata: {
        name: 'gone-hub-kubeconfig',
        namespace: 'addon-ns',
        labels: labels('open-cluster-management-agent-hub2', 'gone'),
      },
      stringData: { kubeconfig: 'second hub' },
    } as KubeObject);
    // the second hub has no ManagedClusterAddOn of either name: at start its agent cleans up its own
    second = startAddonRegistrationAgent({
      clusterName: CLUSTER,
      agentName: 'agent2',
      managedKubeConfig: kc,
      agentNamespace: 'open-cluster-management-agent-hub2',
    });
    second.setHubCredentials(kc, hubEndpointOf(kc));
    await pollUntil(async () => !(await secrets.get('gone-hub-kubeconfig', 'addon-ns')), {
      timeoutMs: 30_000,
      description: "the second agent's own stale Secret deleted",
    });
    expect(await secrets.get('cluster-proxy-hub-kubeconfig', 'addon-ns')).toBeDefined();
  }, 60_000);
});

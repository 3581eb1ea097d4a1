// `helloworld.ts manager` as a process against the shared hub: it registers ClusterManagementAddOn
// `helloworld`, and for a ManagedClusterAddOn `helloworld` in a cluster namespace delivers the agent
// by ManifestWork addon-helloworld-deploy-0 (the Deployment running the example's agent from the
// given image, for that cluster) and gives the agent its hub identity (status.registrations with
// OCM's default subject, RegistrationApplied). Disabling (deleting the ManagedClusterAddOn) takes
// the work away.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ClusterManagementAddOn,
  clusterManagementAddOnResource,
  type ManagedClusterAddOn,
  managedClusterAddOnResource,
} from '../../src/api/addon.ts';
import { type ManagedCluster, managedClusterResource } from '../../src/api/cluster.ts';
import { type ManifestWork, manifestWorkResource } from '../../src/api/work.ts';
import { findCondition, ResourceClient } from '../../src/kube/index.ts';
import { namespaceResource } from '../../src/registration/hub/resources.ts';
import { HelloworldProcess } from './fixtures/addon-helloworld.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';
import { Cleanups } from './fixtures/registration-hub.ts';

const env = testEnv();
const hub = adminKubeConfig(env.hub);
const cleanups = new Cleanups();
const cluster = uniqueName('hello-mgr');
const image = 'registry.example/tether:helloworld-e2e';
const leaseNamespace = 'open-cluster-management-hub';

const namespaces = new ResourceClient(hub, namespaceResource);
const clusters = new ResourceClient<ManagedCluster>(hub, managedClusterResource);
const cmas = new ResourceClient<ClusterManagementAddOn>(hub, clusterManagementAddOnResource);
const mcas = new ResourceClient<ManagedClusterAddOn>(hub, managedClusterAddOnResource);
const works = new ResourceClient<ManifestWork>(hub, manifestWorkResource);

let manager: HelloworldProcess | undefined;
function eventually<T>(check: () => Promise<T | undefined | false>, what: string): Promise<T> {
  if (!manager) throw new Error('manager not started');
  return manager.eventually(check, what, 60_000);
}

beforeAll(async () => {
  // the manager's leader Lease lives there (tether init creates it on a real hub)
  if (!(await namespaces.get(leaseNamespace))) {
    await namespaces.create({ metadata: { name: leaseNamespace } });
    cleanups.add(() => namespaces.delete(leaseNamespace, undefined, { ignoreNotFound: true }));
  }
  cleanups.add(() => cmas.delete('helloworld', undefined, { ignoreNotFound: true }));
  cleanups.add(() => namespaces.delete(cluster, undefined, { ignoreNotFound: true }));
  cleanups.add(() => clusters.delete(cluster, undefined, { ignoreNotFound: true }));
  await clusters.create({ metadata: { name: cluster }, spec: { hubAcceptsClient: true } });
  await namespaces.create({ metadata: { name: cluster } });
  const started = new HelloworldProcess([
    'manager',
    `--kubeconfig=${env.hub.kubeconfigPath}`,
    `--image=${image}`,
  ]);
  manager = started;
  cleanups.add(() => started.stop());
  // while the manager still runs, so its finalizer on the add-on is released
  cleanups.add(async () => {
    await mcas.delete('helloworld', cluster, { ignoreNotFound: true });
    await eventually(async () => !(await mcas.get('helloworld', cluster)), 'the add-on deleted');
  });
});
afterAll(() => cleanups.run());

describe('helloworld manager', () => {
  it('registers ClusterManagementAddOn helloworld', async () => {
    const cma = await eventually(() => cmas.get('helloworld'), 'ClusterManagementAddOn helloworld');
    expect(cma.spec.addOnMeta?.displayName).toBe('helloworld');
  });

  it('delivers the agent to an enabled cluster by ManifestWork addon-helloworld-deploy-0 and gives it a hub identity', async () => {
    await mcas.create({
      metadata: { name: 'helloworld', namespace: cluster },
      spec: { installNamespace: 'helloworld' },
    });
    const work = await eventually(() => works.get('addon-helloworld-deploy-0', cluster), 'the deploy work');
    expect(work.metadata?.labels?.['open-cluster-management.io/addon-name']).toBe('helloworld');
    const manifests = work.spec?.workload?.manifests ?? [];
    const deployment = manifests.find((m) => m.kind === 'Deployment') as unknown as {
      metadata: { namespace: string };
      spec: { template: { spec: { containers: { image: string; args: string[] }[] } } };
    };
    expect(deployment.metadata.namespace).toBe('helloworld');
    const container = deployment.spec.template.spec.containers[0];
    expect(container?.image).toBe(image);
    expect(container?.args).toContain(`--cluster-name=${cluster}`);

    const registered = await eventually(async () => {
      const mca = await mcas.get('helloworld', cluster);
      const applied = findCondition(mca?.status?.conditions, 'RegistrationApplied');
      return applied?.status === 'True' ? mca : undefined;
    }, 'RegistrationApplied');
    expect(registered.status?.registrations?.[0]).toMatchObject({
      signerName: 'kubernetes.io/kube-apiserver-client',
      subject: {
        groups: expect.arrayContaining([
          `system:open-cluster-management:cluster:${cluster}:addon:helloworld`,
        ]),
      },
    });
  });

  it('takes the work away when the add-on is disabled', async () => {
    await mcas.delete('helloworld', cluster);
    await eventually(
      async () => !(await works.get('addon-helloworld-deploy-0', cluster)),
      'the work deleted',
    );
  });
});

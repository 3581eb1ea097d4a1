// The CRDs as a real apiserver keeps them: what the shared control planes installed through
// client-node (installCrds → server-side apply of the model form) reads back field for field as
// the wire manifests that api-facts.test.ts holds against OCM, so nothing OCM declares is lost on
// the way; and a field only OCM's hub writes (ManagedCluster status.managedNamespaces) survives a
// status write instead of being pruned.
import { afterAll, describe, expect, it } from 'vitest';
import { type CrdManifest, hubCrdManifests, managedCrdManifests } from '../../src/api/index.ts';
import { testEnv } from './fixtures/env.ts';
import { kubectl, uniqueName } from './fixtures/helpers.ts';

const env = testEnv();
const clusterName = uniqueName('managed-namespaces');

afterAll(async () => {
  await kubectl(env.hub.kubeconfigPath, ['delete', 'managedcluster', clusterName, '--ignore-not-found']);
});

/** The parts of a CRD the manifests declare, as the apiserver returns them. */
function declared(crd: CrdManifest) {
  return {
    group: crd.spec.group,
    names: crd.spec.names,
    scope: crd.spec.scope,
    versions: crd.spec.versions.map((v) => ({
      name: v.name,
      served: v.served,
      storage: v.storage,
      schema: v.schema,
      subresources: v.subresources,
      additionalPrinterColumns: v.additionalPrinterColumns,
    })),
  };
}

async function installed(kubeconfig: string, name: string): Promise<CrdManifest> {
  return JSON.parse(await kubectl(kubeconfig, ['get', 'crd', name, '-o', 'json'])) as CrdManifest;
}

describe('CRDs on a real apiserver', () => {
  it.each([
    ...hubCrdManifests().map((c) => ['hub', c] as const),
    ...managedCrdManifests().map((c) => ['cluster1', c] as const),
  ])('%s keeps every declared field of %s', async (where, manifest) => {
    const kubeconfig = where === 'hub' ? env.hub.kubeconfigPath : env.cluster1.kubeconfigPath;
    const crd = await installed(kubeconfig, manifest.metadata.name);
    expect(declared(crd)).toEqual(declared(manifest));
  });

  it('ManagedCluster status.managedNamespaces is stored as written, and checked as OCM checks it', async () => {
    const hub = env.hub.kubeconfigPath;
    await kubectl(hub, ['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'cluster.open-cluster-management.io/v1',
        kind: 'ManagedCluster',
        metadata: { name: clusterName },
        spec: { hubAcceptsClient: false },
      }),
    });
    const managedNamespaces = [{ clusterSet: 'default', name: 'team-a' }];
    await kubectl(hub, [
      'patch',
      'managedcluster',
      clusterName,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { managedNamespaces } }),
    ]);
    const read = JSON.parse(await kubectl(hub, ['get', 'managedcluster', clusterName, '-o', 'json']));
    expect(read.status.managedNamespaces).toEqual(managedNamespaces);
    const bad = kubectl(hub, [
      'patch',
      'managedcluster',
      clusterName,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { managedNamespaces: [{ clusterSet: 'default', name: 'Not_A_Label' }] } }),
    ]);
    await expect(bad).rejects.toThrow(/managedNamespaces\[0\]\.name/);
  });
});

// `tether hub` (the real CLI) offers tether's own agents as addons with nothing but the hub
// controllers' ClusterRole `tether init` installs: given --addon-image and the proxy-server it
// registers the three ClusterManagementAddOns, and for a cluster where they are enabled with
// `tether addon enable` it delivers each addon's ManifestWork (the agents in the given image, the
// proxy-agent dialling the given proxy-server), gives the agents their registrations and hub Role,
// and creates cluster-gateway's ManagedServiceAccount — each addon's controllers leading on their
// own Lease. Without --addon-image it offers none, and a cluster-proxy flag alone is refused.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ManagedServiceAccount,
  type ManifestWork,
  managedServiceAccountResource,
  manifestWorkResource,
} from '../../src/api/index.ts';
import { hubRbac } from '../../src/install/hub-rbac.ts';
import { isConditionTrue, type Lease, leaseResource, ResourceClient } from '../../src/kube/index.ts';
import { addonAdmin, tether } from './fixtures/addon-cli.ts';
import { uniqueName } from './fixtures/helpers.ts';
import { admin, Cleanups, env, hub, kubeconfigAs, waitFor } from './fixtures/registration-hub.ts';
import { startTetherHub } from './fixtures/tether-hub-process.ts';

const cleanups = new Cleanups();
afterEach(() => cleanups.run());

const builtins = ['managed-serviceaccount', 'cluster-proxy', 'cluster-gateway'];
const addonImage = 'registry.example/tether:addon-e2e';
const works = new ResourceClient<ManifestWork>(hub, manifestWorkResource);
const msas = new ResourceClient<ManagedServiceAccount>(hub, managedServiceAccountResource);
const leases = new ResourceClient<Lease>(hub, leaseResource);

/** A kubeconfig file of a hub user bound to exactly the ClusterRole `tether init` gives `tether hub`. */
async function hubControllersKubeconfig(dir: string): Promise<string> {
  const installed = hubRbac().find(
    (o) => o.kind === 'ClusterRole' && o.metadata?.name === 'open-cluster-management:tether-hub-controllers',
  ) as KubernetesObject & { rules: never };
  const user = uniqueName('hub-controllers');
  cleanups.add(() => admin.clusterRoles.delete(user, undefined, { ignoreNotFound: true }));
  cleanups.add(() => admin.clusterRoleBindings.delete(user, undefined, { ignoreNotFound: true }));
  await admin.clusterRoles.create({ metadata: { name: user }, rules: installed.rules });
  await admin.clusterRoleBindings.create({
    metadata: { name: user },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: user },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
  });
  const path = join(dir, 'hub-controllers.kubeconfig');
  writeFileSync(path, (await kubeconfigAs({ commonName: user })).exportConfig(), { mode: 0o600 });
  return path;
}

/** `tether hub <args>` that must refuse to start; its exit code and stderr. */
function refusedHub(args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['bin/tether.js', 'hub', `--kubeconfig=${env.hub.kubeconfigPath}`, ...args],
      { timeout: 30_000 },
      (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
    );
  });
}

/** The containers of the Deployment a work delivers. */
function deployedContainers(work: ManifestWork | undefined) {
  const manifests = (work?.spec?.workload?.manifests ?? []) as unknown as Array<Record<string, unknown>>;
  const deployment = manifests.find((m) => m['kind'] === 'Deployment') as
    | {
        spec: {
          template: {
            spec: { containers: Array<{ image: string; imagePullPolicy: string; args: string[] }> };
          };
        };
      }
    | undefined;
  return deployment?.spec.template.spec.containers ?? [];
}

describe('tether hub runs the built-in addons', () => {
  it('registers them, delivers the enabled ones and provisions the gateway, with only the installed hub ClusterRole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-addon-up-hub-'));
    cleanups.add(async () => rmSync(dir, { recursive: true, force: true }));
    const existing = new Set<string>();
    for (const name of builtins) if (await addonAdmin.cmas.get(name)) existing.add(name);
    cleanups.add(async () => {
      for (const name of builtins)
        if (!existing.has(name)) await addonAdmin.cmas.delete(name, undefined, { ignoreNotFound: true });
    });
    const leaseNamespace = uniqueName('addon-up-hub');
    await admin.namespaces.create({ metadata: { name: leaseNamespace } });
    cleanups.add(() => admin.namespaces.delete(leaseNamespace, undefined, { ignoreNotFound: true }));
    const kubeconfig = await hubControllersKubeconfig(dir);
    const running = await startTetherHub(
      [
        `--kubeconfig=${kubeconfig}`,
        `--leader-election-namespace=${leaseNamespace}`,
        `--addon-image=${addonImage}`,
        '--addon-image-pull-policy=Never',
        `--cluster-proxy-server=${env.tunnel.proxyServerAddress}`,
        `--cluster-proxy-ca-file=${env.tunnel.hubCaPath}`,
      ],
      cleanups,
    );

    for (const name of builtins) {
      const cma = await waitFor(() => addonAdmin.cmas.get(name), `ClusterManagementAddOn ${name}`);
      expect(cma.spec?.addOnMeta?.displayName).toBe(name);
      const lease = await waitFor(
        async () => (await leases.get(`${name}-addon-manager`, leaseNamespace))?.spec?.holderIdentity,
        `the ${name} manager to lead`,
        30_000,
      );
      expect(lease).toBeTruthy();
    }

    // an accepted cluster: the running hub gives it its namespace
    const cluster = uniqueName('addon-up');
    await admin.clusters.create({ metadata: { name: cluster }, spec: { hubAcceptsClient: true } });
    cleanups.add(async () => {
      // while the hub runs: its cleanup removes the addons (and their finalizers) with the cluster
      await admin.clusters.delete(cluster, undefined, { ignoreNotFound: true });
      await waitFor(async () => !(await admin.clusters.get(cluster)), `cluster ${cluster} gone`, 60_000);
    });
    await waitFor(() => admin.namespaces.get(cluster), `namespace ${cluster}`);
    const enabled = await tether([
      'addon',
      'enable',
      `--names=${builtins.join(',')}`,
      `--clusters=${cluster}`,
    ]);
    expect(enabled.code, enabled.stderr).toBe(0);

    const proxyWork = await waitFor(
      () => works.get('addon-cluster-proxy-deploy-0', cluster),
      'the cluster-proxy ManifestWork',
      30_000,
    );
    const [proxyAgent] = deployedContainers(proxyWork);
    expect(proxyAgent?.image).toBe(addonImage);
    expect(proxyAgent?.imagePullPolicy).toBe('Never');
    expect(proxyAgent?.args).toContain(`--proxy-server=${env.tunnel.proxyServerAddress}`);
    const msaWork = await waitFor(
      () => works.get('addon-managed-serviceaccount-deploy-0', cluster),
      'the managed-serviceaccount ManifestWork',
      30_000,
    );
    expect(deployedContainers(msaWork)[0]?.args[0]).toBe('serviceaccount-agent');
    await waitFor(
      () => works.get('addon-cluster-gateway-deploy-0', cluster),
      'the cluster-gateway ManifestWork',
      30_000,
    );

    // registration: the agents' identities and the managed-serviceaccount agent's hub Role
    for (const name of ['managed-serviceaccount', 'cluster-proxy']) {
      const mca = await waitFor(async () => {
        const m = await addonAdmin.mcas.get(name, cluster);
        return isConditionTrue(m?.status?.conditions ?? [], 'RegistrationApplied') ? m : undefined;
      }, `${name} RegistrationApplied`);
      expect(mca.status?.registrations?.[0]?.signerName).toBe('kubernetes.io/kube-apiserver-client');
    }
    await waitFor(
      () => admin.roles.get('open-cluster-management:managed-serviceaccount:agent', cluster),
      "the managed-serviceaccount agent's hub Role",
    );
    // cluster-gateway's hub half: the gateway's ManagedServiceAccount, owned by the addon
    const gateway = await waitFor(
      () => msas.get('tether-gateway', cluster),
      'ManagedServiceAccount tether-gateway',
    );
    expect(gateway.metadata.ownerReferences?.[0]?.kind).toBe('ManagedClusterAddOn');
    // every call the addons' controllers made was allowed by the installed role
    const addonLines = running
      .output()
      .split('\n')
      .filter((line) => line.includes('"component":"builtin-addons"'));
    expect(addonLines.filter((line) => /forbidden/i.test(line))).toEqual([]);
  });

  it('offers no built-in addon without --addon-image, and refuses addon flags without it', async () => {
    const leaseNamespace = uniqueName('addon-up-hub');
    const running = await startTetherHub(
      [
        `--kubeconfig=${env.hub.kubeconfigPath}`,
        `--leader-election-namespace=${leaseNamespace}`,
        '--no-leader-elect',
      ],
      cleanups,
    );
    expect(running.output()).toContain('built-in addons not offered');
    const refused = await refusedHub([`--cluster-proxy-server=${env.tunnel.proxyServerAddress}`]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('run only with --addon-image');
    const halfProxy = await refusedHub([
      `--addon-image=${addonImage}`,
      `--cluster-proxy-server=${env.tunnel.proxyServerAddress}`,
    ]);
    expect(halfProxy.stderr).toContain('--cluster-proxy-server and --cluster-proxy-ca-file go together');
    const badImage = await refusedHub(['--addon-image=not an image']);
    expect(badImage.stderr).toContain('--addon-image must be an image reference');
  });
});

// `tether init` installs the hub CRDs into a real apiserver, and the real kubectl prints OCM's
// columns for managed clusters.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { testEnv } from './fixtures/env.ts';
import { kubectl, uniqueName } from './fixtures/helpers.ts';

const execFileAsync = promisify(execFile);
const env = testEnv();
const hubKubeconfig = env.hub.kubeconfigPath;
const clusterName = uniqueName('columns');
const tmp = mkdtempSync(join(tmpdir(), 'tether-init-'));

afterAll(async () => {
  rmSync(tmp, { recursive: true, force: true });
  await kubectl(hubKubeconfig, ['delete', 'managedcluster', clusterName, '--ignore-not-found']).catch(
    () => {},
  );
});

describe('OCM CRDs', () => {
  it('tether init installs the hub CRDs (idempotently) and they are served; the addon CRDs keep the conversion webhook they had', async () => {
    const conversionOf = async (crd: string) =>
      JSON.parse(await kubectl(hubKubeconfig, ['get', 'crd', crd, '-o', 'jsonpath={.spec.conversion}'])) as {
        strategy: string;
        webhook?: { clientConfig?: { url?: string } };
      };
    const mcaCrd = 'managedclusteraddons.addon.open-cluster-management.io';
    const before = await conversionOf(mcaCrd);
    // the local environment converts through its loopback webhook, as an installed hub through its Service
    expect(before.strategy).toBe('Webhook');
    const { stdout } = await execFileAsync(
      process.execPath,
      [
        'bin/tether.js',
        'init',
        '--bootstrap-only',
        '--kubeconfig',
        hubKubeconfig,
        '--ca-out',
        join(tmp, 'hub-ca.crt'),
      ],
      {
        timeout: 90_000,
      },
    );
    expect(stdout).toContain('managedclusters.cluster.open-cluster-management.io');
    const resources = await kubectl(hubKubeconfig, ['api-resources', '-o', 'name']);
    for (const r of [
      'managedclusters.cluster.open-cluster-management.io',
      'manifestworks.work.open-cluster-management.io',
      'managedclusteraddons.addon.open-cluster-management.io',
      'clustermanagementaddons.addon.open-cluster-management.io',
      'addondeploymentconfigs.addon.open-cluster-management.io',
      'managedserviceaccounts.authentication.open-cluster-management.io',
    ]) {
      expect(resources).toContain(r);
    }
    // --bootstrap-only without the in-cluster webhook Secret: the webhook the CRDs had stays (with
    // None, v1beta1 writers such as OCM's addon-framework lose status.registrations to pruning)
    expect(await conversionOf(mcaCrd)).toEqual(before);
  });

  it('kubectl get managedclusters prints HUB ACCEPTED, MANAGED CLUSTER URLS, JOINED, AVAILABLE, AGE', async () => {
    const manifest = JSON.stringify({
      apiVersion: 'cluster.open-cluster-management.io/v1',
      kind: 'ManagedCluster',
      metadata: { name: clusterName },
      spec: { hubAcceptsClient: true, managedClusterClientConfigs: [{ url: 'https://127.0.0.1:6443' }] },
    });
    await kubectl(hubKubeconfig, ['create', '-f', '-'], { input: manifest });
    const out = await kubectl(hubKubeconfig, ['get', 'managedclusters', clusterName]);
    const [header, row] = out.trim().split('\n');
    expect(header?.split(/\s{2,}/)).toEqual([
      'NAME',
      'HUB ACCEPTED',
      'MANAGED CLUSTER URLS',
      'JOINED',
      'AVAILABLE',
      'AGE',
    ]);
    expect(row).toMatch(new RegExp(`^${clusterName}\\s+true\\s+https://127.0.0.1:6443\\s+`));
    const short = await kubectl(hubKubeconfig, ['get', 'mcl', clusterName, '-o', 'name']);
    expect(short.trim()).toBe(`managedcluster.cluster.open-cluster-management.io/${clusterName}`);
  });
});

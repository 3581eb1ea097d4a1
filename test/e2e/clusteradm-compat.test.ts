// clusteradm against tether: each operation done exactly as clusteradm does it (test/e2e/clusteradm.ts,
// from ../shared/ocm/clusteradm.md) against tether's real hub (`tether init --bootstrap-only`,
// `tether hub`) and a real `tether agent` on cluster1 (behind squid), checking what a clusteradm
// user would see: `get token` → `join`'s bootstrap secret → the agent's CSR → `accept` approves it
// → `get clusters` shows it accepted and Available → `create work` / `get works` / `delete work`
// within clusteradm's 10 s → `addon enable` / `get addon` / `addon disable`.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CertificatesV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, localChildEnv, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { certificateRequestSubject } from '../../src/pki/index.ts';
import { pollUntil } from '../../src/wait.ts';
import * as clusteradm from './fixtures/clusteradm.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';

const env = testEnv();
const hub = adminKubeConfig(env.hub);
const managed = adminKubeConfig(env.cluster1);
const dir = mkdtempSync(join(tmpdir(), 'tether-clusteradm-'));
const clusterName = uniqueName('adm');
const agentNamespace = uniqueName('adm-agent');
const configMapNamespace = uniqueName('adm-work');
const addonName = uniqueName('adm-addon');
const processes: SupervisedProcess[] = [];

function tether(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [tetherBin, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

function start(name: string, args: string[]): SupervisedProcess {
  const p = new SupervisedProcess({
    name,
    command: process.execPath,
    args: [tetherBin, ...args],
    logFile: join(dir, `${name}.log`),
    env: localChildEnv({ ...process.env, TETHER_LOG_LEVEL: 'info' }),
  });
  processes.push(p);
  return p;
}

const configMap = (name: string, value: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: configMapNamespace },
  data: { value },
});

async function configMapValue(name: string): Promise<string | undefined> {
  try {
    const cm = await managed
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ name, namespace: configMapNamespace });
    return cm.data?.value;
  } catch {
    return undefined;
  }
}

beforeAll(async () => {
  const init = await tether([
    'init',
    '--bootstrap-only',
    '--kubeconfig',
    env.hub.kubeconfigPath,
    '--ca-out',
    join(dir, 'hub-ca.crt'),
  ]);
  if (init.code !== 0) throw new Error(`tether init failed: ${init.stderr}`);
  await managed
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: configMapNamespace } } });
  start('hub', [
    'hub',
    `--kubeconfig=${env.hub.kubeconfigPath}`,
    '--no-leader-elect',
    `--ops-port=${await freePort()}`,
  ]);
});

afterAll(async () => {
  for (const p of processes) await p.stop(5000);
  const objects = hub.makeApiClient(CustomObjectsApi);
  await objects
    .deleteClusterCustomObject({
      group: 'cluster.open-cluster-management.io',
      version: 'v1',
      plural: 'managedclusters',
      name: clusterName,
    })
    .catch(() => {});
  await objects
    .deleteClusterCustomObject({
      group: 'addon.open-cluster-management.io',
      version: 'v1alpha1',
      plural: 'clustermanagementaddons',
      name: addonName,
    })
    .catch(() => {});
  const core = managed.makeApiClient(CoreV1Api);
  for (const name of [agentNamespace, configMapNamespace])
    await core.deleteNamespace({ name }).catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

describe('clusteradm against a tether hub', () => {
  it('hub preflight: discovery serves managedclusters in cluster.open-cluster-management.io/v1', async () => {
    expect(await clusteradm.isHub(hub)).toBe(true);
  });

  it('get token → join → the agent asks with an identity clusteradm accept approves → accepted and Available', async () => {
    const token = await clusteradm.getToken(hub);
    expect(token).not.toBe('');
    const kubeconfig = clusteradm.joinBootstrapKubeconfig({
      server: env.hub.apiserverUrl,
      caPem: readFileSync(env.hub.caCertPath, 'utf8'),
      token,
      proxyUrl: env.tunnel.squidUrl,
    });
    await clusteradm.writeJoinSecret(managed, agentNamespace, kubeconfig);
    const agent = start('agent', [
      'agent',
      `--cluster-name=${clusterName}`,
      `--kubeconfig=${env.cluster1.kubeconfigPath}`,
      `--agent-namespace=${agentNamespace}`,
      '--no-serviceaccount',
      `--ops-port=${await freePort()}`,
    ]);

    // The agent's CSR as clusteradm selects and judges it.
    const certs = hub.makeApiClient(CertificatesV1Api);
    const csr = await pollUntil(
      async () => {
        if (!agent.running) throw new Error(`tether agent exited:\n${agent.tail()}`);
        const list = await certs.listCertificateSigningRequest({
          labelSelector: `open-cluster-management.io/cluster-name=${clusterName}`,
        });
        return list.items[0];
      },
      { timeoutMs: 60_000, description: 'the agent CSR labelled with its cluster name' },
    );
    expect(clusteradm.acceptEligible(csr)).toBe(true);
    const subject = certificateRequestSubject(Buffer.from(csr.spec.request, 'base64').toString());
    expect(subject.commonName).toMatch(
      new RegExp(`^system:open-cluster-management:${clusterName}:[a-z0-9]+$`),
    );
    expect(csr.spec.signerName).toBe('kubernetes.io/kube-apiserver-client');

    const accepted = await pollUntil(
      async () => {
        const r = await clusteradm.accept(hub, clusterName);
        return r.anyApproved ? r : undefined;
      },
      { timeoutMs: 30_000, description: `clusteradm accept approves ${clusterName}` },
    );
    expect(accepted.approved).toEqual([csr.metadata?.name]);
    const approval = (
      await certs.readCertificateSigningRequest({ name: csr.metadata?.name ?? '' })
    ).status?.conditions?.find((c) => c.type === 'Approved');
    expect(approval?.reason).toBe('clusteradm Approve');

    const row = await pollUntil(
      async () => {
        const r = (await clusteradm.getClusters(hub)).find((c) => c.NAME === clusterName);
        return r?.AVAILABLE === 'True' && r['KUBERNETES VERSION'] && r.CLUSTERSET ? r : undefined;
      },
      { timeoutMs: 90_000, description: `get clusters shows ${clusterName} Available, in a cluster set` },
    );
    expect(row.ACCEPTED).toBe('true');
    // As on OCM's hub, a cluster without a set label joins the `default` set.
    expect(row.CLUSTERSET).toBe('default');
    expect(row.CPU).not.toBe('');
    expect(row.MEMORY).not.toBe('');
    expect(row['KUBERNETES VERSION']).toMatch(/^v1\.\d+/);

    // What `join` tells its user afterwards: the hub-kubeconfig-secret with OCM's keys.
    const secret = await pollUntil(
      () =>
        managed
          .makeApiClient(CoreV1Api)
          .readNamespacedSecret({ name: 'hub-kubeconfig-secret', namespace: agentNamespace })
          .catch(() => undefined),
      { timeoutMs: 30_000, description: 'hub-kubeconfig-secret' },
    );
    expect(Object.keys(secret.data ?? {}).sort()).toEqual(
      ['agent-name', 'cluster-name', 'kubeconfig', 'tls.crt', 'tls.key'].sort(),
    );
  });

  it('create work --clusters → get works shows it Applied and Available; without --overwrite it is untouched, with it replaced', async () => {
    const name = 'adm-work';
    expect(await clusteradm.createWork(hub, name, clusterName, [configMap('adm-cm', 'one')], false)).toBe(
      'created',
    );
    const applied = await pollUntil(
      async () => {
        const [w] = await clusteradm.getWorks(hub, clusterName);
        return w?.row.APPLIED === 'True' && w.row.AVAILABLE === 'True' ? w : undefined;
      },
      { timeoutMs: 60_000, description: 'get works shows the work Applied and Available' },
    );
    expect(applied.row).toEqual({
      NAME: name,
      CLUSTER: clusterName,
      'NUMBER OF MANIFESTS': '1',
      APPLIED: 'True',
      AVAILABLE: 'True',
    });
    expect(applied.resources).toEqual({ [`configmaps.${configMapNamespace}/adm-cm`]: 'applied' });
    expect(await configMapValue('adm-cm')).toBe('one');

    expect(await clusteradm.createWork(hub, name, clusterName, [configMap('adm-cm', 'two')], false)).toBe(
      'exists',
    );
    expect(await clusteradm.createWork(hub, name, clusterName, [configMap('adm-cm', 'three')], true)).toBe(
      'updated',
    );
    await pollUntil(async () => (await configMapValue('adm-cm')) === 'three', {
      timeoutMs: 60_000,
      description: 'the overwritten work applied on cluster1',
    });
  });

  it('delete work: the Deleted event comes within clusteradm’s 10 s and the applied object is gone', async () => {
    await clusteradm.deleteWork(hub, 'adm-work', clusterName);
    await pollUntil(async () => (await configMapValue('adm-cm')) === undefined, {
      timeoutMs: 30_000,
      description: 'the work ConfigMap removed from cluster1',
    });
  });

  it('a finished work with deleteOption.ttlSecondsAfterFinished is deleted by tether hub (its collector), as by OCM’s hub', async () => {
    const objects = hub.makeApiClient(CustomObjectsApi);
    const work = { group: 'work.open-cluster-management.io', version: 'v1', plural: 'manifestworks' };
    await objects.createNamespacedCustomObject({
      ...work,
      namespace: clusterName,
      body: {
        apiVersion: 'work.open-cluster-management.io/v1',
        kind: 'ManifestWork',
        metadata: { name: 'adm-ttl', namespace: clusterName },
        spec: {
          workload: { manifests: [configMap('adm-ttl-cm', 'done')] },
          deleteOption: { propagationPolicy: 'Foreground', ttlSecondsAfterFinished: 1 },
          manifestConfigs: [
            {
              resourceIdentifier: {
                resource: 'configmaps',
                name: 'adm-ttl-cm',
                namespace: configMapNamespace,
              },
              conditionRules: [{ condition: 'Complete', type: 'CEL', celExpressions: ['true'] }],
            },
          ],
        },
      },
    });
    await pollUntil(
      async () => {
        const gone = await objects
          .getNamespacedCustomObject({ ...work, namespace: clusterName, name: 'adm-ttl' })
          .then(
            () => false,
            () => true,
          );
        return gone && (await configMapValue('adm-ttl-cm')) === undefined;
      },
      { timeoutMs: 60_000, description: 'the complete work and its ConfigMap deleted by tether hub' },
    );
  });

  it('addon enable refuses an unknown addon, enables a known one (get addon counts it) and disable removes it', async () => {
    await expect(clusteradm.addonEnable(hub, addonName, clusterName)).rejects.toThrow(
      `enabling the unknown addon ${addonName} is not supported`,
    );
    await hub.makeApiClient(CustomObjectsApi).createClusterCustomObject({
      group: 'addon.open-cluster-management.io',
      version: 'v1alpha1',
      plural: 'clustermanagementaddons',
      body: {
        apiVersion: 'addon.open-cluster-management.io/v1alpha1',
        kind: 'ClusterManagementAddOn',
        metadata: { name: addonName },
        spec: { addOnMeta: { displayName: addonName } },
      },
    });
    await clusteradm.addonEnable(hub, addonName, clusterName);
    expect((await clusteradm.getAddons(hub)).find((a) => a.NAME === addonName)).toEqual({
      NAME: addonName,
      INSTALLEDCLUSTERS: '1',
    });
    await clusteradm.addonDisable(hub, addonName, clusterName);
    expect((await clusteradm.getAddons(hub)).find((a) => a.NAME === addonName)?.INSTALLEDCLUSTERS).toBe('0');
  });
});

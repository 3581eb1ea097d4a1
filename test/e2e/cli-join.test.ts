// The clusteradm-style CLI against real control planes: `tether init` prints a join line whose
// token works, `tether join` stores the bootstrap kubeconfig and fails clearly for a wrong token or
// an unreachable hub, and `tether accept` refuses an unknown cluster.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';

const env = testEnv();
const tmp = mkdtempSync(join(tmpdir(), 'tether-cli-'));
const agentNs = uniqueName('agent-ns');
const caOut = join(tmp, 'hub-ca.crt');

function tether(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/tether.js', ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

afterAll(async () => {
  rmSync(tmp, { recursive: true, force: true });
  await adminKubeConfig(env.cluster1)
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: agentNs })
    .catch(() => {});
});

describe('tether init / join / accept', () => {
  let token = '';
  /** `tether join` to the shared hub with init's token and CA, for `cluster` on cluster1. */
  const joinArgs = (cluster: string, ...extra: string[]) => [
    'join',
    '--hub-token',
    token,
    '--hub-apiserver',
    env.hub.apiserverUrl,
    '--ca-file',
    caOut,
    '--cluster-name',
    cluster,
    '--kubeconfig',
    env.cluster1.kubeconfigPath,
    ...extra,
  ];

  it('init prints a join line with a working bootstrap token and writes the hub CA', async () => {
    const r = await tether([
      'init',
      // the shared environment runs tether as processes: only the CRDs, admission and bootstrap identity
      '--bootstrap-only',
      '--kubeconfig',
      env.hub.kubeconfigPath,
      '--ca-out',
      caOut,
      '--bootstrap-token-expiration',
      '1h',
    ]);
    expect(r.code).toBe(0);
    const m = /tether join --hub-token (\S+) --hub-apiserver (\S+) --ca-file (\S+)/.exec(r.stdout);
    expect(m, r.stdout).not.toBeNull();
    token = m?.[1] ?? '';
    expect(m?.[2]).toBe(env.hub.apiserverUrl);
    expect(readFileSync(caOut, 'utf8')).toBe(readFileSync(env.hub.caCertPath, 'utf8'));
  });

  it('join checks the hub and stores the bootstrap kubeconfig on the managed cluster', async () => {
    const r = await tether(
      joinArgs(
        'cli-joined',
        '--agent-namespace',
        agentNs,
        '--bootstrap-only',
        '--proxy-url',
        env.tunnel.squidUrl,
      ),
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const secret = await adminKubeConfig(env.cluster1)
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ name: 'bootstrap-hub-kubeconfig', namespace: agentNs });
    const kc = new KubeConfig();
    kc.loadFromString(Buffer.from(secret.data?.kubeconfig ?? '', 'base64').toString());
    expect(kc.getCurrentCluster()?.server).toBe(env.hub.apiserverUrl);
    expect(kc.getCurrentCluster()?.proxyUrl).toBe(env.tunnel.squidUrl);
    expect(kc.getCurrentUser()?.token).toBe(token);
  });

  it('join fails clearly for a wrong token and for an unreachable hub, writing nothing', async () => {
    const base = [
      '--ca-file',
      caOut,
      '--cluster-name',
      'nope',
      '--kubeconfig',
      env.cluster1.kubeconfigPath,
      '--agent-namespace',
      uniqueName('unused'),
      '--bootstrap-only',
    ];
    const wrong = await tether([
      'join',
      '--hub-token',
      'not-a-token',
      '--hub-apiserver',
      env.hub.apiserverUrl,
      ...base,
    ]);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain('the hub rejected the bootstrap token');
    const unreachable = await tether([
      'join',
      '--hub-token',
      token,
      '--hub-apiserver',
      'https://127.0.0.1:1',
      ...base,
    ]);
    expect(unreachable.code).not.toBe(0);
    expect(unreachable.stderr).toContain('cannot reach the hub at https://127.0.0.1:1');
    const badName = await tether([
      'join',
      '--hub-token',
      token,
      '--hub-apiserver',
      env.hub.apiserverUrl,
      ...base.slice(0, 2),
      '--cluster-name',
      'Bad_Name',
      '--kubeconfig',
      env.cluster1.kubeconfigPath,
    ]);
    expect(badName.stderr).toContain('--cluster-name must be a DNS label');
  });

  it('join --agent-namespace installs a second agent beside the first; unjoin removes it alone, not the shared add-on namespace', async () => {
    const second = uniqueName('second-agent');
    const core = adminKubeConfig(env.cluster1).makeApiClient(CoreV1Api);
    const rbac = adminKubeConfig(env.cluster1).makeApiClient(RbacAuthorizationV1Api);
    const addonNs = 'open-cluster-management-agent-addon';
    const madeAddonNs = await core
      .createNamespace({ body: { metadata: { name: addonNs } } })
      .then(() => true)
      .catch(() => false);
    try {
      const joined = await tether(
        joinArgs('cli-second', '--agent-namespace', second, '--no-serviceaccount', '--no-in-process-addons'),
      );
      expect(joined.code, joined.stderr).toBe(0);
      const ns = await core.readNamespace({ name: second });
      expect(ns.metadata?.labels?.['agent.tether.dev/agent-namespace']).toBe('true');
      const binding = `open-cluster-management:klusterlet-agent:${second}`;
      expect((await rbac.readClusterRoleBinding({ name: binding })).subjects?.[0]?.namespace).toBe(second);

      const unjoined = await tether([
        'unjoin',
        '--cluster-name',
        'cli-second',
        '--kubeconfig',
        env.cluster1.kubeconfigPath,
        '--agent-namespace',
        second,
      ]);
      expect(unjoined.code, unjoined.stderr).toBe(0);
      await expect(core.readNamespace({ name: second })).rejects.toMatchObject({ code: 404 });
      await expect(rbac.readClusterRoleBinding({ name: binding })).rejects.toMatchObject({ code: 404 });
      expect((await core.readNamespace({ name: addonNs })).status?.phase).toBe('Active');
    } finally {
      await core.deleteNamespace({ name: second }).catch(() => {});
      // a later file may create the add-on namespace: it must not find this one terminating
      if (madeAddonNs) {
        await core.deleteNamespace({ name: addonNs }).catch(() => {});
        await pollUntil(
          () =>
            core.readNamespace({ name: addonNs }).then(
              () => false,
              () => true,
            ),
          { timeoutMs: 60_000, intervalMs: 250, description: `${addonNs} gone` },
        );
      }
    }
  });

  it('accept refuses a cluster that never joined', async () => {
    const r = await tether(['accept', '--clusters', 'ghost-cluster', '--kubeconfig', env.hub.kubeconfigPath]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('no ManagedCluster named ghost-cluster');
  });
});

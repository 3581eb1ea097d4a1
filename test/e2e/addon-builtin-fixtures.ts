// Shared by the built-in addon e2e files (test/e2e/addon-builtin-*.test.ts): the hub credential an
// addon registration yields — a CSR with OCM's default addon subject to the kube-apiserver-client
// signer, approved by the admin (standing in for the addon manager), signed by the hub's
// kube-controller-manager — and its files laid out as the registration agent writes Secret
// `<addon>-hub-kubeconfig` (tls.crt, tls.key, and a kubeconfig naming them); and a delivered
// Deployment's container run as a process here, with its mounted Secrets and ConfigMaps as files.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { type KubeObject, ResourceClient } from '../../src/kube/index.ts';
import { createCertificateRequest, type KeyPairPem } from '../../src/pki/index.ts';
import { approveCsr } from '../../src/registration/hub/csr-approval.ts';
import { pollUntil } from '../../src/wait.ts';
import { admin, type Cleanups, hub } from '../registration/hub/e2e-fixtures.ts';
import { uniqueName } from './helpers.ts';

/** OCM's default subject of addon `addon`'s agent `agent` on `cluster`. */
export function addonSubject(cluster: string, addon: string, agent = 'agent1') {
  return {
    commonName: `system:open-cluster-management:cluster:${cluster}:addon:${addon}:agent:${agent}`,
    organizations: [
      `system:open-cluster-management:cluster:${cluster}:addon:${addon}`,
      `system:open-cluster-management:addon:${addon}`,
      'system:authenticated',
    ],
  };
}

/** The certificate addon `addon`'s agent on `cluster` gets through the hub's CSR flow. */
export async function addonCertificate(
  cleanups: Cleanups,
  cluster: string,
  addon: string,
  agent = 'agent1',
): Promise<KeyPairPem> {
  const { csrPem, keyPem } = await createCertificateRequest(addonSubject(cluster, addon, agent));
  const name = uniqueName(`addon-${addon}`);
  cleanups.add(() => admin.csrs.delete(name, undefined, { ignoreNotFound: true }));
  await admin.csrs.create({
    metadata: {
      name,
      labels: {
        'open-cluster-management.io/cluster-name': cluster,
        'open-cluster-management.io/addon-name': addon,
      },
    },
    spec: {
      request: Buffer.from(csrPem).toString('base64'),
      signerName: 'kubernetes.io/kube-apiserver-client',
      usages: ['client auth', 'digital signature', 'key encipherment'],
    },
  });
  expect(await approveCsr(hub, name, { reason: 'E2EApprove', message: 'addon identity for the test' })).toBe(
    true,
  );
  const certPem = await pollUntil(
    async () => {
      const issued = (await admin.csrs.get(name))?.status?.certificate;
      return issued ? Buffer.from(issued, 'base64').toString('utf8') : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200, description: `CSR ${name} signed` },
  );
  return { certPem, keyPem };
}

/**
 * `<dir>` as the Secret `<addon>-hub-kubeconfig` mounted: tls.crt, tls.key and a kubeconfig that
 * names them by relative path (as OCM's registration agent writes it). Returns the kubeconfig path.
 */
export function writeHubKubeconfigDir(
  dir: string,
  cert: KeyPairPem,
  hubServer: string,
  hubCaPem: string,
): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'tls.crt'), cert.certPem);
  writeFileSync(join(dir, 'tls.key'), cert.keyPem, { mode: 0o600 });
  const kubeconfig = [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: hub',
    '  cluster:',
    `    server: ${hubServer}`,
    `    certificate-authority-data: ${Buffer.from(hubCaPem).toString('base64')}`,
    'users:',
    '- name: user',
    '  user:',
    '    client-certificate: tls.crt',
    '    client-key: tls.key',
    'contexts:',
    '- name: default-context',
    '  context: {cluster: hub, user: user, namespace: configuration}',
    'current-context: default-context',
    '',
  ].join('\n');
  const path = join(dir, 'kubeconfig');
  writeFileSync(path, kubeconfig, { mode: 0o600 });
  return path;
}

interface PodContainerView {
  spec?: {
    template?: {
      spec?: {
        containers?: { args?: string[]; volumeMounts?: { name: string; mountPath: string }[] }[];
        volumes?: { name: string; secret?: { secretName: string }; configMap?: { name: string } }[];
      };
    };
  };
}

/**
 * What the first container of Deployment `namespace/name` on a managed cluster would run, as a
 * process here: its args, with every Secret and ConfigMap volume written under `root` (keys as
 * files, as the kubelet mounts them) and the mount paths in the args pointed there. Undefined while
 * a mounted Secret or ConfigMap does not exist yet (the pod would not start either).
 */
export async function containerAsProcess(
  managed: KubeConfig,
  namespace: string,
  name: string,
  root: string,
): Promise<string[] | undefined> {
  const client = (group: string, plural: string, kind: string) =>
    new ResourceClient<KubeObject & { data?: Record<string, string> } & PodContainerView>(managed, {
      group,
      version: 'v1',
      plural,
      kind,
      namespaced: true,
    });
  const deployment = await client('apps', 'deployments', 'Deployment').get(name, namespace);
  const pod = deployment?.spec?.template?.spec;
  const container = pod?.containers?.[0];
  if (!container) return undefined;
  let args = container.args ?? [];
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod?.volumes?.find((v) => v.name === mount.name);
    let files: Record<string, string> | undefined;
    if (volume?.secret) {
      const secret = await client('', 'secrets', 'Secret').get(volume.secret.secretName, namespace);
      if (!secret?.data) return undefined;
      files = Object.fromEntries(
        Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
      );
    } else if (volume?.configMap) {
      const cm = await client('', 'configmaps', 'ConfigMap').get(volume.configMap.name, namespace);
      if (!cm?.data) return undefined;
      files = cm.data;
    }
    if (!files) continue; // emptyDir (/tmp)
    const dir = join(root, mount.mountPath);
    mkdirSync(dir, { recursive: true });
    for (const [key, value] of Object.entries(files)) writeFileSync(join(dir, key), value, { mode: 0o600 });
    args = args.map((a) => a.replaceAll(mount.mountPath, dir));
  }
  return args;
}

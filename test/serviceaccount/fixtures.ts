// Shared by the serviceaccount e2e files (test/e2e/serviceaccount*.test.ts): a "managed cluster"
// on the shared hub is a unique namespace with the agent's Role/RoleBinding, and the agent gets a
// *restricted* hub identity (a client certificate minted from the hub CA with the registration
// subject of that cluster), never the admin one. Each agent gets its own install namespace on
// cluster1 so agents of different tests never see each other's ServiceAccounts.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type ManagedServiceAccount,
  type ManagedServiceAccountSpec,
  managedServiceAccountResource,
  managedServiceAccountV1alpha1Resource,
} from '../../src/api/index.ts';
import {
  type KubeObject,
  kubeconfigFromParts,
  kubeconfigToYaml,
  loadKubeconfig,
  ResourceClient,
} from '../../src/kube/index.ts';
import { issueCertificate, loadCertificateAuthority } from '../../src/pki/index.ts';
import {
  type Namespace,
  namespaceResource,
  type Role,
  type RoleBinding,
  roleBindingResource,
  roleResource,
  type Secret,
  type ServiceAccount,
  secretResource,
  serviceAccountResource,
} from '../../src/serviceaccount/core.ts';
import {
  decodeTokenClaims,
  type ServiceAccountAgent,
  type ServiceAccountAgentOptions,
  serviceAccountAgentHubRbac,
  startServiceAccountAgent,
} from '../../src/serviceaccount/index.ts';
import { agentSubject } from '../../src/tunnel/identity.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from '../e2e/env.ts';
import { uniqueName } from '../e2e/helpers.ts';

export const env = testEnv();
export const hubAdmin = loadKubeconfig(env.hub.kubeconfigPath);
export const managedAdmin = loadKubeconfig(env.cluster1.kubeconfigPath);
export const msas = new ResourceClient<ManagedServiceAccount>(hubAdmin, managedServiceAccountResource);
export const msasV1alpha1 = new ResourceClient<ManagedServiceAccount>(
  hubAdmin,
  managedServiceAccountV1alpha1Resource,
);
export const hubSecrets = new ResourceClient<Secret>(hubAdmin, secretResource);
export const managedServiceAccounts = new ResourceClient<ServiceAccount>(
  managedAdmin,
  serviceAccountResource,
);
export const managedRoles = new ResourceClient<Role>(managedAdmin, roleResource);
export const managedRoleBindings = new ResourceClient<RoleBinding>(managedAdmin, roleBindingResource);
const hubNamespaces = new ResourceClient<Namespace>(hubAdmin, namespaceResource);
const managedNamespaces = new ResourceClient<Namespace>(managedAdmin, namespaceResource);
const hubRoles = new ResourceClient<Role>(hubAdmin, roleResource);
const hubRoleBindings = new ResourceClient<RoleBinding>(hubAdmin, roleBindingResource);

export const label = 'authentication.open-cluster-management.io/is-managed-serviceaccount';
export const decode = (v: string | undefined) => Buffer.from(v ?? '', 'base64').toString('utf8');
export const tokenOf = (s: Secret | undefined) => decode(s?.data?.token);
/** A JWT time claim as the RFC 3339 text the MSA status carries. */
export const isoSeconds = (seconds: number | undefined) =>
  seconds === undefined ? undefined : new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');

export interface MsaCluster {
  /** cluster name = its namespace on the hub */
  name: string;
  /** the restricted registration identity of this cluster */
  hubKubeConfig: KubeConfig;
}

/** Undo steps, run last-registered first; every test file calls runCleanups in afterAll/afterEach. */
const cleanups: Array<() => Promise<unknown>> = [];
export const onCleanup = (step: () => Promise<unknown>) => void cleanups.push(step);
export async function runCleanups(): Promise<void> {
  const errors: unknown[] = [];
  for (const step of cleanups.splice(0).reverse()) await step().catch((err: unknown) => errors.push(err));
  if (errors.length > 0) throw errors[0];
}

const workDir = mkdtempSync(join(tmpdir(), 'tether-msa-e2e-'));
onCleanup(async () => rmSync(workDir, { recursive: true, force: true }));

/** Write `content` to a file of this run's scratch directory (mode 0600) and return its path. */
export function scratchFile(name: string, content: string): string {
  const path = join(workDir, name);
  writeFileSync(path, content, { mode: 0o600 });
  return path;
}

/** A hub namespace standing in for a managed cluster, with the agent RBAC and a minted identity. */
export async function msaCluster(prefix = 'msa'): Promise<MsaCluster> {
  const name = uniqueName(prefix);
  await hubNamespaces.create({ metadata: { name } });
  onCleanup(() => hubNamespaces.delete(name, undefined, { ignoreNotFound: true }));
  const { role, roleBinding } = serviceAccountAgentHubRbac(name);
  await hubRoles.create(role);
  await hubRoleBindings.create(roleBinding);
  const ca = await loadCertificateAuthority(
    readFileSync(env.hub.caCertPath, 'utf8'),
    readFileSync(env.hub.caKeyPath, 'utf8'),
  );
  const cert = await issueCertificate(ca, {
    ...agentSubject(name, 'msa'),
    usage: 'client',
    validitySeconds: 3600,
  });
  const hubKubeConfig = kubeconfigFromParts({
    name: `${name}-agent`,
    server: env.hub.apiserverUrl,
    caPem: ca.certPem,
    certPem: cert.certPem,
    keyPem: cert.keyPem,
  });
  return { name, hubKubeConfig };
}

export interface RunningAgent extends ServiceAccountAgent {
  installNamespace: string;
}

/** Start an agent for `cluster` in a fresh install namespace (deleted again at cleanup). */
export async function startAgent(
  cluster: MsaCluster,
  opts: Partial<ServiceAccountAgentOptions> = {},
): Promise<RunningAgent> {
  const installNamespace = opts.installNamespace ?? uniqueName('msa-install');
  onCleanup(() => managedNamespaces.delete(installNamespace, undefined, { ignoreNotFound: true }));
  const agent = await startServiceAccountAgent({
    clusterName: cluster.name,
    hubKubeConfig: cluster.hubKubeConfig,
    managedKubeConfig: managedAdmin,
    ...opts,
    installNamespace,
  });
  onCleanup(() => agent.stop());
  if (!(await agent.ready)) throw new Error('serviceaccount agent did not become ready');
  return { ...agent, installNamespace };
}

/** Create an MSA (v1beta1 unless `client` says otherwise); deleted at cleanup. */
export async function createMsa(
  cluster: MsaCluster,
  spec: ManagedServiceAccountSpec = {},
  metadata: { name?: string; annotations?: Record<string, string> } = {},
  client: ResourceClient<ManagedServiceAccount> = msas,
): Promise<ManagedServiceAccount & { metadata: { name: string } }> {
  const name = metadata.name ?? uniqueName('sa');
  onCleanup(() => msas.delete(name, cluster.name, { ignoreNotFound: true }));
  const created = await client.create({
    metadata: {
      name,
      namespace: cluster.name,
      ...(metadata.annotations ? { annotations: metadata.annotations } : {}),
    },
    spec,
  });
  return { ...created, metadata: { ...created.metadata, name } };
}

export interface Projection {
  msa: ManagedServiceAccount;
  secret: Secret;
  token: string;
}

/** Wait until the MSA reports a token and its Secret holds one (optionally: not `notToken`). */
export async function waitForProjection(
  cluster: MsaCluster,
  name: string,
  opts: { notToken?: string; timeoutMs?: number; intervalMs?: number } = {},
): Promise<Projection> {
  return pollUntil(
    async () => {
      const [msa, secret] = await Promise.all([
        msas.get(name, cluster.name),
        hubSecrets.get(name, cluster.name),
      ]);
      const token = tokenOf(secret);
      const reported = msa?.status?.conditions?.find((c) => c.type === 'TokenReported')?.status === 'True';
      if (!msa || !secret || !token || !reported || token === opts.notToken) return undefined;
      // The status is written after the Secret: wait until it describes this very token.
      const claims = decodeTokenClaims(token);
      const { expirationTimestamp, tokenSecretRef } = msa.status ?? {};
      if (expirationTimestamp !== isoSeconds(claims?.exp)) return undefined;
      if (tokenSecretRef?.lastRefreshTimestamp !== isoSeconds(claims?.iat)) return undefined;
      return { msa, secret, token };
    },
    {
      timeoutMs: opts.timeoutMs ?? 30_000,
      intervalMs: opts.intervalMs ?? 100,
      description: `ManagedServiceAccount ${cluster.name}/${name} to report a${opts.notToken ? ' new' : ''} token`,
    },
  );
}

/** Wait for a condition on the MSA matching `match` and return the MSA. */
export async function waitForCondition(
  cluster: MsaCluster,
  name: string,
  match: { type: string; status: string; messageIncludes?: string },
): Promise<ManagedServiceAccount> {
  return pollUntil(
    async () => {
      const msa = await msas.get(name, cluster.name);
      const c = msa?.status?.conditions?.find((x) => x.type === match.type);
      const ok =
        c?.status === match.status && (!match.messageIncludes || c.message.includes(match.messageIncludes));
      return ok ? msa : undefined;
    },
    {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: `${match.type}=${match.status} on MSA ${cluster.name}/${name}`,
    },
  );
}

/** Wait until `get` answers undefined (the object is gone). */
export async function waitGone(what: string, get: () => Promise<KubeObject | undefined>, timeoutMs = 30_000) {
  await pollUntil(async () => (await get()) === undefined, {
    timeoutMs,
    intervalMs: 100,
    description: `${what} gone`,
  });
}

/**
 * kubectl arguments that use exactly `token` against cluster1 (its server and CA, an empty
 * kubeconfig so no other credential is picked up).
 */
export function kubectlWithToken(token: string): { kubeconfig: string; args: string[] } {
  const kubeconfig = scratchFile(`empty-${uniqueName('kc')}.yaml`, 'apiVersion: v1\nkind: Config\n');
  const args = ['--server', env.cluster1.apiserverUrl, '--certificate-authority', env.cluster1.caCertPath];
  return { kubeconfig, args: [...args, '--token', token] };
}

/** kubeconfig YAML for `kc` written to a scratch file. */
export function kubeconfigFile(kc: KubeConfig): string {
  return scratchFile(`${uniqueName('kc')}.yaml`, kubeconfigToYaml(kc));
}

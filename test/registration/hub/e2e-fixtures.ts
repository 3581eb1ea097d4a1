// Shared by the registration-hub e2e files (test/e2e/registration-hub*.test.ts): admin clients for
// the shared hub, agent-identity clients minted from the hub CA, ManagedClusters that clean up
// after themselves, and a hub scoped to one label so other files' clusters are never touched.
import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll } from 'vitest';
import {
  clusterNameLabel,
  type ManagedCluster,
  type ManagedClusterSpec,
  managedClusterResource,
} from '../../../src/api/index.ts';
import {
  findCondition,
  type KubeObject,
  kubeconfigFromParts,
  type Lease,
  leaseResource,
  loadKubeconfig,
  ResourceClient,
  type ResourceDescriptor,
} from '../../../src/kube/index.ts';
import type { Logger } from '../../../src/log.ts';
import {
  createCertificateRequest,
  issueCertificate,
  loadCertificateAuthority,
} from '../../../src/pki/index.ts';
import {
  type RegistrationHub,
  type RegistrationHubOptions,
  startRegistrationHub,
} from '../../../src/registration/hub/index.ts';
import type {
  CertificateSigningRequest,
  RbacBinding,
  RbacRole,
} from '../../../src/registration/hub/resources.ts';
import {
  certificateSigningRequestResource,
  clusterRoleBindingResource,
  clusterRoleResource,
  namespaceResource,
  roleBindingResource,
  roleResource,
} from '../../../src/registration/hub/resources.ts';
import { agentSubject } from '../../../src/tunnel/identity.ts';
import { pollUntil } from '../../../src/wait.ts';
import { testEnv } from '../../e2e/env.ts';
import { uniqueName } from '../../e2e/helpers.ts';

export const env = testEnv();
export const hub = loadKubeconfig(env.hub.kubeconfigPath);
const hubCaPem = readFileSync(env.hub.caCertPath, 'utf8');

/** Clients for any kubeconfig (admin, an agent identity, a bootstrap user). */
export function clientsFor(kc: KubeConfig) {
  const of = <T extends KubeObject>(d: ResourceDescriptor) => new ResourceClient<T>(kc, d);
  return {
    clusters: of<ManagedCluster>(managedClusterResource),
    namespaces: of(namespaceResource),
    clusterRoles: of<RbacRole>(clusterRoleResource),
    clusterRoleBindings: of<RbacBinding>(clusterRoleBindingResource),
    roles: of(roleResource),
    roleBindings: of(roleBindingResource),
    leases: of<Lease>(leaseResource),
    csrs: of<CertificateSigningRequest>(certificateSigningRequestResource),
    secrets: of({ group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true }),
  };
}
export const admin = clientsFor(hub);

/**
 * Let `users` create and read CSRs and nothing else, as a real bootstrap token may (undone by
 * `cleanups`).
 */
export async function allowCsrRequests(cleanups: Cleanups, users: string[]): Promise<void> {
  const name = uniqueName('tether-e2e-csr-requesters');
  cleanups.add(() => admin.clusterRoles.delete(name, undefined, { ignoreNotFound: true }));
  cleanups.add(() => admin.clusterRoleBindings.delete(name, undefined, { ignoreNotFound: true }));
  await admin.clusterRoles.create({
    metadata: { name },
    rules: [
      {
        apiGroups: ['certificates.k8s.io'],
        resources: ['certificatesigningrequests'],
        verbs: ['create', 'get'],
      },
    ],
  });
  const rbacGroup = 'rbac.authorization.k8s.io' as const;
  await admin.clusterRoleBindings.create({
    metadata: { name },
    roleRef: { apiGroup: rbacGroup, kind: 'ClusterRole', name },
    subjects: users.map((user) => ({ apiGroup: rbacGroup, kind: 'User' as const, name: user })),
  });
}

/** A client certificate from the hub CA for `subject`, as a kubeconfig (no proxy). */
export async function kubeconfigAs(subject: {
  commonName: string;
  organizations?: string[];
}): Promise<KubeConfig> {
  const ca = await loadCertificateAuthority(hubCaPem, readFileSync(env.hub.caKeyPath, 'utf8'));
  const { certPem, keyPem } = await issueCertificate(ca, {
    ...subject,
    usage: 'client',
    validitySeconds: 3600,
  });
  return kubeconfigFromParts({
    name: subject.commonName,
    server: env.hub.apiserverUrl,
    caPem: hubCaPem,
    certPem,
    keyPem,
  });
}

/** What the registration agent of `cluster` authenticates as once its CSR was signed. */
export function agentKubeconfig(cluster: string, agent = 'agent1'): Promise<KubeConfig> {
  return kubeconfigAs(agentSubject(cluster, agent));
}

/** Undo steps, run last-registered first; the first failure is rethrown after all ran. */
export class Cleanups {
  private readonly steps: Array<() => Promise<unknown>> = [];
  add(step: () => Promise<unknown>): void {
    this.steps.push(step);
  }
  async run(): Promise<void> {
    const errors: unknown[] = [];
    for (const step of this.steps.splice(0).reverse()) await step().catch((err: unknown) => errors.push(err));
    if (errors.length > 0) throw errors[0];
  }
}

export function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  description: string,
  timeoutMs = 20_000,
) {
  return pollUntil(check, { timeoutMs, intervalMs: 100, description });
}

/** The label that puts a ManagedCluster in front of one test hub (see clusterLabelSelector). */
export const hubScopeLabel = 'e2e.tether.dev/registration-hub';

/** A hub that only sees clusters labelled `hubScopeLabel=<scope>`; stopped by `cleanups`. */
export async function startScopedHub(
  cleanups: Cleanups,
  scope: string,
  options: Partial<RegistrationHubOptions> = {},
): Promise<RegistrationHub> {
  const hubProcess = await startRegistrationHub({
    hubKubeConfig: hub,
    leaderElection: false,
    clusterLabelSelector: `${hubScopeLabel}=${scope}`,
    ...options,
  });
  cleanups.add(() => hubProcess.stop());
  return hubProcess;
}

/**
 * Create a ManagedCluster seen by the hub of `scope`. Its cleanup deletes it and waits for the hub
 * to finish the deletion; if it does not, it strips the finalizer and the namespace by hand.
 */
export async function createCluster(
  cleanups: Cleanups,
  scope: string,
  spec: ManagedClusterSpec = { hubAcceptsClient: true },
): Promise<string> {
  const name = uniqueName('reg');
  cleanups.add(async () => {
    await admin.clusters.delete(name, undefined, { ignoreNotFound: true });
    try {
      await waitFor(async () => !(await admin.clusters.get(name)), `hub to finish deleting ${name}`, 30_000);
    } catch (err) {
      await admin.clusters.patchMerge(name, { metadata: { finalizers: null } }).catch(() => undefined);
      await admin.namespaces.delete(name, undefined, { ignoreNotFound: true });
      throw err;
    }
  });
  await admin.clusters.create({ metadata: { name, labels: { [hubScopeLabel]: scope } }, spec });
  return name;
}

export async function conditionOf(cluster: string, type: string) {
  return findCondition((await admin.clusters.get(cluster))?.status?.conditions, type);
}

/** Create a CSR (cleaned up by `cleanups`) through `csrs`, i.e. as whoever that client is. */
export async function requestCertificate(
  cleanups: Cleanups,
  csrs: ResourceClient<CertificateSigningRequest>,
  request: {
    subject: { commonName: string; organizations: string[] };
    cluster?: string;
    signerName?: string;
    usages?: string[];
    expirationSeconds?: number;
  },
): Promise<string> {
  const { csrPem } = await createCertificateRequest(request.subject);
  const name = uniqueName('csr');
  cleanups.add(() => admin.csrs.delete(name, undefined, { ignoreNotFound: true }));
  await csrs.create({
    metadata: { name, labels: request.cluster ? { [clusterNameLabel]: request.cluster } : {} },
    spec: {
      request: Buffer.from(csrPem).toString('base64'),
      signerName: request.signerName ?? 'kubernetes.io/kube-apiserver-client',
      usages: request.usages ?? ['client auth', 'digital signature', 'key encipherment'],
      ...(request.expirationSeconds ? { expirationSeconds: request.expirationSeconds } : {}),
    },
  });
  return name;
}

export function approvalOf(csr: CertificateSigningRequest | undefined) {
  return csr?.status?.conditions?.find((c) => c.type === 'Approved');
}

/** A logger keeping every line, to see which replica did what. */
export function capturingLogger(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
  return { log, lines };
}

/**
 * A cluster of the hub of `scope` that joined the honest way: its agent's bootstrap CSR, requested
 * through `bootstrapCsrs` (a user the hub auto-approves), was approved and signed.
 */
export async function joinedCluster(
  cleanups: Cleanups,
  scope: string,
  bootstrapCsrs: ResourceClient<CertificateSigningRequest>,
): Promise<string> {
  const name = await createCluster(cleanups, scope);
  const first = await waitFor(
    () =>
      requestCertificate(cleanups, bootstrapCsrs, { subject: agentSubject(name, 'agent1'), cluster: name }),
    'the bootstrap user may create CSRs',
  );
  await waitFor(async () => (await admin.csrs.get(first))?.status?.certificate, `${name}'s first CSR signed`);
  return name;
}

/**
 * For one test file: a hub scoped to a fresh label that auto-approves one bootstrap user's CSRs
 * (that user may only create and read CSRs), started before the file's tests and stopped after
 * them, and `cleanups` run after each test.
 */
export function scopedHubWithBootstrapUser(prefix: string) {
  const scope = uniqueName(prefix);
  const fileCleanups = new Cleanups();
  const cleanups = new Cleanups();
  const bootstrapUser = uniqueName(`tether-e2e-${prefix}-bootstrap`);
  beforeAll(async () => {
    await allowCsrRequests(fileCleanups, [bootstrapUser]);
    await startScopedHub(fileCleanups, scope, { autoApprovedCsrUsers: [bootstrapUser] });
  });
  afterEach(() => cleanups.run());
  afterAll(() => fileCleanups.run());
  return { scope, cleanups, bootstrapUser };
}

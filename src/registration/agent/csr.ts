// One client certificate from the hub: a fresh key, a CertificateSigningRequest for the agent's
// identity (signer kubernetes.io/kube-apiserver-client, client auth), and the wait until the hub
// approved it and the signer issued the certificate. The CSR is created with whatever hub
// credential the caller holds: the bootstrap kubeconfig on first join, the current hub kubeconfig
// when rotating (the hub approves that as a renewal of the same identity). Approval may take a
// human: the wait goes on (logging every minute) until the deadline, a denial, or the CSR vanishing.
// Like OCM's agent, it never has more than 10 of its cluster's CSRs pending on the hub: while 10
// wait for approval it creates none (a hub that never approves is not flooded by restarts).
// One informer on the cluster's CSRs (label selector) serves the count and the wait: a list and a
// watch per certificate, no count request of its own.

import type { KubeConfig } from '@kubernetes/client-node';
import { addonNameLabel, clusterNameLabel } from '../../api/index.ts';
import { TetherError, TimeoutError } from '../../errors.ts';
import { Informer, ResourceClient } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { createCertificateRequest } from '../../pki/index.ts';
import { agentSubject } from '../../tunnel/identity.ts';
import {
  b64,
  type CertificateSigningRequest,
  certificateSigningRequestResource,
  clientCertificateUsages,
  kubeApiserverClientSigner,
  unb64,
} from './kinds.ts';

export interface CertificateRequestOptions {
  /** hub credential to create and watch the CSR with */
  hubKubeConfig: KubeConfig;
  clusterName: string;
  agentName: string;
  /** spec.expirationSeconds (the signer's minimum is 600); unset: the signer's default */
  expirationSeconds?: number;
  /** give up on one CSR after this long (default 24 h, when the hub's CSR cleaner drops it anyway) */
  waitTimeoutMs?: number;
  /** how often to say we are still waiting (default 1 min) */
  waitLogIntervalMs?: number;
  /** while the pending-CSR limit is reached, count the cached CSRs again at least this often (default 5 s; every change of them counts again too) */
  haltedRetryMs?: number;
  /** called once per halt, when the limit stops this agent from creating a CSR */
  onHalted?: (pending: number) => void;
  signal?: AbortSignal;
  log: Logger;
}

/** Pending CSRs of one cluster (not its add-ons') on the hub at which the agent stops creating more (OCM's clusterCSRThreshold). */
export const maxPendingClusterCsrs = 10;

/** Message of the halt, as OCM words it (event ClientCertificateCreationHalted, condition ClusterCertificateRotated False). */
export const csrCreationHaltedMessage =
  'Stop creating csr since there are too many csr created already on hub';

const isPending = (csr: CertificateSigningRequest) =>
  !(csr.status?.conditions ?? []).some(
    (c) => (c.type === 'Approved' || c.type === 'Denied' || c.type === 'Failed') && c.status === 'True',
  );

/**
 * The cluster's own pending CSRs among `csrs`: labelled with the cluster, not an add-on's, named
 * `<cluster>-…` (the filter OCM's agent applies), with no Approved/Denied/Failed condition yet.
 */
export function pendingClusterCsrs(csrs: readonly CertificateSigningRequest[], clusterName: string): number {
  return csrs.filter((csr) => {
    const labels = csr.metadata?.labels ?? {};
    return (
      labels[clusterNameLabel] === clusterName &&
      labels[addonNameLabel] === undefined &&
      (csr.metadata?.name ?? '').startsWith(`${clusterName}-`) &&
      isPending(csr)
    );
  }).length;
}

export interface IssuedCertificate {
  csrName: string;
  certPem: string;
  keyPem: string;
}

/** How long the cluster's CSRs may take to load before the attempt fails (and is retried). */
const csrSyncTimeoutMs = 60_000;

/**
 * Create a CSR for the agent's identity and wait for the issued certificate. One informer on the
 * cluster's CSRs (label selector) serves both the pending count and the wait: one list and one
 * watch per certificate.
 */
export async function requestClientCertificate(opts: CertificateRequestOptions): Promise<IssuedCertificate> {
  const { clusterName, agentName, signal } = opts;
  const csrs = new ResourceClient<CertificateSigningRequest>(
    opts.hubKubeConfig,
    certificateSigningRequestResource,
  );
  const informer = new Informer(csrs, {
    labelSelector: `${clusterNameLabel}=${clusterName}`,
    resyncPeriodMs: 0,
    name: `csrs of ${clusterName}`,
    log: opts.log,
  });
  const changed = new Set<() => void>();
  const wakeAll = () => {
    for (const wake of [...changed]) wake();
  };
  informer.addHandlers({ add: wakeAll, update: wakeAll, delete: wakeAll });
  informer.start();
  try {
    await informer.waitForSync(csrSyncTimeoutMs, signal);
    await waitBelowPendingLimit(informer, changed, opts);
    const { csrPem, keyPem } = await createCertificateRequest(agentSubject(clusterName, agentName));
    const created = await csrs.create(
      {
        metadata: { generateName: `${clusterName}-`, labels: { [clusterNameLabel]: clusterName } },
        spec: {
          request: b64(csrPem),
          signerName: kubeApiserverClientSigner,
          usages: clientCertificateUsages,
          ...(opts.expirationSeconds ? { expirationSeconds: opts.expirationSeconds } : {}),
        },
      },
      { signal },
    );
    const csrName = created.metadata?.name ?? '';
    opts.log.info({ csr: csrName }, 'certificate signing request created: waiting for the hub to approve it');
    const certPem = await waitForCertificate(opts, informer, changed, csrName);
    opts.log.info({ csr: csrName }, 'certificate signing request approved and issued');
    return { csrName, certPem, keyPem };
  } finally {
    await informer.stop();
  }
}

/** Resolves at the informer's next event, after `ms`, or when `signal` aborts. */
function nextChange(changed: Set<() => void>, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      changed.delete(done);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    changed.add(done);
    signal?.addEventListener('abort', done);
    if (signal?.aborted) done();
  });
}

/** Wait (looking again at every change of the cluster's CSRs) until fewer than maxPendingClusterCsrs are pending. */
async function waitBelowPendingLimit(
  informer: Informer<CertificateSigningRequest>,
  changed: Set<() => void>,
  opts: CertificateRequestOptions,
): Promise<void> {
  let halted = false;
  for (;;) {
    if (opts.signal?.aborted) throw new TimeoutError('stopped waiting for fewer pending CSRs');
    const pending = pendingClusterCsrs(informer.list(), opts.clusterName);
    if (pending < maxPendingClusterCsrs) return;
    if (!halted) {
      halted = true;
      opts.log.warn({ pending, limit: maxPendingClusterCsrs }, csrCreationHaltedMessage);
      opts.onHalted?.(pending);
    }
    await nextChange(changed, opts.haltedRetryMs ?? 5000, opts.signal);
  }
}
type Outcome = { certPem: string } | { error: Error } | undefined;

function outcomeOf(csr: CertificateSigningRequest | undefined, name: string): Outcome {
  if (!csr) return undefined;
  const conditions = csr.status?.conditions ?? [];
  const refused = conditions.find((c) => (c.type === 'Denied' || c.type === 'Failed') && c.status === 'True');
  if (refused) {
    const why = [refused.reason, refused.message].filter(Boolean).join(': ');
    return {
      error: new TetherError('TETHER_UNAUTHORIZED', `CSR ${name} ${refused.type.toLowerCase()} ${why}`),
    };
  }
  const approved = conditions.some((c) => c.type === 'Approved' && c.status === 'True');
  const certPem = unb64(csr.status?.certificate);
  return approved && certPem.includes('BEGIN CERTIFICATE') ? { certPem } : undefined;
}

/** Wait, on the cluster's CSR informer, until CSR `name` is issued, refused, deleted or the deadline. */
async function waitForCertificate(
  opts: CertificateRequestOptions,
  informer: Informer<CertificateSigningRequest>,
  changed: Set<() => void>,
  name: string,
): Promise<string> {
  const waitTimeoutMs = opts.waitTimeoutMs ?? 24 * 3600_000;
  const started = Date.now();
  let seen = false;
  let settle: (o: { certPem: string } | { error: Error }) => void = () => {};
  const settled = new Promise<{ certPem: string } | { error: Error }>((resolve) => {
    settle = resolve;
  });
  const check = () => {
    const csr = informer.getByName(name);
    if (csr) seen = true;
    else if (seen) {
      settle({ error: new TetherError('TETHER_API_ERROR', `CSR ${name} was deleted before it was issued`) });
      return;
    }
    const outcome = outcomeOf(csr, name);
    if (outcome) settle(outcome);
  };
  changed.add(check);
  const onAbort = () => settle({ error: new TimeoutError(`stopped waiting for CSR ${name}`) });
  opts.signal?.addEventListener('abort', onAbort);
  if (opts.signal?.aborted) onAbort();
  const deadline = setTimeout(
    () => settle({ error: new TimeoutError(`CSR ${name} was not approved within ${waitTimeoutMs} ms`) }),
    waitTimeoutMs,
  );
  const reminder = setInterval(() => {
    const waitedS = Math.round((Date.now() - started) / 1000);
    opts.log.info(
      { csr: name, waitedS, visible: seen },
      'still waiting for the hub to approve the certificate signing request (approve it on the hub, e.g. clusteradm accept)',
    );
  }, opts.waitLogIntervalMs ?? 60_000);
  check();
  try {
    const outcome = await settled;
    if ('error' in outcome) throw outcome.error;
    return outcome.certPem;
  } finally {
    changed.delete(check);
    clearTimeout(deadline);
    clearInterval(reminder);
    opts.signal?.removeEventListener('abort', onAbort);
  }
}

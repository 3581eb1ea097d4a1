// One client certificate from the hub: a fresh key, a CertificateSigningRequest for the agent's
// identity (signer kubernetes.io/kube-apiserver-client, client auth), and the wait until the hub
// approved it and the signer issued the certificate. The CSR is created with whatever hub
// credential the caller holds: the bootstrap kubeconfig on first join, the current hub kubeconfig
// when rotating (the hub approves that as a renewal of the same identity). Approval may take a
// human: the wait goes on (logging every minute) until the deadline, a denial, or the CSR vanishing.
// Like OCM's agent, it never has more than 10 of its cluster's CSRs pending on the hub: while 10
// wait for approval it creates none (a hub that never approves is not flooded by restarts).

import { setTimeout as sleep } from 'node:timers/promises';
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
  clientCertificateUsages,
  csrResource,
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
  /** while the pending-CSR limit is reached, how often to count again (default 5 s) */
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

/** Wait (counting again every haltedRetryMs) until fewer than maxPendingClusterCsrs are pending. */
async function waitBelowPendingLimit(
  csrs: ResourceClient<CertificateSigningRequest>,
  opts: CertificateRequestOptions,
): Promise<void> {
  let halted = false;
  for (;;) {
    const list = await csrs.list({
      labelSelector: `${clusterNameLabel}=${opts.clusterName}`,
      signal: opts.signal,
    });
    const pending = pendingClusterCsrs(list.items, opts.clusterName);
    if (pending < maxPendingClusterCsrs) return;
    if (!halted) {
      halted = true;
      opts.log.warn({ pending, limit: maxPendingClusterCsrs }, csrCreationHaltedMessage);
      opts.onHalted?.(pending);
    }
    await sleep(opts.haltedRetryMs ?? 5000, undefined, { signal: opts.signal });
  }
}

export interface IssuedCertificate {
  csrName: string;
  certPem: string;
  keyPem: string;
}

/** Create a CSR for the agent's identity and wait for the issued certificate. */
export async function requestClientCertificate(opts: CertificateRequestOptions): Promise<IssuedCertificate> {
  const { clusterName, agentName, signal } = opts;
  const csrs = new ResourceClient<CertificateSigningRequest>(opts.hubKubeConfig, csrResource);
  await waitBelowPendingLimit(csrs, opts);
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
  const certPem = await waitForCertificate(opts, csrName);
  opts.log.info({ csr: csrName }, 'certificate signing request approved and issued');
  return { csrName, certPem, keyPem };
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

/** Watch one CSR (fieldSelector on its name) until it is issued, refused, deleted or the deadline. */
async function waitForCertificate(opts: CertificateRequestOptions, name: string): Promise<string> {
  const client = new ResourceClient<CertificateSigningRequest>(opts.hubKubeConfig, csrResource);
  const informer = new Informer(client, {
    fieldSelector: `metadata.name=${name}`,
    resyncPeriodMs: 30_000,
    name: `csr ${name}`,
    log: opts.log,
  });
  const waitTimeoutMs = opts.waitTimeoutMs ?? 24 * 3600_000;
  const started = Date.now();
  let seen = false;
  let settle: (o: { certPem: string } | { error: Error }) => void = () => {};
  const settled = new Promise<{ certPem: string } | { error: Error }>((resolve) => {
    settle = resolve;
  });
  const check = (csr: CertificateSigningRequest | undefined) => {
    if (csr) seen = true;
    const outcome = outcomeOf(csr, name);
    if (outcome) settle(outcome);
  };
  informer.addHandlers({
    add: check,
    update: (_old, csr) => check(csr),
    delete: () =>
      settle({ error: new TetherError('TETHER_API_ERROR', `CSR ${name} was deleted before it was issued`) }),
  });
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
  informer.start();
  try {
    const outcome = await settled;
    if ('error' in outcome) throw outcome.error;
    return outcome.certPem;
  } finally {
    clearTimeout(deadline);
    clearInterval(reminder);
    opts.signal?.removeEventListener('abort', onAbort);
    await informer.stop();
  }
}

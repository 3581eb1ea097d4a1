// The MSA status the agent reports: SecretCreated and TokenReported conditions (through the shared
// setCondition, so transition times move only on status changes), expirationTimestamp and
// tokenSecretRef. Pure functions returning the status to write, or undefined when nothing changes.
import {
  type ManagedServiceAccount,
  ManagedServiceAccountCondition,
  ManagedServiceAccountReason,
  type ManagedServiceAccountStatus,
} from '../../api/index.ts';
import { conditionsEqualIgnoringTime, formatTime, setCondition } from '../../kube/index.ts';
import type { TokenClaims } from '../token.ts';

/** Condition messages stay readable (the CRD allows 32 KiB; an apiserver error can be long). */
const maxMessageLength = 1024;

const at = (seconds: number | undefined) =>
  seconds === undefined ? undefined : formatTime(new Date(seconds * 1000));

/**
 * Status for a token that is in the Secret: `expirationTimestamp` is what TokenRequest granted
 * (`issuedExpiration`) or, for a token kept from before, its `exp`; lastRefreshTimestamp is its `iat`.
 */
export function projectedStatus(
  msa: ManagedServiceAccount,
  claims: TokenClaims,
  details: { username: string; clusterName: string; issuedExpiration?: string; now?: Date },
): ManagedServiceAccountStatus | undefined {
  const name = msa.metadata.name ?? '';
  const generation = msa.metadata.generation;
  const now = details.now ?? new Date();
  let conditions = setCondition(
    msa.status?.conditions,
    {
      type: ManagedServiceAccountCondition.SecretCreated,
      status: 'True',
      reason: ManagedServiceAccountReason.SecretCreated,
      message: `Secret ${msa.metadata.namespace}/${name} holds the token`,
    },
    generation,
    now,
  );
  conditions = setCondition(
    conditions,
    {
      type: ManagedServiceAccountCondition.TokenReported,
      status: 'True',
      reason: ManagedServiceAccountReason.TokenReported,
      message: `token of ${details.username} on cluster ${details.clusterName} reported`,
    },
    generation,
    now,
  );
  const expirationTimestamp = details.issuedExpiration ?? at(claims.exp);
  const lastRefreshTimestamp = at(claims.iat) ?? formatTime(now);
  const old = msa.status;
  const unchanged =
    conditionsEqualIgnoringTime(old?.conditions, conditions) &&
    old?.expirationTimestamp === expirationTimestamp &&
    old?.tokenSecretRef?.name === name &&
    old.tokenSecretRef.lastRefreshTimestamp === lastRefreshTimestamp;
  if (unchanged) return undefined;
  return { conditions, expirationTimestamp, tokenSecretRef: { name, lastRefreshTimestamp } };
}

/** Status with TokenReported False (TokenReportFailed, the error text); the rest is kept. */
export function failedStatus(
  msa: ManagedServiceAccount,
  errorText: string,
  now: Date = new Date(),
): ManagedServiceAccountStatus | undefined {
  const message =
    errorText.length > maxMessageLength ? `${errorText.slice(0, maxMessageLength - 1)}…` : errorText;
  const conditions = setCondition(
    msa.status?.conditions,
    {
      type: ManagedServiceAccountCondition.TokenReported,
      status: 'False',
      reason: ManagedServiceAccountReason.TokenReportFailed,
      message,
    },
    msa.metadata.generation,
    now,
  );
  return conditionsEqualIgnoringTime(msa.status?.conditions, conditions) ? undefined : { conditions };
}

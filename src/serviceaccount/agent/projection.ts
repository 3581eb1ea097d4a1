// ManagedServiceAccountProjectionReconciler: one ManagedServiceAccount on the hub → a labelled
// ServiceAccount in the install namespace of the managed cluster → a TokenRequest token in the
// hub Secret of the same name → MSA status. Keyed "<cluster>/<name>" like the MSA.
//
// A token is replaced when the Secret is missing or altered, when it is not a token of this very
// ServiceAccount (sub, uid, audiences), when the managed apiserver's TokenReview rejects it, or at
// `refreshAtFraction` of its real lifetime (iat → exp as issued: clusters may cap the lifetime);
// reconcile then asks to run again exactly at the next refresh time. spec.rotation.enabled changes
// nothing: OCM deprecated it ("all ServiceAccount tokens will be rotated before they expire
// regardless of this field"). The reconciler only ever
// deletes ServiceAccounts carrying the managed-serviceaccount label, and never adopts one without.
// The hub Secret is read by name on every reconcile (the agent may not list Secrets: the hub grants
// it its token Secrets by name only), and every `tokenSecretCheckPeriodMs` at the latest, so a
// Secret someone deleted or altered is put back within that period.
import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  defaultTokenValidity,
  type ManagedServiceAccount,
  type ManagedServiceAccountStatus,
  managedServiceAccountLabel,
} from '../../api/index.ts';
import { ConflictError, errorMessage, InvalidArgumentError, TetherError } from '../../errors.ts';
import {
  type Informer,
  isAlreadyExists,
  isForbidden,
  isNotFound,
  type ReconcileResult,
  type ResourceClient,
  splitKey,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import type { Namespace, Secret, ServiceAccount } from '../core.ts';
import {
  decodeTokenClaims,
  type IssuedToken,
  parseAudiences,
  requestServiceAccountToken,
  reviewToken,
  serviceAccountUsername,
  type TokenClaims,
  TokenRequestUnsupportedError,
  tokenAudiencesAnnotation,
  tokenExpirationSeconds,
} from '../token.ts';
import { refreshAtMs, staleTokenReason } from './refresh-policy.ts';
import { failedStatus, projectedStatus } from './status.ts';
import {
  type ManagedClusterEndpoint,
  mergeTokenSecret,
  newTokenSecret,
  secretToken,
  tokenSecretData,
} from './token-secret.ts';

/** The longest delay a Node timer takes (≈ 24.8 days); later refreshes wake up at this and re-plan. */
const maxRequeueMs = 2 ** 31 - 1;
/** Never plan the next look sooner than this, whatever the fraction (no hot loop on tiny lifetimes). */
const minRequeueMs = 1000;
/** A token the managed apiserver accepted this recently is not reviewed again. */
const reviewFreshMs = 5 * 60_000;
/** Retry of a cluster without TokenRequest: it needs an apiserver restart, so not sooner. */
const unsupportedRetryMs = 5 * 60_000;

/** The ServiceAccount exists without our label: someone else's, left alone. */
export class ServiceAccountNotManagedError extends TetherError {
  constructor(namespace: string, name: string) {
    super(
      'TETHER_INVALID_ARGUMENT',
      `ServiceAccount ${namespace}/${name} already exists on the managed cluster without the label ` +
        `${managedServiceAccountLabel}=true; the agent does not adopt ServiceAccounts it did not create: ` +
        'delete it, label it, or give the ManagedServiceAccount another name',
    );
    this.name = 'ServiceAccountNotManagedError';
  }
}

/** The hub refused the token Secret: its Role naming this MSA is not there (yet). Retried with backoff. */
export class TokenSecretNotGrantedError extends TetherError {
  constructor(namespace: string, name: string, cause: unknown) {
    super(
      'TETHER_API_ERROR',
      `the hub does not (yet) grant this agent Secret ${namespace}/${name}: the hub's ManagedServiceAccount ` +
        `controller (tether hub) grants each MSA's token Secret by name; retrying (${errorMessage(cause)})`,
    );
    this.name = 'TokenSecretNotGrantedError';
  }
}

export interface ProjectionDeps {
  clusterName: string;
  installNamespace: string;
  endpoint: ManagedClusterEndpoint;
  managedKubeConfig: KubeConfig;
  /** agent-wide audiences; an MSA's token-audiences annotation replaces them */
  audiences: readonly string[];
  refreshAtFraction: number;
  /** look at the hub Secret at least this often (it is not watched) */
  tokenSecretCheckPeriodMs: number;
  msaInformer: Informer<ManagedServiceAccount>;
  serviceAccountInformer: Informer<ServiceAccount>;
  msaClient: ResourceClient<ManagedServiceAccount>;
  hubSecrets: ResourceClient<Secret>;
  serviceAccounts: ResourceClient<ServiceAccount>;
  namespaces: ResourceClient<Namespace>;
  log: Logger;
}

/** What the reconciler remembers per key: the token it last wrote or checked, and when it was reviewed. */
interface KnownToken {
  tokenHash: string;
  reviewedAt: number;
}

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

export class ManagedServiceAccountProjectionReconciler {
  private readonly d: ProjectionDeps;
  private readonly known = new Map<string, KnownToken>();
  private namespaceReady = false;

  constructor(deps: ProjectionDeps) {
    this.d = deps;
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const { namespace, name } = splitKey(key);
    if (namespace !== this.d.clusterName) return undefined;
    const msa = this.d.msaInformer.get(key);
    if (!msa || msa.metadata.deletionTimestamp) {
      await this.removeServiceAccount(key, name);
      return undefined;
    }
    try {
      return await this.project(key, msa);
    } catch (err) {
      if (err instanceof TokenSecretNotGrantedError) throw err; // the hub catches up in a moment
      if (!(err instanceof ConflictError)) {
        await this.reportFailure(msa, err).catch((e: unknown) =>
          this.d.log.warn({ msa: key, err: errorMessage(e) }, 'could not report the failure in MSA status'),
        );
      }
      // These need someone to change the MSA, the ServiceAccount or the cluster: events bring the key back.
      if (err instanceof InvalidArgumentError || err instanceof ServiceAccountNotManagedError)
        return undefined;
      if (err instanceof TokenRequestUnsupportedError) return { requeueAfterMs: unsupportedRetryMs };
      throw err;
    }
  }

  private async project(key: string, msa: ManagedServiceAccount): Promise<ReconcileResult> {
    const name = msa.metadata.name ?? '';
    const expirationSeconds = tokenExpirationSeconds(msa.spec?.rotation?.validity ?? defaultTokenValidity);
    const audiences = this.audiencesFor(msa);
    const account = await this.ensureServiceAccount(name);
    let secret = await this.currentSecret(name);
    const why = await this.refreshReason(key, secret, account, audiences, expirationSeconds);
    let issued: IssuedToken | undefined;
    let token = secretToken(secret);
    if (why || !token) {
      this.d.log.info({ msa: key, why }, 'requesting a new token');
      const ns = this.d.installNamespace;
      issued = await requestServiceAccountToken(this.d.managedKubeConfig, ns, name, {
        expirationSeconds,
        audiences,
      });
      token = issued.token;
    }
    secret = await this.writeSecret(msa, secret, token);
    if (issued) this.known.set(key, { tokenHash: hashOf(token), reviewedAt: Date.now() });
    const claims = decodeTokenClaims(token) ?? { aud: [] };
    await this.reportProjected(msa, claims, issued);
    return { requeueAfterMs: Math.min(this.nextRefreshDelay(claims), this.d.tokenSecretCheckPeriodMs) };
  }

  private audiencesFor(msa: ManagedServiceAccount): string[] {
    const annotation = msa.metadata.annotations?.[tokenAudiencesAnnotation];
    if (annotation === undefined) return [...this.d.audiences];
    try {
      return parseAudiences(annotation);
    } catch (err) {
      throw new InvalidArgumentError(`annotation ${tokenAudiencesAnnotation}: ${errorMessage(err)}`);
    }
  }

  /** Why the Secret's token must be replaced, or undefined to keep it. */
  private async refreshReason(
    key: string,
    secret: Secret | undefined,
    account: ServiceAccount,
    audiences: readonly string[],
    expirationSeconds: number,
  ): Promise<string | undefined> {
    const known = this.known.get(key);
    const username = serviceAccountUsername(this.d.installNamespace, account.metadata.name ?? '');
    const now = Date.now();
    const why = staleTokenReason({
      secret,
      endpoint: this.d.endpoint,
      username,
      serviceAccountUid: account.metadata.uid,
      audiences,
      expirationSeconds,
      refreshAtFraction: this.d.refreshAtFraction,
      knownTokenHash: known?.tokenHash,
      hash: hashOf,
      now,
    });
    const token = secretToken(secret);
    if (why || !token) return why ?? 'the Secret holds no token';
    if (known && now - known.reviewedAt < reviewFreshMs) return undefined;
    // Revocation (ServiceAccount deleted and recreated, signing key rotated) only shows here.
    try {
      const review = await reviewToken(this.d.managedKubeConfig, token, audiences);
      if (!review.authenticated) {
        return `the managed apiserver no longer accepts the token (${review.error ?? 'TokenReview'})`;
      }
      if (review.username !== username) return `the token authenticates as ${review.username}`;
    } catch (err) {
      // Without a review the other checks stand; a TokenRequest would not be better informed.
      this.d.log.warn({ msa: key, err: errorMessage(err) }, 'TokenReview failed: keeping the token');
      return undefined;
    }
    this.known.set(key, { tokenHash: hashOf(token), reviewedAt: now });
    return undefined;
  }

  private nextRefreshDelay(claims: TokenClaims): number {
    const delay = Math.ceil(refreshAtMs(claims, this.d.refreshAtFraction) - Date.now());
    return Math.min(Math.max(delay, minRequeueMs), maxRequeueMs);
  }

  private async ensureNamespace(): Promise<void> {
    if (this.namespaceReady) return;
    const name = this.d.installNamespace;
    if (!(await this.d.namespaces.get(name))) {
      try {
        await this.d.namespaces.create({ metadata: { name } });
        this.d.log.info({ namespace: name }, 'created the install namespace');
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
    }
    this.namespaceReady = true;
  }

  private async ensureServiceAccount(name: string): Promise<ServiceAccount> {
    await this.ensureNamespace();
    const namespace = this.d.installNamespace;
    let account = this.d.serviceAccountInformer.getByName(name, namespace);
    if (!account) {
      try {
        account = await this.d.serviceAccounts.create({
          metadata: { name, namespace, labels: { [managedServiceAccountLabel]: 'true' } },
        });
        this.d.log.info({ serviceAccount: `${namespace}/${name}` }, 'created ServiceAccount');
      } catch (err) {
        if (isNotFound(err)) this.namespaceReady = false; // the namespace went away: create it next time
        if (!isAlreadyExists(err)) throw err;
        account = await this.d.serviceAccounts.get(name, namespace);
        if (!account) throw err;
      }
    }
    if (account.metadata.labels?.[managedServiceAccountLabel] !== 'true') {
      throw new ServiceAccountNotManagedError(namespace, name);
    }
    if (account.metadata.deletionTimestamp) {
      throw new TetherError(
        'TETHER_API_ERROR',
        `ServiceAccount ${namespace}/${name} is being deleted; retrying`,
      );
    }
    return account;
  }

  /** The hub Secret, read by name (the agent may not list or watch Secrets). */
  private async currentSecret(name: string): Promise<Secret | undefined> {
    return this.withTokenSecretGrant(name, () => this.d.hubSecrets.get(name, this.d.clusterName));
  }

  /** Runs a call on the token Secret; a 403 means its by-name Role is not there yet. */
  private async withTokenSecretGrant<R>(name: string, call: () => Promise<R>): Promise<R> {
    try {
      return await call();
    } catch (err) {
      if (isForbidden(err)) throw new TokenSecretNotGrantedError(this.d.clusterName, name, err);
      throw err;
    }
  }

  private async writeSecret(
    msa: ManagedServiceAccount,
    existing: Secret | undefined,
    token: string,
  ): Promise<Secret> {
    const data = tokenSecretData(this.d.endpoint, token);
    const where = { secret: `${msa.metadata.namespace}/${msa.metadata.name}` };
    if (existing && existing.type !== undefined && existing.type !== 'Opaque') {
      // The type is immutable: replace the Secret rather than fail on every refresh.
      const uid = existing.metadata.uid;
      await this.withTokenSecretGrant(msa.metadata.name ?? '', () =>
        this.d.hubSecrets.delete(existing?.metadata.name ?? '', existing?.metadata.namespace, {
          ignoreNotFound: true,
          ...(uid ? { preconditions: { uid } } : {}),
        }),
      );
      this.d.log.info({ ...where, type: existing.type }, 'deleted a token Secret of the wrong type');
      existing = undefined;
    }
    if (!existing) {
      const created = await this.d.hubSecrets.create(newTokenSecret(msa, data));
      this.d.log.info(where, 'created token Secret');
      return created;
    }
    const merged = mergeTokenSecret(existing, msa, data);
    if (!merged) return existing;
    return this.withTokenSecretGrant(msa.metadata.name ?? '', () => this.d.hubSecrets.replace(merged));
  }

  private async reportProjected(msa: ManagedServiceAccount, claims: TokenClaims, issued?: IssuedToken) {
    const status = projectedStatus(msa, claims, {
      username: serviceAccountUsername(this.d.installNamespace, msa.metadata.name ?? ''),
      clusterName: this.d.clusterName,
      issuedExpiration: issued?.expirationTimestamp,
    });
    if (status) await this.patchStatus(msa, status);
  }

  private async reportFailure(msa: ManagedServiceAccount, err: unknown): Promise<void> {
    const status = failedStatus(msa, errorMessage(err));
    if (!status) return; // reported already
    const where = `${msa.metadata.namespace}/${msa.metadata.name}`;
    this.d.log.warn({ msa: where, err: errorMessage(err) }, 'token not reported');
    await this.patchStatus(msa, status);
  }

  /** Merge-patch the MSA status; an MSA deleted meanwhile is not an error (its deletion event follows). */
  private async patchStatus(msa: ManagedServiceAccount, status: ManagedServiceAccountStatus): Promise<void> {
    try {
      await this.d.msaClient.patchStatus(msa.metadata.name ?? '', { status }, msa.metadata.namespace);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /** The MSA is gone: delete its ServiceAccount if (and only if) it carries our label. */
  private async removeServiceAccount(key: string, name: string): Promise<void> {
    this.known.delete(key);
    const namespace = this.d.installNamespace;
    const account = this.d.serviceAccountInformer.getByName(name, namespace);
    if (account?.metadata.labels?.[managedServiceAccountLabel] !== 'true') return;
    if (account.metadata.deletionTimestamp) return;
    const uid = account.metadata.uid;
    const deleted = await this.d.serviceAccounts.delete(name, namespace, {
      ignoreNotFound: true,
      ...(uid ? { preconditions: { uid } } : {}),
    });
    if (deleted)
      this.d.log.info({ serviceAccount: `${namespace}/${name}` }, 'deleted ServiceAccount of a removed MSA');
  }
}

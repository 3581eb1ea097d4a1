// HubCredentialsReconciler: the one loop that owns the agent's hub credential. It reuses a valid
// hub-kubeconfig-secret, or bootstraps (bootstrap kubeconfig → ManagedCluster → CSR → secret); it
// renews the certificate when little of its lifetime is left (CSR made with the current credential);
// it bootstraps again when the secret is deleted or no longer usable, or the hub keeps rejecting the
// credential. Every new credential is written to the secret *before* it is handed to `onChange`, so
// a restart always finds what the running agent uses. Never touches the hub ManagedCluster's status.
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { hubKubeconfigSecretName } from '../../api/index.ts';
import { Informer, type ProxyEnv, ResourceClient } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { type BootstrapKubeconfig, loadBootstrapKubeconfig } from './bootstrap-kubeconfig.ts';
import {
  CertificateEventReason,
  CertificateReporter,
  CertificateRotationReason,
  ClusterCertificateRotatedCondition,
  certificateControllerName,
  certificateRotatedCondition,
  goDurationString,
} from './certificate-reporting.ts';
import { csrCreationHaltedMessage, requestClientCertificate } from './csr.ts';
import { describeError } from './describe-error.ts';
import {
  credentialsFromCertificate,
  credentialsFromSecret,
  type HubCredentials,
  writeHubKubeconfigSecret,
} from './hub-kubeconfig-secret.ts';
import { type Secret, secretResource } from './kinds.ts';
import { ensureManagedCluster, managedClusterClientConfigs } from './managed-cluster.ts';
import { jitteredRotationFraction, maxTimerMs, rotationTime } from './rotation.ts';

/** Why the credential changed, for logs and callers. */
export type CredentialSource = 'secret' | 'bootstrap' | 'rotation';

export interface HubCredentialsOptions {
  clusterName: string;
  agentName: string;
  agentNamespace: string;
  /** the cluster that keeps the agent's Secrets: the managed cluster, or the hosting one in hosted mode */
  agentKubeConfig: KubeConfig;
  /** the managed cluster itself: its apiserver address and CA go into the ManagedCluster */
  managedKubeConfig: KubeConfig;
  bootstrapKubeconfigPath?: string;
  proxyUrl?: string;
  proxyEnv?: ProxyEnv;
  leaseDurationSeconds: number;
  csrExpirationSeconds?: number;
  /** fixed fraction of lifetime left at which to renew; default 0.20–0.25 jittered per certificate */
  rotationFraction?: number;
  /** first retry delay after a failed bootstrap or rotation (default 1 s), doubling up to 5 min */
  retryBaseMs?: number;
  log: Logger;
  /** called (and awaited) with every new credential, after it is stored */
  onChange(creds: HubCredentials, source: CredentialSource): Promise<void>;
}

const retryMaxMs = 5 * 60_000;

export class HubCredentialsReconciler {
  private readonly opts: HubCredentialsOptions;
  private readonly log: Logger;
  private readonly abort = new AbortController();
  private readonly secretInformer: Informer<Secret>;
  private readonly reporter: CertificateReporter;
  private current?: HubCredentials;
  private rotateAt?: Date;
  private unauthorized = false;
  /** why the bootstrap kubeconfig could not be loaded the last time */
  private bootstrapProblem = '';
  private wake: () => void = () => {};
  private woken = false;
  private running?: Promise<void>;

  constructor(opts: HubCredentialsOptions) {
    this.opts = opts;
    this.log = opts.log;
    this.reporter = new CertificateReporter(opts.clusterName, opts.log);
    const secrets = new ResourceClient<Secret>(opts.agentKubeConfig, secretResource);
    this.secretInformer = new Informer(secrets, {
      namespace: opts.agentNamespace,
      fieldSelector: `metadata.name=${hubKubeconfigSecretName}`,
      name: 'hub-kubeconfig-secret',
      log: opts.log,
    });
    const poke = () => this.poke();
    this.secretInformer.addHandlers({ add: poke, update: (a, b) => a !== b && poke(), delete: poke });
  }

  start(): void {
    if (this.running) return;
    this.secretInformer.start();
    this.running = this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.poke();
    await Promise.all([this.running, this.secretInformer.stop()]);
    await this.reporter.idle();
  }

  /** The agent has seen HubAccepted: certificate events held until then go out now. */
  hubAccepted(): void {
    this.reporter.hubAccepted();
  }

  /** The credential in use, if any. */
  credentials(): HubCredentials | undefined {
    return this.current;
  }

  /** The hub rejects the current credential (401): get a new one through the bootstrap kubeconfig. */
  reportUnauthorized(): void {
    if (!this.current || this.unauthorized) return;
    this.unauthorized = true;
    this.log.warn('the hub rejects the hub kubeconfig: bootstrapping again');
    this.poke();
  }

  private poke(): void {
    this.woken = true;
    this.wake();
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    let failures = 0;
    while (!signal.aborted) {
      this.woken = false;
      try {
        await this.reconcile();
        failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        failures++;
        const delay = Math.min((this.opts.retryBaseMs ?? 1000) * 2 ** (failures - 1), retryMaxMs);
        this.log.warn({ err: describeError(err), retryInMs: delay }, 'could not get a hub credential');
        await this.pause(delay);
        continue;
      }
      const untilRotation = this.rotateAt ? this.rotateAt.getTime() - Date.now() : maxTimerMs;
      await this.pause(Math.max(0, Math.min(untilRotation, maxTimerMs)));
    }
  }

  /** One pass: renew when due, else make sure the stored secret is what we use (or bootstrap). */
  private async reconcile(): Promise<void> {
    const signal = this.abort.signal;
    const current = this.current;
    const now = Date.now();
    // An expired certificate cannot ask for its own renewal: fall through to bootstrapping.
    const renewable = current && !this.unauthorized && now < current.notAfter.getTime();
    if (renewable && this.rotateAt && now >= this.rotateAt.getTime()) {
      await this.rotate(current);
      return;
    }
    const bootstrap = await this.bootstrapKubeconfig();
    const secrets = new ResourceClient<Secret>(this.opts.agentKubeConfig, secretResource);
    const secret = await secrets.get(hubKubeconfigSecretName, this.opts.agentNamespace, { signal });
    const stored = secret
      ? credentialsFromSecret(secret, this.opts, bootstrap?.hub, this.opts.proxyEnv)
      : 'it does not exist';
    if (typeof stored !== 'string' && !this.unauthorized) {
      if (stored.serial !== this.current?.serial) await this.adopt(stored, 'secret');
      return;
    }
    const why = this.unauthorized ? 'the hub rejects it' : stored;
    if (!bootstrap) {
      throw new Error(
        `secret ${hubKubeconfigSecretName} cannot be used (${why}) and there is no bootstrap kubeconfig: ${this.bootstrapProblem}`,
      );
    }
    this.log.info(
      { reason: why },
      `no usable ${hubKubeconfigSecretName}: bootstrapping from ${bootstrap.source}`,
    );
    await this.bootstrap(bootstrap);
  }

  /** The bootstrap kubeconfig, or undefined when there is none (it may be removed after joining). */
  private async bootstrapKubeconfig(): Promise<BootstrapKubeconfig | undefined> {
    try {
      return await loadBootstrapKubeconfig(this.opts, this.abort.signal);
    } catch (err) {
      this.bootstrapProblem = describeError(err);
      return undefined;
    }
  }

  private async bootstrap(bootstrap: BootstrapKubeconfig): Promise<void> {
    const { clusterName, leaseDurationSeconds, log } = this.opts;
    const signal = this.abort.signal;
    await ensureManagedCluster(bootstrap.kubeconfig, {
      clusterName,
      clientConfigs: managedClusterClientConfigs(this.opts.managedKubeConfig),
      leaseDurationSeconds,
      signal,
      log,
    });
    const issued = await requestClientCertificate({
      ...this.opts,
      hubKubeConfig: bootstrap.kubeconfig,
      expirationSeconds: this.opts.csrExpirationSeconds,
      signal,
    });
    const creds = credentialsFromCertificate(
      bootstrap.hub,
      issued.certPem,
      issued.keyPem,
      this.opts,
      this.opts.proxyEnv,
    );
    await this.store(creds);
    this.unauthorized = false;
    await this.adopt(creds, 'bootstrap');
    await this.reporter.event(
      creds.kubeconfig,
      CertificateEventReason.Created,
      `A new client certificate for ${certificateControllerName.bootstrap(clusterName)} is available`,
    );
  }

  private async rotate(current: HubCredentials): Promise<void> {
    this.log.info(
      { serial: current.serial, notAfter: current.notAfter.toISOString() },
      'hub client certificate due for renewal: requesting a new one',
    );
    const controller = certificateControllerName.rotation(this.opts.clusterName);
    const left = goDurationString(current.notAfter.getTime() - Date.now());
    await this.reporter.event(
      current.kubeconfig,
      CertificateEventReason.RotationStarted,
      `The current client certificate for ${controller} expires in ${left}. Start certificate rotation`,
    );
    const issued = await requestClientCertificate({
      ...this.opts,
      hubKubeConfig: current.kubeconfig,
      expirationSeconds: this.opts.csrExpirationSeconds,
      signal: this.abort.signal,
      onHalted: () => {
        void this.reporter.event(
          current.kubeconfig,
          CertificateEventReason.CreationHalted,
          csrCreationHaltedMessage,
        );
        void this.reporter.setCondition(current.kubeconfig, {
          type: ClusterCertificateRotatedCondition,
          status: 'False',
          reason: CertificateRotationReason.UpdateFailed,
          message: csrCreationHaltedMessage,
        });
      },
    });
    const creds = credentialsFromCertificate(
      current.hub,
      issued.certPem,
      issued.keyPem,
      this.opts,
      this.opts.proxyEnv,
    );
    await this.store(creds);
    await this.adopt(creds, 'rotation');
    await this.reporter.setCondition(
      creds.kubeconfig,
      certificateRotatedCondition(creds.notBefore, creds.notAfter),
    );
    await this.reporter.event(
      creds.kubeconfig,
      CertificateEventReason.Created,
      `A new client certificate for ${controller} is available`,
    );
  }

  private async store(creds: HubCredentials): Promise<void> {
    await writeHubKubeconfigSecret(
      this.opts.agentKubeConfig,
      this.opts.agentNamespace,
      creds,
      this.opts,
      this.abort.signal,
    );
  }

  private async adopt(creds: HubCredentials, source: CredentialSource): Promise<void> {
    const fraction = this.opts.rotationFraction ?? jitteredRotationFraction();
    this.current = creds;
    this.rotateAt = rotationTime(creds.notBefore, creds.notAfter, fraction);
    this.log.info(
      {
        source,
        serial: creds.serial,
        notAfter: creds.notAfter.toISOString(),
        rotateAt: this.rotateAt.toISOString(),
      },
      'using hub client certificate',
    );
    try {
      await this.opts.onChange(creds, source);
    } catch (err) {
      this.log.error({ err: describeError(err) }, 'switching to the new hub credential failed');
    }
  }

  private async pause(ms: number): Promise<void> {
    if (this.woken || this.abort.signal.aborted) return;
    const stop = new AbortController();
    this.wake = () => stop.abort();
    try {
      await sleep(ms, undefined, { signal: stop.signal });
    } catch {
      // woken early
    } finally {
      this.wake = () => {};
    }
  }
}

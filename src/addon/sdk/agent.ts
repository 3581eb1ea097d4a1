// The add-on agent's side of the SDK: what a program running on a managed cluster as an add-on
// agent needs besides its own logic.
//   - its hub credential: the registration agent keeps Secret `<addon>-hub-kubeconfig` in the
//     install namespace (keys kubeconfig, tls.crt, tls.key); an agent's Deployment mounts it (OCM's
//     template add-ons mount it at /managed/hub-kubeconfig and set HUB_KUBECONFIG) and loads the
//     kubeconfig from there. Its certificate files are read on every request, so the kubelet's
//     refresh of the mounted Secret after a rotation needs nothing from the agent.
//   - its heartbeat: AddonLeaseUpdater renews Lease `<addon>` in the install namespace on the managed
//     cluster every 60 s (+ up to 25% jitter), as OCM's lease updater does; the registration agent
//     turns it into the add-on's `Available` condition (src/registration/agent/addon/lease-health.ts). Optional
//     health checks hold the renewal back while the agent is not well.
// Never talks to the hub itself.
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { addonHubKubeconfigSecretName, defaultAddonLeaseDurationSeconds } from '../../api/addon.ts';
import { errorMessage } from '../../errors.ts';
import {
  formatMicroTime,
  isConflict,
  isNotFound,
  type Lease,
  leaseResource,
  loadKubeconfig,
  ResourceClient,
} from '../../kube/index.ts';
import { type Logger, logger } from '../../log.ts';

/** Where OCM's template add-ons mount the hub credential Secret. */
export const hubKubeconfigMountPath = '/managed/hub-kubeconfig';

/** The Secret the registration agent keeps the add-on's hub credential in (kube-apiserver-client signer). */
export const hubKubeconfigSecretName = addonHubKubeconfigSecretName;

/** The hub kubeconfig's path: $HUB_KUBECONFIG, else the kubeconfig in the mounted Secret. */
export function defaultHubKubeconfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.HUB_KUBECONFIG || `${hubKubeconfigMountPath}/kubeconfig`;
}

/**
 * The add-on agent's hub kubeconfig (default: defaultHubKubeconfigPath()). Certificate paths in it
 * are relative to the file, as the registration agent writes them; HTTPS_PROXY / NO_PROXY (which
 * an AddOnDeploymentConfig's proxyConfig puts in the agent's environment) apply.
 */
export function loadAddonHubKubeconfig(path: string = defaultHubKubeconfigPath()): KubeConfig {
  return loadKubeconfig(path);
}

/** The volume and mount an agent's pod needs for its hub credential at hubKubeconfigMountPath. */
export function hubKubeconfigVolume(addonName: string): { volume: V1Volume; volumeMount: V1VolumeMount } {
  return {
    volume: { name: 'hub-kubeconfig', secret: { secretName: hubKubeconfigSecretName(addonName) } },
    volumeMount: { name: 'hub-kubeconfig', mountPath: hubKubeconfigMountPath, readOnly: true },
  };
}

export { defaultAddonLeaseDurationSeconds };

const jitterFactor = 0.25;
/** A failed renewal is tried again after this long (or the lease duration, if shorter). */
const retryAfterFailureMs = 10_000;

export interface AddonLeaseUpdaterOptions {
  /** the managed cluster the agent runs on */
  managedKubeConfig: KubeConfig;
  addonName: string;
  /** the add-on's install namespace */
  namespace: string;
  /** default 60 s (OCM's) */
  leaseDurationSeconds?: number;
  /** every check must pass for a renewal; a false or a throw skips it */
  healthChecks?: Array<() => boolean | Promise<boolean>>;
  log?: Logger;
}

/** Renews Lease `<addon>` in the install namespace while the agent runs (and is healthy). */
export class AddonLeaseUpdater {
  private readonly opts: AddonLeaseUpdaterOptions;
  private readonly leases: ResourceClient<Lease>;
  private readonly log: Logger;
  private readonly abort = new AbortController();
  private running?: Promise<void>;
  private renewals = 0;

  constructor(opts: AddonLeaseUpdaterOptions) {
    this.opts = opts;
    this.leases = new ResourceClient<Lease>(opts.managedKubeConfig, leaseResource, {
      requestTimeoutMs: 15_000,
    });
    this.log = opts.log ?? logger('addon-lease', { addon: opts.addonName });
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Stops renewing (the lease stays and goes stale: the add-on turns unavailable). */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
  }

  /** Successful renewals so far. */
  get renewed(): number {
    return this.renewals;
  }

  private async run(): Promise<void> {
    const periodMs = (this.opts.leaseDurationSeconds ?? defaultAddonLeaseDurationSeconds) * 1000;
    while (!this.abort.signal.aborted) {
      const renewed = (await this.healthy()) && (await this.renew());
      const delay = renewed
        ? periodMs * (1 + jitterFactor * Math.random())
        : Math.min(periodMs, retryAfterFailureMs);
      await sleep(delay, undefined, { signal: this.abort.signal }).catch(() => {});
    }
  }

  private async healthy(): Promise<boolean> {
    for (const check of this.opts.healthChecks ?? []) {
      try {
        if (!(await check())) return false;
      } catch (err) {
        this.log.warn({ err: errorMessage(err) }, 'add-on health check failed: lease not renewed');
        return false;
      }
    }
    return true;
  }

  /** Create or renew the lease; whether it worked. */
  private async renew(): Promise<boolean> {
    const { addonName: name, namespace } = this.opts;
    const signal = this.abort.signal;
    const leaseDurationSeconds = this.opts.leaseDurationSeconds ?? defaultAddonLeaseDurationSeconds;
    try {
      for (let attempt = 1; ; attempt++) {
        const lease = await this.leases.get(name, namespace, { signal });
        const renewTime = formatMicroTime(new Date());
        try {
          if (lease) await this.leases.replace({ ...lease, spec: { ...lease.spec, renewTime } }, { signal });
          else
            await this.leases.create({
              metadata: { name, namespace },
              spec: { leaseDurationSeconds, renewTime },
            });
          break;
        } catch (err) {
          // someone else wrote or deleted it between our read and write: read again
          if (!(isConflict(err) || isNotFound(err)) || attempt >= 3) throw err;
        }
      }
      this.renewals++;
      return true;
    } catch (err) {
      if (!signal.aborted)
        this.log.warn({ err: errorMessage(err), namespace }, 'add-on lease renewal failed');
      return false;
    }
  }
}

// The klusterlet agent's host for built-in add-on agents (`tether agent --in-process-addons`): the
// agents of managed-serviceaccount and cluster-proxy run in this process instead of a Deployment
// each, every one with its own hub identity. The handshake is in src/api/addon-in-process.ts: an
// add-on runs here once the hub rendered its ConfigMap `<addon>-in-process` (so the hub deploys no
// Deployment for it) and the registration agent wrote its credential Secret `<addon>-hub-kubeconfig`
// in the same install namespace. A new certificate rotates the agent (or restarts it), a changed
// ConfigMap restarts it, either gone stops it. While an agent runs and is healthy, Lease `<addon>` in
// its install namespace is renewed (the add-on's Available, Lease mode, as the hub renders it).
//
// Owns: two informers on the managed cluster (the labelled ConfigMaps and the cluster's add-on
// registration Secrets, in every namespace) and the hosted agents. Must not touch the hub: the
// agents do, with their own credentials.
import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { addonHubKubeconfigSecretName, addonNameLabel } from '../../api/addon.ts';
import { inProcessAddonLabel, inProcessConfigMapName } from '../../api/addon-in-process.ts';
import { clusterNameLabel } from '../../api/cluster.ts';
import { errorMessage } from '../../errors.ts';
import {
  configMapResource,
  Informer,
  type KubeObject,
  ResourceClient,
  secretResource,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { registrationSecretLabel } from '../../registration/agent/addon/hub-kubeconfig.ts';
import { AddonLeaseUpdater } from '../sdk/agent.ts';
import { type AddonRunner, credentialOf, type HostedAddon, type HostedAddonInput } from './runner.ts';

interface DataObject extends KubeObject {
  data?: Record<string, string>;
}

export interface InProcessAddonHostOptions {
  clusterName: string;
  /** the klusterlet agent's credential on its own cluster */
  managedKubeConfig: KubeConfig;
  /** add-on name → how to run its agent */
  runners: ReadonlyMap<string, AddonRunner>;
  /** the Lease's period (the registration agent's --addon-lease-duration) */
  leaseDurationSeconds: number;
  log: Logger;
}

interface Running {
  /** the ConfigMap's namespace and data: a change restarts */
  configKey: string;
  /** the credential: a change rotates */
  credentialKey: string;
  agent: HostedAddon;
  lease: AddonLeaseUpdater;
}

export interface InProcessAddonHost {
  /** the add-ons running now */
  running(): string[];
  stop(): Promise<void>;
}

const digest = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex');

/** Starts watching; add-ons start as their ConfigMap and credential appear. */
export function startInProcessAddonHost(o: InProcessAddonHostOptions): InProcessAddonHost {
  const names = [...o.runners.keys()];
  const inSet = `in (${names.join(',')})`;
  const configMaps = new Informer<DataObject>(
    new ResourceClient<DataObject>(o.managedKubeConfig, configMapResource),
    {
      labelSelector: `${inProcessAddonLabel} ${inSet}`,
      name: 'in-process-addon-configmaps',
      log: o.log,
    },
  );
  const secrets = new Informer<DataObject>(
    new ResourceClient<DataObject>(o.managedKubeConfig, secretResource),
    {
      labelSelector: `${registrationSecretLabel}=true,${clusterNameLabel}=${o.clusterName},${addonNameLabel} ${inSet}`,
      name: 'in-process-addon-secrets',
      log: o.log,
    },
  );
  const running = new Map<string, Running>();
  let chain: Promise<void> = Promise.resolve();
  let stopped = false;

  /** The ConfigMap and credential an add-on would run from now, or why not. */
  const inputOf = (addon: string): HostedAddonInput | string => {
    const cm = configMaps
      .list()
      .find(
        (c) =>
          c.metadata?.name === inProcessConfigMapName(addon) &&
          c.metadata?.labels?.[inProcessAddonLabel] === addon,
      );
    if (!cm) return 'the hub renders no in-process ConfigMap for it';
    const namespace = cm.metadata?.namespace ?? '';
    const secret = secrets.getByName(addonHubKubeconfigSecretName(addon), namespace);
    if (!secret) return `waiting for Secret ${namespace}/${addonHubKubeconfigSecretName(addon)}`;
    try {
      return { namespace, config: cm.data ?? {}, credential: credentialOf(secret.data) };
    } catch (err) {
      return errorMessage(err);
    }
  };

  const stopOne = async (addon: string, why: string) => {
    const r = running.get(addon);
    if (!r) return;
    running.delete(addon);
    o.log.info({ addon, why }, 'stopping in-process add-on agent');
    await Promise.all([r.lease.stop(), r.agent.stop()]);
  };

  const reconcileOne = async (addon: string, runner: AddonRunner) => {
    const input = inputOf(addon);
    if (typeof input === 'string') {
      await stopOne(addon, input);
      return;
    }
    const configKey = digest([input.namespace, input.config]);
    const credentialKey = digest(input.credential);
    const current = running.get(addon);
    if (current?.configKey === configKey) {
      if (current.credentialKey === credentialKey) return;
      if (current.agent.rotate) {
        o.log.info({ addon }, 'new add-on certificate: rotating the in-process agent');
        await current.agent.rotate(input.credential);
        current.credentialKey = credentialKey;
        return;
      }
    }
    await stopOne(addon, current ? 'its configuration or credential changed' : 'not running');
    const agent = await runner(input);
    const lease = new AddonLeaseUpdater({
      managedKubeConfig: o.managedKubeConfig,
      addonName: addon,
      namespace: input.namespace,
      leaseDurationSeconds: o.leaseDurationSeconds,
      healthChecks: [() => agent.healthy()],
      log: o.log.child({ addon, loop: 'lease' }),
    });
    lease.start();
    running.set(addon, { configKey, credentialKey, agent, lease });
    o.log.info({ addon, namespace: input.namespace }, 'in-process add-on agent started');
  };

  const reconcile = () => {
    chain = chain.then(async () => {
      if (stopped || !configMaps.hasSynced() || !secrets.hasSynced()) return;
      for (const [addon, runner] of o.runners) {
        try {
          await reconcileOne(addon, runner);
        } catch (err) {
          o.log.error({ addon, err: errorMessage(err) }, 'cannot run the in-process add-on agent');
        }
      }
    });
  };
  const handlers = { add: reconcile, update: reconcile, delete: reconcile };
  configMaps.addHandlers(handlers);
  secrets.addHandlers(handlers);
  configMaps.start();
  secrets.start();
  // Events before both caches synced are skipped above: one pass once they have.
  const synced = async (): Promise<void> => {
    while (!stopped) {
      try {
        await Promise.all([configMaps.waitForSync(60_000), secrets.waitForSync(60_000)]);
        reconcile();
        return;
      } catch (err) {
        if (!stopped) o.log.warn({ err: errorMessage(err) }, 'in-process add-on caches not synced yet');
      }
    }
  };
  void synced();

  return {
    running: () => [...running.keys()],
    async stop() {
      stopped = true;
      await chain;
      await Promise.all([configMaps.stop(), secrets.stop()]);
      await Promise.all([...running.keys()].map((addon) => stopOne(addon, 'the agent stops')));
    },
  };
}

// The helloworld add-on, OCM's "write your own add-on" example in one file: its agent copies every
// ConfigMap of the cluster's namespace on the hub into the add-on's namespace on the managed cluster
// and renews Lease `helloworld` there (the add-on's health).
//
//   hub:      node examples/helloworld-addon/helloworld.ts manager --kubeconfig hub.kubeconfig [--image IMG]
//             [--disable-leader-election]   (default: replicas elect a leader on Lease
//             helloworld-addon-manager in open-cluster-management-hub)
//             [--agent-lease-duration S]   (the agents' --lease-duration; default theirs, OCM's 60 s)
//             It registers ClusterManagementAddOn `helloworld`; enable it on a cluster with a
//             ManagedClusterAddOn `helloworld` in the cluster namespace, or
//             `tether addon enable --names helloworld --clusters cluster1`.
//   managed:  node examples/helloworld-addon/helloworld.ts agent --hub-kubeconfig F --cluster-name C
//             [--managed-kubeconfig F] [--addon-namespace NS] [--lease-duration S]   (how often it
//             renews its Lease, default OCM's 60 s: set it to the registration agent's
//             --addon-lease-duration)
//
// The manager delivers the agent below (namespace, ServiceAccount, its RBAC, a Deployment running
// this file's `agent` from the tether image) to each cluster by ManifestWork, gets it a hub identity
// that may read ConfigMaps in its cluster namespace only (mounted from `helloworld-hub-kubeconfig`),
// and reports it Available while its lease is renewed.

import { parseArgs } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';
import { sharedInstallNamespace } from '../../src/addon/hub/deploy/work.ts';
import { AddonLeaseUpdater, hubKubeconfigVolume, loadAddonHubKubeconfig } from '../../src/addon/sdk/agent.ts';
import type { AddonRenderContext, AgentAddon } from '../../src/addon/sdk/types.ts';
import { defaultImage } from '../../src/install/image-ref.ts';
import {
  Informer,
  inClusterKubeConfig,
  type KubeObject,
  loadKubeconfig,
  ResourceClient,
  runController,
  splitKey,
} from '../../src/kube/index.ts';
import { logger } from '../../src/log.ts';

const addonName = 'helloworld';
const agentName = 'helloworld-agent';
/** Marks the managed cluster's copies (OCM's label), so only those are ever deleted. */
const syncedLabel = 'synced-from-hub';
/** Every namespace has one, published by its own cluster: never copied over the managed one. */
const skipped = new Set(['kube-root-ca.crt']);

/**
 * The add-on; its agent image is the AddOnDeploymentConfig variable `Image`, else `image`. With
 * `leaseDurationSeconds` its agents renew their lease that often (default theirs, OCM's 60 s).
 */
export function helloworld(options: { image?: string; leaseDurationSeconds?: number } = {}): AgentAddon {
  return {
    name: addonName,
    displayName: 'helloworld',
    description: 'copies the ConfigMaps of its cluster namespace on the hub to the managed cluster',
    supportedConfigs: [{ group: 'addon.open-cluster-management.io', resource: 'addondeploymentconfigs' }],
    registration: {
      hubPermissions: () => [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    },
    health: { type: 'Lease' },
    manifests: (ctx) =>
      agentManifests(
        ctx,
        ctx.variables.Image || options.image || defaultImage(),
        options.leaseDurationSeconds,
      ),
  };
}

export const helloworldAddon: AgentAddon = helloworld();

function agentManifests(
  ctx: AddonRenderContext,
  image: string,
  leaseDurationSeconds: number | undefined,
): KubernetesObject[] {
  const namespace = ctx.installNamespace;
  const rbac = 'rbac.authorization.k8s.io';
  const { volume, volumeMount } = hubKubeconfigVolume(addonName);
  const labels = { app: agentName };
  return [
    // other add-ons may share the namespace: it stays when this one is disabled
    sharedInstallNamespace(namespace),
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: agentName, namespace } },
    {
      apiVersion: `${rbac}/v1`,
      kind: 'Role',
      metadata: { name: agentName, namespace },
      rules: [
        {
          apiGroups: [''],
          resources: ['configmaps'],
          verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
        },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
      ],
    },
    {
      apiVersion: `${rbac}/v1`,
      kind: 'RoleBinding',
      metadata: { name: agentName, namespace },
      roleRef: { apiGroup: rbac, kind: 'Role', name: agentName },
      subjects: [{ kind: 'ServiceAccount', name: agentName, namespace }],
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: agentName, namespace, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: agentName,
            volumes: [volume],
            containers: [
              {
                name: agentName,
                image,
                command: ['node', '/app/examples/helloworld-addon/helloworld.ts', 'agent'],
                args: [
                  `--hub-kubeconfig=${volumeMount.mountPath}/kubeconfig`,
                  `--cluster-name=${ctx.cluster.metadata.name}`,
                  `--addon-namespace=${namespace}`,
                  ...(leaseDurationSeconds === undefined ? [] : [`--lease-duration=${leaseDurationSeconds}`]),
                ],
                volumeMounts: [volumeMount],
              },
            ],
          },
        },
      },
    },
  ] as KubernetesObject[];
}

// ---- the agent ----

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}
const configMaps = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true };

/** Copies the cluster's hub ConfigMaps to `addonNamespace` and renews the lease until stopped. */
export function startHelloworldAgent(opts: {
  hubKubeconfig: string;
  clusterName: string;
  managedKubeconfig?: string;
  addonNamespace: string;
  /** how often the lease is renewed (default OCM's 60 s) */
  leaseDurationSeconds?: number;
}): { stop(): Promise<void> } {
  const log = logger(agentName, { cluster: opts.clusterName });
  const managed = opts.managedKubeconfig ? loadKubeconfig(opts.managedKubeconfig) : inClusterKubeConfig();
  if (!managed) throw new Error('not in a pod: pass --managed-kubeconfig');
  const hubConfigMaps = new ResourceClient<ConfigMap>(loadAddonHubKubeconfig(opts.hubKubeconfig), configMaps);
  const copies = new ResourceClient<ConfigMap>(managed, configMaps);
  const namespace = opts.addonNamespace;
  const informer = new Informer(hubConfigMaps, { namespace: opts.clusterName, log });

  const controller = runController({
    name: agentName,
    informers: [informer],
    log,
    reconcile: async (key) => {
      const { name } = splitKey(key);
      if (skipped.has(name)) return;
      const source = informer.get(key);
      if (source) {
        const { data, binaryData } = source;
        const copy = { metadata: { name, namespace, labels: { [syncedLabel]: '' } }, data, binaryData };
        await copies.apply(copy, { fieldManager: agentName, force: true });
        log.info({ configmap: name, namespace }, 'ConfigMap copied');
      } else if ((await copies.get(name, namespace))?.metadata?.labels?.[syncedLabel] !== undefined) {
        await copies.delete(name, namespace, { ignoreNotFound: true });
      }
    },
  });
  const lease = new AddonLeaseUpdater({
    managedKubeConfig: managed,
    addonName,
    namespace,
    leaseDurationSeconds: opts.leaseDurationSeconds,
    log,
  });
  lease.start();
  return {
    async stop() {
      await Promise.all([controller.stop(), lease.stop()]);
    },
  };
}

// ---- command line ----

/** On SIGINT / SIGTERM: stop, then exit (idle pooled connections would keep the process alive). */
function untilSignal(stop: () => Promise<unknown>): void {
  const exit = () => void stop().finally(() => process.exit());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, exit);
}

/** A whole number of seconds ≥ 1 from `flag`, or undefined when the flag is not given. */
function seconds(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`${flag} must be a whole number of seconds ≥ 1, got "${value}"`);
  return n;
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: {
      kubeconfig: { type: 'string' },
      image: { type: 'string' },
      'disable-leader-election': { type: 'boolean' },
      'hub-kubeconfig': { type: 'string' },
      'cluster-name': { type: 'string' },
      'managed-kubeconfig': { type: 'string' },
      'addon-namespace': { type: 'string', default: 'default' },
      'agent-lease-duration': { type: 'string' },
      'lease-duration': { type: 'string' },
    },
  });
  if (command === 'manager') {
    const kubeconfig = values.kubeconfig ?? process.env.KUBECONFIG;
    if (!kubeconfig) throw new Error('manager: pass --kubeconfig (the hub) or set KUBECONFIG');
    // loaded here only: the agent (in its pod) does not need the hub side
    const { AddonManager } = await import('../../src/addon/sdk/manager.ts');
    // delivery, the agent's hub identity (registration, its Role, CSR approval) and health
    const manager = new AddonManager({
      hubKubeConfig: loadKubeconfig(kubeconfig),
      ...(values['disable-leader-election'] ? { leaderElection: false as const } : {}),
    });
    manager.add(
      helloworld({
        image: values.image,
        leaseDurationSeconds: seconds('--agent-lease-duration', values['agent-lease-duration']),
      }),
    );
    await manager.start();
    untilSignal(() => manager.stop());
  } else if (command === 'agent') {
    const hubKubeconfig = values['hub-kubeconfig'];
    const clusterName = values['cluster-name'];
    if (!hubKubeconfig || !clusterName) throw new Error('agent: pass --hub-kubeconfig and --cluster-name');
    const agent = startHelloworldAgent({
      hubKubeconfig,
      clusterName,
      managedKubeconfig: values['managed-kubeconfig'],
      addonNamespace: values['addon-namespace'],
      leaseDurationSeconds: seconds('--lease-duration', values['lease-duration']),
    });
    untilSignal(() => agent.stop());
  } else {
    throw new Error(
      'usage: helloworld.ts manager --kubeconfig F | agent --hub-kubeconfig F --cluster-name C',
    );
  }
}

if (import.meta.main) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error((err as Error).message);
    process.exitCode = 1;
  });
}

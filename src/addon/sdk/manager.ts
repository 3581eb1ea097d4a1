// AddonManager: runs any number of AgentAddons against a hub, as OCM's addon-framework
// AddonManager does. At start it makes sure each addon's ClusterManagementAddOn exists (created
// with the addon's display name, description and supported configs; an existing one only gains
// what it lacks, so a user's installStrategy and default configs stay; not with
// ensureClusterManagementAddOns false, for template add-ons whose CMA is the user's). Then, per addon and while
// this replica leads on Lease `<addon>-addon-manager` in the hub namespace, it runs the addon's
// deploy controller (src/addon/hub/deploy/controller.ts), its registration controller
// (src/addon/hub/registration/index.ts) and every extra per-addon controller it was given. Stopping stops the controllers and gives the Leases up.
import type { KubeConfig } from '@kubernetes/client-node';
import { type ClusterManagementAddOn, clusterManagementAddOnResource } from '../../api/addon.ts';
import { InvalidArgumentError } from '../../errors.ts';
import {
  isAlreadyExists,
  isConflict,
  type Leading,
  ResourceClient,
  type RunningControllers,
} from '../../kube/index.ts';
import { type Logger, logger } from '../../log.ts';
import { groupResourceKey } from '../hub/config/references.ts';
import { startAddonDeployController } from '../hub/deploy/controller.ts';
import { type AddonLeaderElectionOptions, replicaIdentity, runLeadingOrAlone } from '../hub/leading.ts';
import { startAddonRegistrationController } from '../hub/registration/index.ts';
import type { AgentAddon } from './types.ts';

/** Where the addon managers' Leases live by default (the other hub controllers' namespace). */
export const addonManagerLeaseNamespace = 'open-cluster-management-hub';

/** OCM's annotation naming who installs an addon; `addon-manager`: the hub's install strategy applies. */
const lifecycleAnnotation = 'addon.open-cluster-management.io/lifecycle';

/** The leader Lease of one addon's controllers. */
export function addonManagerLeaseName(addonName: string): string {
  return `${addonName}-addon-manager`;
}

/** Leader election per addon, on Lease `<addon>-addon-manager` (namespace default open-cluster-management-hub). */
export type AddonManagerLeaderElection = AddonLeaderElectionOptions;

/** What a per-addon controller gets when this replica starts leading for the addon. */
export interface AddonControllerContext {
  hubKubeConfig: KubeConfig;
  addon: AgentAddon;
  resyncPeriodMs?: number;
  log: Logger;
}

/** Starts one more controller per addon (e.g. addon registration); called while leading. */
export type AddonControllerFactory = (ctx: AddonControllerContext) => RunningControllers;

export interface AddonManagerOptions {
  hubKubeConfig: KubeConfig;
  log?: Logger;
  /** informers re-deliver every cached object this often (default 10 min) */
  resyncPeriodMs?: number;
  /** leader election per addon (default on); false runs the controllers at once, alone */
  leaderElection?: AddonManagerLeaderElection | false;
  /**
   * run each addon's registration controller (src/addon/hub/registration/index.ts: status.registrations,
   * RegistrationApplied, the agent's hub Role, CSR approval and signing); default true
   */
  registration?: boolean;
  /** more per-addon controllers next to the deploy and registration controllers */
  extraControllers?: AddonControllerFactory[];
  /**
   * create the addons' ClusterManagementAddOns or add what they lack (default true); false when
   * they are the user's and their existence is what runs the addon (template add-ons)
   */
  ensureClusterManagementAddOns?: boolean;
}

/**
 * The ClusterManagementAddOn an addon asks for: its meta, its supported configs, Manual install.
 * Only the addon's description is needed (`tether install hub-addon` has no AgentAddon).
 */
export function clusterManagementAddOnOf(
  addon: Pick<AgentAddon, 'name' | 'displayName' | 'description' | 'supportedConfigs'>,
): ClusterManagementAddOn {
  return {
    apiVersion: 'addon.open-cluster-management.io/v1alpha1',
    kind: 'ClusterManagementAddOn',
    metadata: { name: addon.name, annotations: { [lifecycleAnnotation]: 'addon-manager' } },
    spec: {
      addOnMeta: addOnMetaOf(addon),
      ...(addon.supportedConfigs?.length
        ? { supportedConfigs: addon.supportedConfigs.map((c) => ({ ...c })) }
        : {}),
      installStrategy: { type: 'Manual' },
    },
  };
}

function addOnMetaOf(addon: Pick<AgentAddon, 'displayName' | 'description'>) {
  return {
    ...(addon.displayName ? { displayName: addon.displayName } : {}),
    ...(addon.description ? { description: addon.description } : {}),
  };
}

/**
 * The merge patch that gives an existing ClusterManagementAddOn what the addon needs and it lacks:
 * addOnMeta fields not set, supported configs not listed. undefined: nothing to add.
 */
export function clusterManagementAddOnPatch(
  existing: ClusterManagementAddOn,
  addon: AgentAddon,
): Record<string, unknown> | undefined {
  const spec: Record<string, unknown> = {};
  const meta = existing.spec?.addOnMeta ?? {};
  const wantMeta = addOnMetaOf(addon);
  const missingMeta = Object.fromEntries(
    Object.entries(wantMeta).filter(([k]) => !meta[k as keyof typeof meta]),
  );
  if (Object.keys(missingMeta).length > 0) spec['addOnMeta'] = { ...meta, ...missingMeta };
  const have = existing.spec?.supportedConfigs ?? [];
  const haveKeys = new Set(have.map(groupResourceKey));
  const missing = (addon.supportedConfigs ?? []).filter((c) => !haveKeys.has(groupResourceKey(c)));
  if (missing.length > 0) spec['supportedConfigs'] = [...have, ...missing.map((c) => ({ ...c }))];
  return Object.keys(spec).length > 0 ? { spec } : undefined;
}

/** Runs AgentAddons: their ClusterManagementAddOns, and per addon its controllers while leading. */
export class AddonManager {
  private readonly opts: AddonManagerOptions;
  private readonly log: Logger;
  private readonly addons = new Map<string, AgentAddon>();
  private readonly running: Leading[] = [];
  private started = false;
  private stopped = false;

  constructor(opts: AddonManagerOptions) {
    this.opts = opts;
    this.log = opts.log ?? logger('addon-manager');
  }

  /** Register an addon; before start() only, one addon per name. */
  add(addon: AgentAddon): this {
    if (this.started) throw new InvalidArgumentError(`addon ${addon.name}: add() after start()`);
    if (!addon.name) throw new InvalidArgumentError('an addon needs a name');
    if (this.addons.has(addon.name)) throw new InvalidArgumentError(`addon ${addon.name} added twice`);
    this.addons.set(addon.name, addon);
    return this;
  }

  /**
   * Ensure the ClusterManagementAddOns, then campaign (or, without leader election, start the
   * controllers). Throws when a ClusterManagementAddOn cannot be written.
   */
  async start(): Promise<void> {
    if (this.started) throw new InvalidArgumentError('AddonManager started twice');
    this.started = true;
    if (this.opts.ensureClusterManagementAddOns ?? true)
      for (const addon of this.addons.values()) await this.ensureClusterManagementAddOn(addon);
    const election = this.opts.leaderElection;
    const identity = replicaIdentity(election);
    for (const addon of this.addons.values()) {
      if (this.stopped) return;
      const log = this.log.child({ addon: addon.name });
      const leading = await runLeadingOrAlone({
        kubeconfig: this.opts.hubKubeConfig,
        election,
        lease: { name: addonManagerLeaseName(addon.name), namespace: addonManagerLeaseNamespace },
        identity,
        log,
        start: () => this.startControllers(addon, log),
      });
      this.running.push(leading);
    }
  }

  /** True when this replica runs the controllers of every addon (leads each addon's Lease). */
  isLeader(): boolean {
    return this.running.length === this.addons.size && this.running.every((r) => r.isLeader());
  }

  /** Stop every controller (waiting for running reconciles) and give the Leases up. */
  async stop(): Promise<void> {
    this.stopped = true;
    const running = this.running.splice(0);
    await Promise.all(running.map((r) => r.stop()));
  }

  private startControllers(addon: AgentAddon, log: Logger): RunningControllers {
    const ctx: AddonControllerContext = {
      hubKubeConfig: this.opts.hubKubeConfig,
      addon,
      ...(this.opts.resyncPeriodMs !== undefined ? { resyncPeriodMs: this.opts.resyncPeriodMs } : {}),
      log,
    };
    const controllers: RunningControllers[] = [
      startAddonDeployController({
        hubKubeConfig: ctx.hubKubeConfig,
        addon,
        ...(ctx.resyncPeriodMs !== undefined ? { resyncPeriodMs: ctx.resyncPeriodMs } : {}),
        log: log.child({ controller: 'addon-deploy' }),
      }),
    ];
    if (this.opts.registration ?? true) {
      controllers.push(
        startAddonRegistrationController({ ...ctx, log: log.child({ controller: 'addon-registration' }) }),
      );
    }
    for (const factory of this.opts.extraControllers ?? []) controllers.push(factory(ctx));
    return { stop: async () => void (await Promise.all(controllers.map((c) => c.stop()))) };
  }

  private async ensureClusterManagementAddOn(addon: AgentAddon): Promise<void> {
    const client = new ResourceClient<ClusterManagementAddOn>(
      this.opts.hubKubeConfig,
      clusterManagementAddOnResource,
    );
    for (let attempt = 0; ; attempt++) {
      const existing = await client.get(addon.name);
      try {
        if (!existing) {
          await client.create(clusterManagementAddOnOf(addon));
          this.log.info({ addon: addon.name }, 'ClusterManagementAddOn created');
          return;
        }
        const patch = clusterManagementAddOnPatch(existing, addon);
        if (!patch) return;
        await client.patchMerge(addon.name, {
          ...patch,
          metadata: { resourceVersion: existing.metadata.resourceVersion },
        });
        return;
      } catch (err) {
        if ((isAlreadyExists(err) || isConflict(err)) && attempt < 5) continue;
        throw err;
      }
    }
  }
}

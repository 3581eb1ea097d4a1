// What no ManifestWork may touch, whichever hub sends it: the work agents' own records
// (AppliedManifestWorks) and the namespaces that hold an agent's Secrets (labelled
// agent.tether.dev/agent-namespace=true by whoever makes them: `tether join`, the agent itself).
// One cluster may run one agent per hub (`tether join --agent-namespace`); each agent applies what
// its hub sends with cluster-admin rights, so without this hub A's work could read, replace or delete
// hub B's agent, its hub credential or its AppliedManifestWorks (and with them B's applied
// resources). Every strategy is refused, ReadOnly too (status feedback would carry what it reads).
//
// It is checked against the live namespace, not the manifest, so a work cannot first strip the
// label: a Namespace manifest naming a labelled namespace is refused like its contents. Nor may a
// work set the label: hub A could otherwise label a namespace hub B's works use and so stop them.
// Lookups are cached for a few seconds (a work with many manifests in one namespace costs one GET).
//
// One exception, for hosted add-ons: a hosted agent's namespace on its hosting cluster (`tether join
// --mode hosted`) carries the hash of the hub that agent is joined to (annotation
// agent.tether.dev/hub-hash, set by the installer). The hosting cluster's own work agent of that
// same hub may apply there — the hub deploys the hosted cluster's add-on agents next to its
// klusterlet, as OCM does — and that hub already holds everything in it. A work agent of any other
// hub sees a different hash and is refused as before.
import type { KubeConfig } from '@kubernetes/client-node';
import { agentHubHashAnnotation, agentNamespaceLabel } from '../../api/index.ts';
import { type KubeObject, namespaceResource, ResourceClient } from '../../kube/index.ts';

/** The resource a manifest targets, as discovery resolved it. */
export interface BoundaryTarget {
  group: string;
  resource: string;
  /** its namespace; undefined when cluster-scoped */
  namespace?: string;
  name: string;
  /** the manifest's labels (a Namespace's say whether the work would label it an agent's) */
  labels?: Record<string, string>;
}

const cacheTtlMs = 5_000;
const cacheMax = 1_000;

export class AgentBoundary {
  private readonly namespaces: ResourceClient<KubeObject>;
  /** namespace → whether it is an agent's, and when that was read */
  private readonly cache = new Map<string, { isAgent: boolean; at: number }>();

  /** this work agent's hub (its AppliedManifestWork hub hash) */
  private readonly hubHash: string | undefined;

  constructor(managed: KubeConfig, hubHash?: string) {
    this.namespaces = new ResourceClient<KubeObject>(managed, namespaceResource);
    this.hubHash = hubHash;
  }

  /** Why `t` may not be touched by a ManifestWork; undefined when it may. */
  async refusal(t: BoundaryTarget): Promise<string | undefined> {
    if (t.group === 'work.open-cluster-management.io' && t.resource === 'appliedmanifestworks')
      return 'AppliedManifestWorks are the work agents’ own records: no ManifestWork may write or read them';
    const isNamespace = t.group === '' && t.resource === 'namespaces';
    if (isNamespace && t.labels?.[agentNamespaceLabel] !== undefined)
      return `the label ${agentNamespaceLabel} is set only by tether's installer and agents: no ManifestWork may set it`;
    const namespace = t.namespace ?? (isNamespace ? t.name : undefined);
    if (namespace === undefined || !(await this.isAgentNamespace(namespace))) return undefined;
    return `namespace ${namespace} holds an agent's Secrets (label ${agentNamespaceLabel}): no ManifestWork may touch it or what is in it`;
  }

  private async isAgentNamespace(name: string): Promise<boolean> {
    const now = Date.now();
    const cached = this.cache.get(name);
    if (cached && now - cached.at < cacheTtlMs) return cached.isAgent;
    const ns = await this.namespaces.get(name);
    const sameHubHosted =
      this.hubHash !== undefined && ns?.metadata?.annotations?.[agentHubHashAnnotation] === this.hubHash;
    const isAgent = ns?.metadata?.labels?.[agentNamespaceLabel] === 'true' && !sameHubHosted;
    if (this.cache.size >= cacheMax) this.cache.clear();
    this.cache.set(name, { isAgent, at: now });
    return isAgent;
  }
}

// One managed cluster, one agent per hub (issue 27, "several hubs"): each agent applies what its own
// hub sends with cluster-admin rights on the cluster, so hub A's works must not reach hub B's agent.
// Here hub A's agent is a real work agent on cluster1; hub B's agent namespace is made the way
// `tether join --bootstrap-only --agent-namespace` makes it (labelled agent.tether.dev/agent-namespace)
// and holds B's hub credential, and B's agent keeps an AppliedManifestWork under B's hub hash.
// Hub A's works that write into B's namespace, change that namespace, read B's credential
// (ReadOnly with status feedback) or write B's AppliedManifestWork are each refused on their own
// manifest (Applied False, the reason named), while the rest of the same work applies; B's objects
// stay as they were. A hosted agent's namespace (`tether join --mode hosted`) carries the hash of
// the hub that agent is joined to: that hub's works may deploy its hosted add-ons there, no other
// hub's may.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AppliedManifestWork,
  agentHubHashAnnotation,
  agentNamespaceLabel,
  type Manifest,
} from '../../src/api/index.ts';
import type { KubeObject } from '../../src/kube/index.ts';
import { writeBootstrapSecret } from '../../src/registration/bootstrap.ts';
import {
  appliedWorks,
  configMap,
  hubHash,
  hubWorks,
  kinds,
  managed,
  manifestCondition,
  onManaged,
  setUpWorkCluster,
  unique,
  type WorkCluster,
  waitFor,
} from './fixtures/work.ts';

let hubA: WorkCluster;
const hubBNamespace = unique('hub-b-agent');
const hubBApplied = `${'b'.repeat(64)}-${unique('hub-b-work')}`;
const hostedOfA = unique('klusterlet-of-a');
const hostedOfB = unique('klusterlet-of-b');

beforeAll(async () => {
  hubA = await setUpWorkCluster('boundary');
  await hubA.startAgent();
  // hub B's agent, as `tether join --bootstrap-only --agent-namespace` and the agent leave it
  await writeBootstrapSecret(managed, 'apiVersion: v1\nkind: Config\n', hubBNamespace);
  await onManaged(kinds.secret).create({
    metadata: { name: 'hub-kubeconfig-secret', namespace: hubBNamespace },
    stringData: { kubeconfig: 'hub B credential', 'cluster-name': 'shared' },
  } as KubeObject);
  await appliedWorks.create({
    apiVersion: 'work.open-cluster-management.io/v1',
    kind: 'AppliedManifestWork',
    metadata: { name: hubBApplied },
    spec: { hubHash: 'b'.repeat(64), manifestWorkName: 'hub-b-work', agentID: 'hub-b-agent' },
  } as AppliedManifestWork);
});

afterAll(async () => {
  await hubA?.cleanup();
  await appliedWorks.delete(hubBApplied, undefined, { ignoreNotFound: true });
  for (const ns of [hubBNamespace, hostedOfA, hostedOfB])
    await onManaged(kinds.namespace).delete(ns, undefined, { ignoreNotFound: true });
});

const refusedWith = async (work: string, ordinal: number, reason: RegExp) =>
  hubA.waitForWork(work, `manifest ${ordinal} refused`, (w) => {
    const applied = manifestCondition(w, ordinal, 'Applied');
    return applied?.status === 'False' && reason.test(applied.message ?? '') ? applied : undefined;
  });

describe("hub A's works and hub B's agent on the same cluster", () => {
  it("hub A's work cannot write into hub B's agent namespace or relabel it; the rest of the work applies", async () => {
    const ours = await hubA.managedNamespace('boundary-ours');
    const overwrite: Manifest = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'hub-kubeconfig-secret', namespace: hubBNamespace },
      stringData: { kubeconfig: 'taken over by hub A' },
    };
    const relabel: Manifest = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: hubBNamespace, labels: { [agentNamespaceLabel]: 'false' } },
    };
    const plant = configMap(hubBNamespace, 'planted');
    const work = unique('boundary-write');
    await hubA.createWork(work, [overwrite, relabel, plant, configMap(ours, 'fine')]);
    for (const ordinal of [0, 2]) {
      const applied = await refusedWith(work, ordinal, /holds an agent's Secrets/);
      expect(applied.message).toContain(hubBNamespace);
    }
    // relabelling names the label: no work may set it, to any value
    await refusedWith(work, 1, /is set only by tether's installer and agents/);
    await hubA.waitForWork(work, 'the manifest in its own namespace applied', (w) =>
      manifestCondition(w, 3, 'Applied')?.status === 'True' ? true : undefined,
    );
    const secret = await onManaged<KubeObject & { data?: Record<string, string> }>(kinds.secret).get(
      'hub-kubeconfig-secret',
      hubBNamespace,
    );
    expect(Buffer.from(secret?.data?.kubeconfig ?? '', 'base64').toString()).toBe('hub B credential');
    const ns = await onManaged(kinds.namespace).get(hubBNamespace);
    expect(ns?.metadata?.labels?.[agentNamespaceLabel]).toBe('true');
    expect(await onManaged(kinds.configMap).get('planted', hubBNamespace)).toBeUndefined();
  });

  it("hub A's work cannot read hub B's agent credential through status feedback", async () => {
    const work = unique('boundary-read');
    await hubA.createWork(
      work,
      [
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'hub-kubeconfig-secret', namespace: hubBNamespace },
        },
      ],
      {
        manifestConfigs: [
          {
            resourceIdentifier: {
              group: '',
              resource: 'secrets',
              name: 'hub-kubeconfig-secret',
              namespace: hubBNamespace,
            },
            updateStrategy: { type: 'ReadOnly' },
            feedbackRules: [
              { type: 'JSONPaths', jsonPaths: [{ name: 'credential', path: '.data.kubeconfig' }] },
            ],
          },
        ],
      },
    );
    await refusedWith(work, 0, /holds an agent's Secrets/);
    const w = await hubA.getWork(work);
    const feedback = JSON.stringify(w?.status?.resourceStatus?.manifests ?? []);
    expect(feedback).not.toContain(Buffer.from('hub B credential').toString('base64'));
  });

  it("hub A's work cannot label a namespace as an agent's, which would stop hub B's works there", async () => {
    const hubBWorkloads = await hubA.managedNamespace('hub-b-workloads');
    const work = unique('boundary-label');
    await hubA.createWork(work, [
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: hubBWorkloads, labels: { [agentNamespaceLabel]: 'true' } },
      },
    ]);
    await refusedWith(work, 0, /is set only by tether's installer and agents/);
    const ns = await onManaged(kinds.namespace).get(hubBWorkloads);
    expect(ns?.metadata?.labels?.[agentNamespaceLabel]).toBeUndefined();
  });

  it("hub A's work cannot write or delete hub B's AppliedManifestWorks", async () => {
    const work = unique('boundary-amw');
    await hubA.createWork(work, [
      {
        apiVersion: 'work.open-cluster-management.io/v1',
        kind: 'AppliedManifestWork',
        metadata: { name: hubBApplied },
        spec: { hubHash: 'b'.repeat(64), manifestWorkName: 'hub-b-work', agentID: 'hub-a-was-here' },
      },
    ]);
    await refusedWith(work, 0, /AppliedManifestWorks are the work agents/);
    // deleting the work (which would remove what it applied) leaves B's record alone
    await hubWorks.delete(work, hubA.name);
    await waitFor('the work removed', async () => !(await hubA.getWork(work)));
    const record = await appliedWorks.get(hubBApplied);
    expect(record?.spec?.agentID).toBe('hub-b-agent');
  });

  it("hub A's hosting work deploys into a hosted agent namespace of hub A's, never into one of hub B's", async () => {
    // as `tether join --mode hosted` makes them: labelled, annotated with the joined hub's hash
    for (const [name, hash] of [
      [hostedOfA, hubHash],
      [hostedOfB, 'b'.repeat(64)],
    ] as const) {
      await onManaged(kinds.namespace).create({
        metadata: {
          name,
          labels: { [agentNamespaceLabel]: 'true' },
          annotations: { [agentHubHashAnnotation]: hash },
        },
      } as KubeObject);
    }
    const work = unique('boundary-hosted');
    await hubA.createWork(work, [configMap(hostedOfA, 'hosted-addon'), configMap(hostedOfB, 'hosted-addon')]);
    await hubA.waitForWork(work, "hub A's hosted namespace takes it", (w) =>
      manifestCondition(w, 0, 'Applied')?.status === 'True' ? true : undefined,
    );
    const refused = await refusedWith(work, 1, /holds an agent's Secrets/);
    expect(refused.message).toContain(hostedOfB);
    expect(await onManaged(kinds.configMap).get('hosted-addon', hostedOfA)).toBeDefined();
    expect(await onManaged(kinds.configMap).get('hosted-addon', hostedOfB)).toBeUndefined();
  });
});

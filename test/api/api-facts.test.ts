// tether's CRDs held against OCM's published API (ocm-api-facts.json, a copy of
// ../shared/ocm/api-facts.json taken from open-cluster-management-io/ocm's CRD manifests): group,
// versions, scope, names, printer columns and every schema field with its type, required, enum,
// default, limits, x-kubernetes-* extensions and CEL rules. Any difference not in the allow-list
// below fails, one line per difference; an allow-list entry that no longer matches anything fails
// too (except `pending` ones), so the list only ever says what is still true.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { hubCrdManifests, managedCrdManifests } from '../../src/api/index.ts';
import {
  type Allowed,
  type ApiFacts,
  compareWithFacts,
  covers,
  crdPath,
  type Difference,
  formatDifference,
} from './api-facts-diff.ts';

const facts = JSON.parse(readFileSync(new URL('./ocm-api-facts.json', import.meta.url), 'utf8')) as ApiFacts;

/**
 * Differences tether keeps on purpose. Each entry: what differs and why (a tether extension or a
 * deliberate omission). Copy these into the README's compatibility section when they change.
 */
const allowed: Allowed[] = [
  {
    // api-facts.json `skipped`: OCM publishes no CRD YAML for it, so there is nothing to hold it
    // against; its schema follows the Go types of managed-serviceaccount (v1beta1 stored, v1alpha1
    // served) and test/api/crds.test.ts checks it structurally.
    kind: 'ManagedServiceAccount',
    path: crdPath,
    aspect: 'no facts',
    why: 'no OCM CRD manifest to compare with (only Go types are published)',
  },
  {
    // OCM's multicloud-integrations kind (not in OCM's core hub manifests that api-facts.json holds):
    // its fields follow that project's Go types; test/placement/argocd checks what the controller reads.
    kind: 'GitOpsCluster',
    path: crdPath,
    aspect: 'unknown to OCM',
    why: 'Argo CD registration kind from OCM multicloud-integrations, outside the core API facts',
  },
  {
    // OCM's own kind (addon.open-cluster-management.io/v1alpha1), but absent from the hub manifests
    // api-facts.json was taken from; its schema follows OCM's Go types (src/api/addon-template.ts).
    kind: 'AddOnTemplate',
    path: crdPath,
    aspect: 'unknown to OCM',
    why: 'OCM serves it, but the recorded API facts predate it; schema from OCM’s Go types',
  },
  {
    // SIG Multicluster's cluster inventory API (multicluster.x-k8s.io), not an OCM kind.
    kind: 'ClusterProfile',
    path: crdPath,
    aspect: 'unknown to OCM',
    why: "SIG Multicluster's ClusterProfile, kept per ManagedCluster; not part of OCM's API",
  },
  // Issue 23: what a managed cluster writes with its own identity is bounded (src/api/peer-limits.ts),
  // so an oversized write is refused with 422 naming the field; each limit is far above what OCM's
  // agents write.
  ...(['maxItems', 'maxLength'] as const).flatMap((aspect): Allowed[] => [
    {
      kind: 'ManagedCluster',
      path: 'status.*',
      aspect,
      why: 'peer limit: a cluster writes its own status',
    },
    {
      kind: 'ManifestWork',
      path: 'status.*',
      aspect,
      why: "peer limit: the cluster's work agent writes the status",
    },
    {
      kind: 'ManagedClusterAddOn',
      path: 'status.*',
      aspect,
      why: 'peer limit: a cluster writes its add-ons’ status',
    },
  ]),
  {
    kind: 'ManagedCluster',
    path: 'spec.managedClusterClientConfigs*',
    aspect: '*',
    why: 'peer limit: the agent writes its client configs (maxItems, url and caBundle maxLength)',
  },
];

/**
 * PENDING — differences someone is removing right now, listed here so this test stays green in
 * between; each entry names who and why. A stale pending entry only warns. Empty: the ManifestWork
 * and addon fixes of issue 13 have landed.
 */
const pending: Allowed[] = [];

/**
 * The CRDs as `tether hub` installs them in a cluster: the addon kinds convert through the hub's
 * conversion webhook Service, as OCM's cluster-manager does.
 */
const served = () => [
  ...hubCrdManifests({
    addonConversionWebhook: {
      service: {
        namespace: 'open-cluster-management-hub',
        name: 'cluster-manager-addon-webhook',
        port: 9443,
      },
      caBundle: Buffer.from('CA').toString('base64'),
    },
  }),
  ...managedCrdManifests(),
];

describe("tether's CRDs against OCM's published API", () => {
  const differences = compareWithFacts(facts, served());

  it('differ from OCM only where the allow-list says why', () => {
    const unexplained = differences.filter((d) => ![...allowed, ...pending].some((a) => covers(a, d)));
    expect(unexplained.map(formatDifference)).toEqual([]);
  });

  it('keep no allow-list entry that no longer matches a difference', () => {
    const stale = allowed.filter((a) => !differences.some((d) => covers(a, d)));
    expect(stale.map((a) => `${a.kind} ${a.path} ${a.aspect}: ${a.why}`)).toEqual([]);
    const stalePending = pending.filter((a) => !differences.some((d) => covers(a, d)));
    for (const a of stalePending) console.warn(`pending entry can go: ${a.kind} ${a.path} ${a.aspect}`);
  });

  it('compare every field: a field dropped from a tether schema is reported', () => {
    const crds = served();
    const managedCluster = crds.find((c) => c.spec.names.kind === 'ManagedCluster');
    const status = managedCluster?.spec.versions[0]?.schema.openAPIV3Schema.properties?.['status'];
    delete status?.properties?.['managedNamespaces'];
    const lines = compareWithFacts(facts, crds).map(formatDifference);
    expect(lines).toContain('ManagedCluster v1 status.managedNamespaces field: OCM "array", tether (none)');
  });

  it('compare names and limits: an extra short name or a changed maxLength is reported', () => {
    const crds = served();
    const claim = crds.find((c) => c.spec.names.kind === 'ClusterClaim');
    if (!claim) throw new Error('no ClusterClaim CRD');
    claim.spec.names.shortNames = ['cc'];
    const value = claim.spec.versions[0]?.schema.openAPIV3Schema.properties?.['spec']?.properties?.['value'];
    if (value) value.maxLength = 2048;
    const lines = compareWithFacts(facts, crds).map(formatDifference);
    expect(lines).toEqual(
      expect.arrayContaining([
        'ClusterClaim (crd) shortNames: OCM [], tether ["cc"]',
        'ClusterClaim v1alpha1 spec.value maxLength: OCM 1024, tether 2048',
      ]),
    );
  });

  it('compare conversion: addon CRDs installed without the webhook are reported', () => {
    const lines = compareWithFacts(facts, [...hubCrdManifests(), ...managedCrdManifests()]).map(
      formatDifference,
    );
    expect(lines).toEqual(
      expect.arrayContaining([
        'ClusterManagementAddOn (crd) conversion: OCM "Webhook", tether "None"',
        'ManagedClusterAddOn (crd) conversion: OCM "Webhook", tether "None"',
      ]),
    );
  });

  it('every allowed difference names why', () => {
    const explained = (d: Difference) => [...allowed, ...pending].find((a) => covers(a, d))?.why ?? '';
    expect(differences.filter((d) => explained(d).trim() === '').map(formatDifference)).toEqual([]);
  });
});

// The CRD sets tether installs (hub and managed side), as @kubernetes/client-node models and as
// plain JSON. Owns the translation between the two forms; the schemas themselves belong to the
// group modules.
//
// Why two forms: client-node's serializer renames model keys on typed schema nodes
// (`x_kubernetes_preserve_unknown_fields` → `x-kubernetes-preserve-unknown-fields`, `_default` →
// `default`, …) and silently drops keys it does not know, but it passes `any`-typed keywords —
// `items`, `additionalProperties`, `default`, `enum` — through untouched. A model whose `items`
// used model names would reach the server as unknown fields and be pruned. So the model form keeps
// those subtrees in wire form, and hands a correct body to ApiextensionsV1Api and
// KubernetesObjectApi. Anything that does not go through that serializer (kubectl, YAML files,
// raw fetch) must use the manifest form instead.

import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { V1JSONSchemaProps } from '@kubernetes/client-node';
import {
  type AddonConversionWebhook,
  addOnDeploymentConfigCrd,
  type CrdConversion,
  clusterManagementAddOnCrd,
  managedClusterAddOnCrd,
} from './addon-crds.ts';
import { addOnTemplateCrd } from './addon-template.ts';
import { managedServiceAccountCrd } from './authentication.ts';
import { clusterClaimCrd, managedClusterCrd } from './cluster.ts';
import { clusterProfileCrd } from './clusterprofile.ts';
import { gitOpsClusterCrd } from './gitops.ts';
import { placementCrdManifests } from './placement-crds.ts';
import type { CrdManifest, JsonSchema } from './schema.ts';
import { appliedManifestWorkCrd, manifestWorkCrd } from './work-crds.ts';

/** Where the hub's CRDs send conversions; see hubCrdManifests. */
export interface HubCrdOptions {
  /**
   * The addon conversion webhook (tether hub's `--webhook-*` server): ClusterManagementAddOn and
   * ManagedClusterAddOn then convert v1alpha1 ⇄ v1beta1 through it, as OCM's hub does. Without it
   * both versions are served with conversion None, like the CRDs of OCM's API module: v1beta1
   * reads and writes then see v1alpha1's fields under a v1beta1 apiVersion.
   */
  addonConversionWebhook?: AddonConversionWebhook;
}

/** CRDs served by the hub apiserver, as plain JSON (wire form). */
export function hubCrdManifests(opts: HubCrdOptions = {}): CrdManifest[] {
  const webhook = opts.addonConversionWebhook;
  return [
    managedClusterCrd(),
    manifestWorkCrd(),
    clusterManagementAddOnCrd(webhook),
    managedClusterAddOnCrd(webhook),
    addOnDeploymentConfigCrd(),
    addOnTemplateCrd(),
    managedServiceAccountCrd(),
    ...placementCrdManifests(),
    // Argo CD registration (OCM's multicloud-integrations kind) and SIG Multicluster's cluster
    // inventory, kept by the placement hub (src/placement/argocd, src/placement/clusterprofile)
    gitOpsClusterCrd(),
    clusterProfileCrd(),
  ];
}

/** CRDs served by each managed cluster's apiserver, as plain JSON (wire form). */
export function managedCrdManifests(): CrdManifest[] {
  return [clusterClaimCrd(), appliedManifestWorkCrd()];
}

/** Hub CRDs as client-node models, for ApiextensionsV1Api / KubernetesObjectApi. */
export function hubCrds(opts: HubCrdOptions = {}): V1CustomResourceDefinition[] {
  return hubCrdManifests(opts).map(toCustomResourceDefinition);
}

/** Managed-cluster CRDs as client-node models, for ApiextensionsV1Api / KubernetesObjectApi. */
export function managedCrds(): V1CustomResourceDefinition[] {
  return managedCrdManifests().map(toCustomResourceDefinition);
}

/** Converts a wire-form CRD into the client-node model its serializer turns back into the same JSON. */
export function toCustomResourceDefinition(manifest: CrdManifest): V1CustomResourceDefinition {
  const { names } = manifest.spec;
  const conversion = (manifest.spec as { conversion?: CrdConversion }).conversion;
  return {
    apiVersion: manifest.apiVersion,
    kind: manifest.kind,
    metadata: { name: manifest.metadata.name },
    spec: {
      group: manifest.spec.group,
      names: { ...names, ...(names.shortNames ? { shortNames: [...names.shortNames] } : {}) },
      scope: manifest.spec.scope,
      // CustomResourceConversion's model attributes are spelled as on the wire.
      ...(conversion ? { conversion: structuredClone(conversion) } : {}),
      versions: manifest.spec.versions.map((v) => ({
        name: v.name,
        served: v.served,
        storage: v.storage,
        ...(v.deprecated ? { deprecated: true } : {}),
        schema: { openAPIV3Schema: toSchemaProps(v.schema.openAPIV3Schema) },
        ...(v.subresources ? { subresources: structuredClone(v.subresources) } : {}),
        ...(v.additionalPrinterColumns
          ? { additionalPrinterColumns: v.additionalPrinterColumns.map((c) => ({ ...c })) }
          : {}),
      })),
    },
  };
}

// Model attribute per wire keyword, read from client-node itself so a renamed attribute in a
// future release fails loudly here instead of producing a schema the server silently prunes.
const schemaAttributes = new Map(V1JSONSchemaProps.getAttributeTypeMap().map((a) => [a.baseName, a]));

function toSchemaProps(wire: JsonSchema): V1JSONSchemaProps {
  const model: Record<string, unknown> = {};
  for (const [keyword, value] of Object.entries(wire)) {
    const attribute = schemaAttributes.get(keyword);
    if (!attribute) throw new Error(`JSON schema keyword ${keyword} has no V1JSONSchemaProps attribute`);
    model[attribute.name] = toAttributeValue(value, attribute.type);
  }
  return model as V1JSONSchemaProps;
}

function toAttributeValue(value: unknown, type: string): unknown {
  switch (type) {
    case 'V1JSONSchemaProps':
      return toSchemaProps(value as JsonSchema);
    case 'Array<V1JSONSchemaProps>':
      return (value as JsonSchema[]).map(toSchemaProps);
    case '{ [key: string]: V1JSONSchemaProps; }':
      return Object.fromEntries(
        Object.entries(value as Record<string, JsonSchema>).map(([k, v]) => [k, toSchemaProps(v)]),
      );
    default:
      // Scalars, and `any`-typed keywords the serializer sends verbatim: keep the wire form.
      return structuredClone(value);
  }
}

// Installs CustomResourceDefinitions with server-side apply and waits until the apiserver reports
// them Established (their resources are served from then on).
import {
  ApiextensionsV1Api,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { canonicalJson } from '../kube/canonical-json.ts';
import {
  applyObjects,
  customResourceDefinitionResource,
  type KubeObject,
  ResourceClient,
} from '../kube/index.ts';
import { pollUntil } from '../wait.ts';

export const CRD_FIELD_MANAGER = 'tether';

export async function installCrds(
  kc: KubeConfig,
  crds: V1CustomResourceDefinition[],
  timeoutMs = 60_000,
): Promise<void> {
  await replaceForeignConversions(kc, crds);
  await applyObjects(
    kc,
    crds.map((crd) => ({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', ...crd })),
    CRD_FIELD_MANAGER,
  );
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  for (const crd of crds) {
    const name = crd.metadata?.name ?? '';
    await pollUntil(
      async () => {
        const cur = await ext.readCustomResourceDefinition({ name });
        return cur.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
      },
      { timeoutMs, intervalMs: 100, description: `CRD ${name} to be Established` },
    );
  }
}

type Json = Record<string, unknown>;
const isJsonObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON merge patch turning `current` into `wanted` (keys only `current` has become null). */
function mergePatch(current: unknown, wanted: unknown): unknown {
  if (!isJsonObject(current) || !isJsonObject(wanted)) return wanted;
  const patch: Json = {};
  for (const key of Object.keys(current)) if (!(key in wanted)) patch[key] = null;
  for (const [key, value] of Object.entries(wanted)) patch[key] = mergePatch(current[key], value);
  return patch;
}

/**
 * Server-side apply merges a CRD's conversion field by field, so a conversion someone else set
 * (kubectl patch, another field manager) would keep its webhook url next to our service, which the
 * API server rejects. Where the installed conversion differs from ours, it is replaced first.
 */
async function replaceForeignConversions(kc: KubeConfig, crds: V1CustomResourceDefinition[]): Promise<void> {
  const client = new ResourceClient<KubeObject & { spec?: Json }>(kc, customResourceDefinitionResource);
  for (const crd of crds) {
    const name = crd.metadata?.name ?? '';
    const wanted = crd.spec.conversion ?? { strategy: 'None' };
    const current = (await client.get(name))?.spec?.['conversion'];
    if (current === undefined || canonicalJson(current) === canonicalJson(wanted)) continue;
    await client.patchMerge(name, { spec: { conversion: mergePatch(current, wanted) } }, undefined, {
      fieldManager: CRD_FIELD_MANAGER,
    });
  }
}

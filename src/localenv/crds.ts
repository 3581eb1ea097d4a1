// Installs CustomResourceDefinitions with server-side apply and waits until the apiserver reports
// them Established (their resources are served from then on).
import {
  ApiextensionsV1Api,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { applyObjects } from '../kube/index.ts';
import { pollUntil } from '../wait.ts';

export const CRD_FIELD_MANAGER = 'tether';

export async function installCrds(
  kc: KubeConfig,
  crds: V1CustomResourceDefinition[],
  timeoutMs = 60_000,
): Promise<void> {
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

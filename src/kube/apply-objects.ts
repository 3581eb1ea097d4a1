// Server-side apply of whole objects, in order, owned by one field manager and forcing ownership
// (tether owns what it installs): CRDs, admission policies, the bootstrap identity, cluster DNS,
// what `tether init` / `tether join` install. Errors are client-node's, unchanged.
import {
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
} from '@kubernetes/client-node';

export async function applyObjects(
  kc: KubeConfig,
  objects: readonly KubernetesObject[],
  fieldManager: string,
): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  for (const obj of objects) {
    await api.patch(obj, undefined, undefined, fieldManager, true, PatchStrategy.ServerSideApply);
  }
}

// Applying, printing and removing what `tether init` / `tether join` install: server-side apply in
// list order (namespaces and CRDs first), YAML for `--dry-run` / `--output-file` (clusteradm's
// habit), deletion in reverse order for `tether unjoin`. Secrets are printed as they would be
// applied: `--dry-run` output holds the bootstrap token and keys, like clusteradm's.
import { type KubeConfig, type KubernetesObject, KubernetesObjectApi } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { applyObjects, isNotFound } from '../kube/index.ts';

export const FIELD_MANAGER = 'tether-install';

export function toYaml(objects: KubernetesObject[]): string {
  return objects.map((o) => `---\n${stringify(o, { lineWidth: 0 })}`).join('');
}

export function describe(o: KubernetesObject): string {
  const ns = o.metadata?.namespace ? `${o.metadata.namespace}/` : '';
  return `${o.kind} ${ns}${o.metadata?.name}`;
}

/** Server-side applies each object in order; a failure names the object and the apiserver's reason. */
export async function applyAll(kc: KubeConfig, objects: KubernetesObject[]): Promise<void> {
  for (const obj of objects) {
    try {
      await applyObjects(kc, [obj], FIELD_MANAGER);
    } catch (err) {
      const e = err as { code?: number; body?: unknown; message?: string };
      let reason = e.message ?? String(err);
      try {
        const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
        if (body && typeof body === 'object' && 'message' in body) reason = String(body.message);
      } catch {}
      throw new Error(`cannot apply ${describe(obj)}: ${reason}`);
    }
  }
}

/** Deletes each object in reverse order; returns what was deleted (absent objects are skipped). */
export async function deleteAll(kc: KubeConfig, objects: KubernetesObject[]): Promise<string[]> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const deleted: string[] = [];
  for (const obj of [...objects].reverse()) {
    try {
      await api.delete(obj, undefined, undefined, undefined, undefined, 'Foreground');
      deleted.push(describe(obj));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  return deleted;
}

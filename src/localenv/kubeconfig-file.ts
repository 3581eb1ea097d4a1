// Writes a self-contained kubeconfig (embedded CA, client cert/key or token) with mode 0600.
import { writeFileSync } from 'node:fs';
import { type KubeconfigParts, kubeconfigFromParts, kubeconfigToYaml } from '../kube/kubeconfig.ts';

export type KubeconfigFileParts = KubeconfigParts;

export function kubeconfigYaml(parts: KubeconfigParts): string {
  return kubeconfigToYaml(kubeconfigFromParts(parts));
}

export function writeKubeconfigFile(path: string, parts: KubeconfigParts): void {
  writeFileSync(path, kubeconfigYaml(parts), { mode: 0o600 });
}

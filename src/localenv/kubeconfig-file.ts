// Writes a self-contained kubeconfig (embedded CA, client cert/key or token) with mode 0600.
import { writeFileSync } from 'node:fs';
import { stringify } from 'yaml';

export interface KubeconfigFileParts {
  name: string;
  server: string;
  caPem: string;
  certPem?: string;
  keyPem?: string;
  token?: string;
  proxyUrl?: string;
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');

export function kubeconfigYaml(p: KubeconfigFileParts): string {
  const user: Record<string, string> = {};
  if (p.certPem) user['client-certificate-data'] = b64(p.certPem);
  if (p.keyPem) user['client-key-data'] = b64(p.keyPem);
  if (p.token) user.token = p.token;
  const cluster: Record<string, string> = { server: p.server, 'certificate-authority-data': b64(p.caPem) };
  if (p.proxyUrl) cluster['proxy-url'] = p.proxyUrl;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: p.name, cluster }],
    users: [{ name: p.name, user }],
    contexts: [{ name: p.name, context: { cluster: p.name, user: p.name } }],
    'current-context': p.name,
  });
}

export function writeKubeconfigFile(path: string, parts: KubeconfigFileParts): void {
  writeFileSync(path, kubeconfigYaml(parts), { mode: 0o600 });
}

// Hosted mode's `external-managed-kubeconfig`: the kubeconfig a hosted agent uses for the managed
// cluster, made self-contained from the one the user names (`tether join --mode hosted
// --managed-cluster-kubeconfig FILE`), as `kubectl config view --minify --flatten` would: the
// current context only, files read into the data fields. What cannot travel into a pod on another
// cluster is refused with what to use instead: exec plugins and auth providers (they run the
// user's own tools), basic auth, and a cluster without a CA to verify it by.
import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import { InvalidArgumentError } from '../errors.ts';
import { kubeconfigFromParts, kubeconfigToYaml } from '../kube/kubeconfig.ts';

function fileOrData(
  data: string | undefined,
  file: string | undefined,
  what: string,
  flag: string,
): string | undefined {
  if (data) return Buffer.from(data, 'base64').toString('utf8');
  if (!file) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch {
    throw new InvalidArgumentError(`${flag}: cannot read the ${what} file ${file}`);
  }
}

/** The managed cluster's kubeconfig as one YAML document with everything embedded. */
export function selfContainedKubeconfig(kc: KubeConfig, flag: string): string {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster || !user)
    throw new InvalidArgumentError(`${flag}: the current context has no cluster or user`);
  if (user.exec || user.authProvider)
    throw new InvalidArgumentError(
      `${flag}: user "${user.name}" authenticates with an exec plugin or auth provider, which cannot run in the hosted agent's pod; use a client certificate or a token (e.g. a ServiceAccount token)`,
    );
  if (user.username || user.password)
    throw new InvalidArgumentError(
      `${flag}: basic auth is not supported; use a client certificate or a token`,
    );
  const caPem = fileOrData(cluster.caData, cluster.caFile, 'certificate-authority', flag);
  if (!caPem)
    throw new InvalidArgumentError(
      `${flag}: cluster "${cluster.name}" has no certificate-authority; the hosted agent verifies the managed apiserver`,
    );
  const certPem = fileOrData(user.certData, user.certFile, 'client-certificate', flag);
  const keyPem = fileOrData(user.keyData, user.keyFile, 'client-key', flag);
  if (Boolean(certPem) !== Boolean(keyPem))
    throw new InvalidArgumentError(
      `${flag}: user "${user.name}" has a client certificate or key without the other`,
    );
  if (!certPem && !user.token)
    throw new InvalidArgumentError(`${flag}: user "${user.name}" has no client certificate and no token`);
  return kubeconfigToYaml(
    kubeconfigFromParts({
      name: 'managed-cluster',
      server: cluster.server,
      caPem,
      ...(certPem && keyPem ? { certPem, keyPem } : {}),
      ...(user.token ? { token: user.token } : {}),
      ...(cluster.proxyUrl ? { proxyUrl: cluster.proxyUrl } : {}),
      ...(cluster.tlsServerName ? { tlsServerName: cluster.tlsServerName } : {}),
    }),
  );
}

// `tether credentials`: a client-go exec credential plugin (client.authentication.k8s.io
// ExecCredential on stdout) handing out a hub credential for the tether gateway. A ClusterProfile's
// access provider (src/placement/clusterprofile) points at the gateway URL of its cluster on the
// hub; the hub authenticates whoever calls it, so the credential is a hub one: a fresh
// TokenRequest token of a hub ServiceAccount (`--service-account ns/name`), or else the hub
// kubeconfig's own credential (bearer token or client certificate). Consumers (Argo CD's
// ClusterProfile integration, MultiKueue, the cluster-inventory-api credential plugin library) run
// it with `provideClusterInfo`; the cluster it names only shapes nothing here: the hub decides by
// RBAC (`clustergateways/proxy`) which clusters the credential reaches.
import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import { type Command, Option } from 'commander';
import { InvalidArgumentError } from '../errors.ts';
import { ResourceClient } from '../kube/index.ts';
import { type TokenRequest, tokenRequestResource } from '../serviceaccount/core.ts';
import { kubeconfigFlag } from './kubeconfig-flag.ts';

/** The apiVersions of ExecCredential client-go speaks; the plugin answers in the one it was asked. */
const execCredentialVersions = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'];

export interface ExecCredential {
  apiVersion: string;
  kind: 'ExecCredential';
  status: {
    token?: string;
    clientCertificateData?: string;
    clientKeyData?: string;
    expirationTimestamp?: string;
  };
}

/** The apiVersion to answer in: the one KUBERNETES_EXEC_INFO carries, else v1. */
export function execCredentialVersion(execInfo: string | undefined): string {
  if (!execInfo) return execCredentialVersions[0] as string;
  let parsed: { apiVersion?: unknown };
  try {
    parsed = JSON.parse(execInfo) as { apiVersion?: unknown };
  } catch {
    throw new InvalidArgumentError('KUBERNETES_EXEC_INFO is not JSON');
  }
  const v = typeof parsed.apiVersion === 'string' ? parsed.apiVersion : '';
  if (!execCredentialVersions.includes(v)) {
    throw new InvalidArgumentError(
      `KUBERNETES_EXEC_INFO asks for ${v || 'no'} apiVersion; this plugin speaks ${execCredentialVersions.join(', ')}`,
    );
  }
  return v;
}

/** The credential of the kubeconfig's current user, as an ExecCredential status. */
export function kubeconfigCredential(kc: KubeConfig): ExecCredential['status'] {
  const user = kc.getCurrentUser();
  if (!user) throw new InvalidArgumentError('the hub kubeconfig has no current user');
  const pem = (data: string | undefined, file: string | undefined) =>
    data ? Buffer.from(data, 'base64').toString('utf8') : file ? readFileSync(file, 'utf8') : undefined;
  if (user.token) return { token: user.token };
  const tokenFile = (user.authProvider as { config?: { tokenFile?: string } } | undefined)?.config?.tokenFile;
  if (tokenFile) return { token: readFileSync(tokenFile, 'utf8').trim() };
  const cert = pem(user.certData, user.certFile);
  const key = pem(user.keyData, user.keyFile);
  if (cert && key) return { clientCertificateData: cert, clientKeyData: key };
  throw new InvalidArgumentError(
    'the hub kubeconfig user has neither a token nor a client certificate: pass --service-account ns/name',
  );
}

/** A TokenRequest token of hub ServiceAccount `namespace/name`. */
export async function serviceAccountCredential(
  kc: KubeConfig,
  ref: string,
  expirationSeconds: number,
): Promise<ExecCredential['status']> {
  const [namespace, name, ...rest] = ref.split('/');
  if (!namespace || !name || rest.length > 0) {
    throw new InvalidArgumentError(`--service-account must be namespace/name, not ${ref}`);
  }
  const client = new ResourceClient<TokenRequest>(kc, tokenRequestResource(name));
  const tr = await client.create({
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    metadata: { namespace },
    spec: { expirationSeconds },
  });
  if (!tr.status?.token) throw new Error(`the hub returned no token for ServiceAccount ${ref}`);
  return { token: tr.status.token, expirationTimestamp: tr.status.expirationTimestamp };
}

export function registerCredentialsCommand(program: Command): void {
  program
    .command('credentials')
    .description(
      'exec credential plugin (ExecCredential on stdout): a hub credential for the tether gateway, for ClusterProfile consumers',
    )
    .addOption(new Option('--kubeconfig <path>', 'kubeconfig of the hub').env('KUBECONFIG'))
    .addOption(
      new Option(
        '--service-account <namespace/name>',
        'hand out a TokenRequest token of this hub ServiceAccount',
      ),
    )
    .addOption(
      new Option('--expiration-seconds <n>', 'lifetime asked for a --service-account token (at least 600)')
        .default(3600)
        .argParser((v) => {
          const n = Number(v);
          if (!Number.isInteger(n) || n < 600)
            throw new InvalidArgumentError('--expiration-seconds must be an integer >= 600');
          return n;
        }),
    )
    .action(async (opts: { kubeconfig?: string; serviceAccount?: string; expirationSeconds: number }) => {
      const apiVersion = execCredentialVersion(process.env['KUBERNETES_EXEC_INFO']);
      const kc = kubeconfigFlag(opts.kubeconfig, 'hub');
      const status = opts.serviceAccount
        ? await serviceAccountCredential(kc, opts.serviceAccount, opts.expirationSeconds)
        : kubeconfigCredential(kc);
      const credential: ExecCredential = { apiVersion, kind: 'ExecCredential', status };
      process.stdout.write(`${JSON.stringify(credential)}\n`);
    });
}

// The secret an addon agent finds its hub credential in, laid out as OCM's registration agent writes
// it: `<addon>-hub-kubeconfig` (kube-apiserver-client) or `<addon>-<signer>-client-cert` (a custom
// signer) in the addon's install namespace on the managed cluster, keys tls.crt, tls.key,
// cluster-name, agent-name, and for kube-apiserver-client a kubeconfig pointing at the hub with the
// same server, CA and proxy-url as the registration agent's own hub kubeconfig, whose user reads the
// tls.crt / tls.key files next to it (context default-context). Owns building that data and
// deciding whether a stored secret still serves (and until when). No I/O.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { kubeApiserverClientSignerName } from '../../../api/addon.ts';
import type { AddonCertificateSubject } from '../../../api/addon-registration.ts';
import { HubKubeconfigSecretKey } from '../../../api/cluster.ts';
import { errorMessage } from '../../../errors.ts';
import { kubeconfigToYaml } from '../../../kube/index.ts';
import type { HubEndpoint } from '../bootstrap-kubeconfig.ts';
import { hubKubeconfigLayout } from '../hub-kubeconfig-secret.ts';
import { b64, type Secret, unb64 } from '../kinds.ts';

/** Labels on every secret the addon registration agent writes: how it finds them to delete them. */
export const registrationSecretLabel = 'addon.tether.dev/registration-secret';

/**
 * On the same Secrets: the namespace of the agent that wrote them. One cluster may run one agent per
 * hub; each finds, and cleans up, only its own (another hub's add-on credentials are not its to delete).
 */
export const registrationOwnerLabel = 'addon.tether.dev/agent-namespace';

export interface AddonCredentialTarget {
  cluster: string;
  addon: string;
  agentName: string;
  signerName: string;
  subject: AddonCertificateSubject;
  /** the hub the kubeconfig points at (kube-apiserver-client only) */
  hub: HubEndpoint;
}

/** The kubeconfig YAML stored for a kube-apiserver-client registration (OCM's layout). */
export function addonKubeconfigYaml(hub: HubEndpoint): string {
  return kubeconfigToYaml(hubKubeconfigLayout(hub));
}

/** The secret's data for a certificate and its key. */
export function addonSecretData(
  target: AddonCredentialTarget,
  certPem: string,
  keyPem: string,
): Record<string, string> {
  return {
    ...(target.signerName === kubeApiserverClientSignerName
      ? { [HubKubeconfigSecretKey.Kubeconfig]: b64(addonKubeconfigYaml(target.hub)) }
      : {}),
    [HubKubeconfigSecretKey.TlsCert]: b64(certPem),
    [HubKubeconfigSecretKey.TlsKey]: b64(keyPem),
    [HubKubeconfigSecretKey.ClusterName]: b64(target.cluster),
    [HubKubeconfigSecretKey.AgentName]: b64(target.agentName),
  };
}

const sameSet = (a: readonly string[], b: readonly string[]) => {
  const x = [...new Set(a)].sort();
  const y = [...new Set(b)].sort();
  return x.length === y.length && x.every((v, i) => v === y[i]);
};

/** The subject of a PEM certificate as sets of names (Go writes several O as one multi-valued RDN). */
function certificateSubject(cert: X509Certificate): AddonCertificateSubject {
  const fields = cert.subject.split('\n').flatMap((rdn) => rdn.split(/ \+ (?=[A-Za-z]+=)/));
  const values = (key: string) =>
    fields.filter((f) => f.startsWith(`${key}=`)).map((f) => f.slice(key.length + 1));
  return {
    commonName: values('CN')[0] ?? '',
    organizations: values('O'),
    organizationalUnits: values('OU'),
  };
}

/**
 * Whether `secret` holds a usable credential for `target`: its validity, or why not (missing,
 * another subject, expired, key not matching, data out of date such as another hub server).
 */
export function storedAddonCredential(
  secret: Secret | undefined,
  target: AddonCredentialTarget,
  now: Date = new Date(),
): { notBefore: Date; notAfter: Date } | { problem: string } {
  if (!secret) return { problem: 'there is no secret yet' };
  const data = secret.data ?? {};
  const certPem = unb64(data[HubKubeconfigSecretKey.TlsCert]);
  const keyPem = unb64(data[HubKubeconfigSecretKey.TlsKey]);
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch (err) {
    return { problem: `tls.crt is not a certificate: ${errorMessage(err)}` };
  }
  const subject = certificateSubject(cert);
  const want = target.subject;
  if (
    subject.commonName !== want.commonName ||
    !sameSet(subject.organizations, want.organizations) ||
    !sameSet(subject.organizationalUnits, want.organizationalUnits)
  ) {
    return { problem: `its certificate is for CN=${subject.commonName}, not the registration's subject` };
  }
  const notBefore = new Date(cert.validFrom);
  const notAfter = new Date(cert.validTo);
  if (now.getTime() >= notAfter.getTime())
    return { problem: `its certificate expired at ${notAfter.toISOString()}` };
  try {
    if (!cert.checkPrivateKey(createPrivateKey(keyPem)))
      return { problem: 'tls.key does not belong to tls.crt' };
  } catch (err) {
    return { problem: `tls.key is not a private key: ${errorMessage(err)}` };
  }
  const expected = addonSecretData(target, certPem, keyPem);
  for (const [key, value] of Object.entries(expected)) {
    if (data[key] !== value) return { problem: `its ${key} is out of date` };
  }
  return { notBefore, notAfter };
}

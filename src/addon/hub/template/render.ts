// An AddOnTemplate's agent manifests for one cluster (OCM's template add-on, pkg/addon/templateagent
// there): every `{{NAME}}` in a manifest is replaced by its value — the add-on's
// AddOnDeploymentConfig customizedVariables, then the built-in HUB_KUBECONFIG (when the template
// asks for registrations), CLUSTER_NAME and INSTALL_NAMESPACE, which win — and a placeholder
// without a value becomes empty, as in OCM. Values are inserted JSON-escaped, so no value can add
// fields or objects to a manifest (OCM inserts them raw). Then each Deployment's and DaemonSet's
// containers get those values as environment variables and, per registration, the volume of its
// credential (`<addon>-hub-kubeconfig` at /managed/hub-kubeconfig; a custom signer's
// `<addon>-<signer>-client-cert` at /managed/<signer>). With an AddOnDeploymentConfig
// agentInstallNamespace, namespaced objects, Namespaces and (Cluster)RoleBinding subjects move to
// it. Node placement, registries, proxy and resources are applied afterwards by the add-on manager
// (src/addon/hub/config/deployment-config.ts), as for every add-on. Pure: no I/O.
import type { KubernetesObject } from '@kubernetes/client-node';
import { kubeApiserverClientSignerName } from '../../../api/addon.ts';
import { registrationSecretName } from '../../../api/addon-registration.ts';
import type { AddOnTemplateSpec } from '../../../api/addon-template.ts';
import { InvalidArgumentError } from '../../../errors.ts';

/** Where a KubeClient registration's hub kubeconfig is mounted in the agent's containers (OCM's path). */
export const hubKubeconfigMountPath = '/managed/hub-kubeconfig';
export const hubKubeconfigPath = `${hubKubeconfigMountPath}/kubeconfig`;

export interface TemplateRenderInput {
  addonName: string;
  clusterName: string;
  /** the namespace the add-on manager resolved for the agent */
  installNamespace: string;
  /** AddOnDeploymentConfig agentInstallNamespace, when one is referenced and sets it */
  configuredInstallNamespace?: string;
  /** AddOnDeploymentConfig customizedVariables */
  variables: Readonly<Record<string, string>>;
  template: AddOnTemplateSpec;
}

type Obj = KubernetesObject & Record<string, unknown>;
interface Container {
  name?: string;
  env?: { name: string; value?: string }[];
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  containers?: Container[];
  volumes?: Record<string, unknown>[];
}

/** The values in OCM's order: HUB_KUBECONFIG first, then the built-ins sorted; variables under them. */
export function templateValues(input: TemplateRenderInput): {
  ordered: [string, string][];
  all: Map<string, string>;
} {
  const builtins: [string, string][] = [];
  if (input.template.registration !== undefined) builtins.push(['HUB_KUBECONFIG', hubKubeconfigPath]);
  const sorted: [string, string][] = [
    ['CLUSTER_NAME', input.clusterName],
    ['INSTALL_NAMESPACE', input.configuredInstallNamespace ?? input.installNamespace],
  ];
  const ordered = [...builtins, ...sorted];
  const all = new Map<string, string>(Object.entries(input.variables));
  for (const [k, v] of ordered) all.set(k, v);
  return { ordered, all };
}

const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;

/** `{{NAME}}` replaced in the manifest's JSON text, each value JSON-escaped; unknown names become ''. */
export function substitute(manifest: unknown, values: ReadonlyMap<string, string>): Obj {
  const text = JSON.stringify(manifest).replace(PLACEHOLDER, (_m, name: string) =>
    JSON.stringify(values.get(name) ?? '').slice(1, -1),
  );
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new InvalidArgumentError('an AddOnTemplate manifest must be an object');
  return parsed as Obj;
}

function podSpecOf(obj: Obj): PodSpec | undefined {
  if (obj.kind !== 'Deployment' && obj.kind !== 'DaemonSet') return undefined;
  const spec = obj.spec as { template?: { spec?: PodSpec } } | undefined;
  return spec?.template?.spec;
}

function credentialVolumes(
  input: TemplateRenderInput,
): { name: string; secret: string; mountPath: string }[] {
  const out: { name: string; secret: string; mountPath: string }[] = [];
  for (const r of input.template.registration ?? []) {
    if (r.type === 'KubeClient') {
      out.push({
        name: 'hub-kubeconfig',
        secret: registrationSecretName(input.addonName, kubeApiserverClientSignerName),
        mountPath: hubKubeconfigMountPath,
      });
    } else if (r.customSigner) {
      const signer = r.customSigner.signerName;
      out.push({
        name: `cert-${signer.replaceAll('/', '-').replaceAll('.', '-')}`,
        secret: registrationSecretName(input.addonName, signer),
        mountPath: `/managed/${signer.replaceAll('/', '-')}`,
      });
    }
  }
  return out;
}

function decoratePod(
  pod: PodSpec,
  ordered: [string, string][],
  volumes: ReturnType<typeof credentialVolumes>,
) {
  for (const c of pod.containers ?? []) {
    c.env = [...(c.env ?? []), ...ordered.map(([name, value]) => ({ name, value }))];
    if (volumes.length > 0)
      c.volumeMounts = [
        ...(c.volumeMounts ?? []),
        ...volumes.map((v) => ({ name: v.name, mountPath: v.mountPath })),
      ];
  }
  if (volumes.length > 0)
    pod.volumes = [
      ...(pod.volumes ?? []),
      ...volumes.map((v) => ({ name: v.name, secret: { secretName: v.secret } })),
    ];
}

function moveToNamespace(obj: Obj, namespace: string): void {
  const meta = obj.metadata ?? {};
  if (meta.namespace) meta.namespace = namespace;
  if (obj.kind === 'Namespace') meta.name = namespace;
  if (obj.kind === 'RoleBinding' || obj.kind === 'ClusterRoleBinding') {
    const subjects = obj.subjects as { namespace?: string }[] | undefined;
    for (const s of subjects ?? []) s.namespace = namespace;
  }
}

/** The agent's objects for one cluster; throws InvalidArgumentError for a manifest that is not an object. */
export function renderTemplate(input: TemplateRenderInput): KubernetesObject[] {
  const { ordered, all } = templateValues(input);
  const volumes = credentialVolumes(input);
  return (input.template.agentSpec.workload?.manifests ?? []).map((manifest) => {
    const obj = substitute(manifest, all);
    const pod = podSpecOf(obj);
    if (pod) decoratePod(pod, ordered, volumes);
    if (input.configuredInstallNamespace) moveToNamespace(obj, input.configuredInstallNamespace);
    return obj;
  });
}

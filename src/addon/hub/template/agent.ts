// The AgentAddon of one template add-on: a ClusterManagementAddOn whose supportedConfigs list
// `addontemplates`. Which AddOnTemplate a cluster gets is its ManagedClusterAddOn's desired config
// (written by the add-on manager's install strategy), else the ClusterManagementAddOn's default
// overridden by the ManagedClusterAddOn's spec.configs; from it come the agent's manifests
// (render.ts), its hub registrations — KubeClient (OCM's default user `…:agent:<addon>-agent` and
// groups) and CustomSigner (the template's signer and subject; without a subject the default user
// alone, since `system:` groups are the hub's; signed with the CA Secret it names) — and the
// RoleBindings of its hub permissions, which bind the cluster's own add-on group only (OCM also
// binds the fleet-wide add-on group, which would let every cluster's agent use one cluster's
// binding). A template that cannot be used (missing, for another add-on, a signing CA outside
// signingCaNamespace) renders nothing and the error names why. Health: the Deployments among the
// manifests (OCM: WorkloadAvailability, which counts DaemonSets too).
import type { KubernetesObject } from '@kubernetes/client-node';
import type {
  ClusterManagementAddOn,
  ConfigMeta,
  ManagedClusterAddOn,
  RegistrationConfig,
} from '../../../api/addon.ts';
import { addonApiGroup } from '../../../api/addon.ts';
import { addonAgentUser, addonDefaultGroups } from '../../../api/addon-registration.ts';
import {
  type AddOnTemplate,
  type AddOnTemplateSpec,
  addOnTemplateResource,
  type TemplateRegistration,
} from '../../../api/addon-template.ts';
import type { ManagedCluster } from '../../../api/cluster.ts';
import { InvalidArgumentError } from '../../../errors.ts';
import type { AddonHubRoleBinding, AddonRenderContext, AgentAddon } from '../../sdk/types.ts';
import { configRefsOf } from '../deploy/configs.ts';
import { renderTemplate } from './render.ts';

/** The agent name OCM's template add-ons put in their default user. */
export function templateAgentName(addonName: string): string {
  return `${addonName}-agent`;
}

export const addOnTemplateConfig: ConfigMeta = {
  group: addonApiGroup,
  resource: addOnTemplateResource.plural,
};

/** Looks templates up by name (an informer's cache) and signs with a Secret's CA. */
export interface TemplateSource {
  template(name: string): AddOnTemplate | undefined;
  clusterManagementAddOn(name: string): ClusterManagementAddOn | undefined;
  /** the certificate (PEM) for `csr`, signed by the CA in Secret `caSecret` (tls.crt / tls.key) */
  sign(caSecret: { name: string; namespace: string }, requestPem: string): Promise<string>;
}

/**
 * The namespace a custom signer's CA Secret must be in, and its default. OCM's default is the hub
 * namespace; tether's hub controllers may not read Secrets there (it holds the proxy-server's CA
 * and the hub's other keys), so the signing CAs live in a namespace of their own, which `tether
 * init` and the hub chart create and only hub admins write.
 */
export const signingCaNamespace = 'open-cluster-management-addon-signers';

/**
 * The name of the template `mca` uses: its desired config when the install strategy wrote one, else
 * the ClusterManagementAddOn's default overridden by the ManagedClusterAddOn's spec.configs.
 */
export function templateNameOf(mca: ManagedClusterAddOn, cma?: ClusterManagementAddOn): string | undefined {
  return configRefsOf(mca, cma).find(
    (r) => r.group === addonApiGroup && r.resource === addOnTemplateResource.plural,
  )?.name;
}

function registrationConfig(
  cluster: string,
  addon: string,
  r: TemplateRegistration,
): RegistrationConfig | undefined {
  const user = addonAgentUser(cluster, addon, templateAgentName(addon));
  const groups = addonDefaultGroups(cluster, addon);
  if (r.type === 'KubeClient')
    return { signerName: 'kubernetes.io/kube-apiserver-client', subject: { user, groups } };
  if (!r.customSigner) return undefined;
  const subject = r.customSigner.subject;
  return {
    signerName: r.customSigner.signerName,
    subject: subject
      ? {
          ...(subject.user ? { user: subject.user } : {}),
          ...(subject.groups ? { groups: [...subject.groups] } : {}),
          ...(subject.organizationUnit ? { organizationUnit: [...subject.organizationUnit] } : {}),
        }
      : { user },
  };
}

/** The RoleBindings a template's hub permissions ask for on `cluster`; throws for an unusable one. */
export function templateRoleBindings(cluster: string, template: AddOnTemplateSpec): AddonHubRoleBinding[] {
  const out: AddonHubRoleBinding[] = [];
  for (const r of template.registration ?? []) {
    for (const p of r.type === 'KubeClient' ? (r.kubeClient?.hubPermissions ?? []) : []) {
      if (p.type === 'CurrentCluster') {
        if (!p.currentCluster?.clusterRoleName)
          throw new InvalidArgumentError(
            'hubPermissions type CurrentCluster needs currentCluster.clusterRoleName',
          );
        out.push({
          namespace: cluster,
          roleRef: { kind: 'ClusterRole', name: p.currentCluster.clusterRoleName },
        });
      } else {
        const single = p.singleNamespace;
        if (!single?.namespace || !single.roleRef?.name)
          throw new InvalidArgumentError(
            'hubPermissions type SingleNamespace needs singleNamespace.namespace and roleRef',
          );
        if (single.roleRef.kind !== 'Role' && single.roleRef.kind !== 'ClusterRole')
          throw new InvalidArgumentError(
            `hubPermissions roleRef kind must be Role or ClusterRole, got "${single.roleRef.kind}"`,
          );
        out.push({
          namespace: single.namespace,
          roleRef: { kind: single.roleRef.kind, name: single.roleRef.name },
        });
      }
    }
  }
  return out;
}

/** The AgentAddon that runs the template add-on `name` from `source`'s templates. */
export function templateAddon(name: string, source: TemplateSource): AgentAddon {
  const templateFor = (mca: ManagedClusterAddOn): AddOnTemplateSpec => {
    const templateName = templateNameOf(mca, source.clusterManagementAddOn(name));
    if (!templateName)
      throw new InvalidArgumentError(
        `add-on ${name}: no AddOnTemplate in the ManagedClusterAddOn's config references`,
      );
    const template = source.template(templateName);
    if (!template) throw new InvalidArgumentError(`add-on ${name}: AddOnTemplate ${templateName} not found`);
    return checked(templateName, template.spec);
  };
  const checked = <T extends { addonName: string }>(templateName: string, spec: T): T => {
    if (spec.addonName !== name)
      throw new InvalidArgumentError(
        `add-on ${name}: AddOnTemplate ${templateName} is for add-on ${spec.addonName}, not this one`,
      );
    return spec;
  };
  const customSignerOf = (mca: ManagedClusterAddOn, signerName: string) =>
    (templateFor(mca).registration ?? []).find(
      (r) => r.type === 'CustomSigner' && r.customSigner?.signerName === signerName,
    )?.customSigner;

  return {
    name,
    supportedConfigs: [addOnTemplateConfig],
    health: { type: 'DeploymentAvailability' },
    manifests(ctx: AddonRenderContext): KubernetesObject[] {
      // the template as the add-on manager resolved it for this rendering (its spec hash is recorded)
      const resolved = ctx.configs.find(
        (c) => c.group === addonApiGroup && c.resource === addOnTemplateResource.plural,
      );
      if (resolved && resolved.spec === undefined)
        throw new InvalidArgumentError(`add-on ${name}: AddOnTemplate ${resolved.name} not found`);
      const template = resolved
        ? checked(resolved.name, resolved.spec as AddOnTemplateSpec)
        : templateFor(ctx.addon);
      for (const r of template.registration ?? []) {
        const ns = r.customSigner?.signingCA.namespace ?? signingCaNamespace;
        if (r.type === 'CustomSigner' && ns !== signingCaNamespace)
          throw new InvalidArgumentError(
            `add-on ${name}: a custom signer's signingCA must be in ${signingCaNamespace}, got ${ns}`,
          );
      }
      return renderTemplate({
        addonName: name,
        clusterName: ctx.cluster.metadata.name ?? '',
        installNamespace: ctx.installNamespace,
        ...(ctx.deploymentConfig?.agentInstallNamespace
          ? { configuredInstallNamespace: ctx.deploymentConfig.agentInstallNamespace }
          : {}),
        variables: ctx.variables,
        template,
      });
    },
    registration: {
      configs(cluster: ManagedCluster, mca: ManagedClusterAddOn): RegistrationConfig[] {
        return (templateFor(mca).registration ?? [])
          .map((r) => registrationConfig(cluster.metadata.name ?? '', name, r))
          .filter((r): r is RegistrationConfig => r !== undefined);
      },
      hubRoleBindings(cluster: ManagedCluster, mca: ManagedClusterAddOn): AddonHubRoleBinding[] {
        return templateRoleBindings(cluster.metadata.name ?? '', templateFor(mca));
      },
      async sign(csr, mca) {
        const signer = mca ? customSignerOf(mca, csr.spec.signerName) : undefined;
        if (!signer)
          throw new InvalidArgumentError(`add-on ${name}: no custom signer ${csr.spec.signerName}`);
        const namespace = signer.signingCA.namespace ?? signingCaNamespace;
        if (namespace !== signingCaNamespace)
          throw new InvalidArgumentError(
            `add-on ${name}: a custom signer's signingCA must be in ${signingCaNamespace}, got ${namespace}`,
          );
        return source.sign(
          { name: signer.signingCA.name, namespace },
          Buffer.from(csr.spec.request, 'base64').toString(),
        );
      },
    },
  };
}

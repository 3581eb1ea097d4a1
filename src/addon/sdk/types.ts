// The addon SDK's contract: what an addon author writes (`AgentAddon`) and what tether's addon
// manager hands it. An addon says which objects its agent is on a cluster, which hub identity the
// agent gets and what that identity may do in the cluster's hub namespace, and how its health is
// known; the manager (src/addon/hub, run by `AddonManager`) does the rest as OCM's addon framework
// does: delivers the objects by ManifestWork `addon-<name>-deploy-0`, applies the
// AddOnDeploymentConfig (proxy, node placement, registries, resources) to them, approves (and for a
// custom signer signs) the agent's CSRs, keeps the identity's Role/RoleBinding, and sets the
// ManagedClusterAddOn's conditions. Pure types: no I/O here.
import type { KubernetesObject, V1PolicyRule } from '@kubernetes/client-node';
import type {
  AddOnDeploymentConfigSpec,
  ConfigMeta,
  ManagedClusterAddOn,
  RegistrationConfig,
} from '../../api/addon.ts';
import type { ManagedCluster } from '../../api/cluster.ts';
import { addonAgentNamespace } from '../../api/cluster.ts';
import type { FeedbackRule, ResourceIdentifier } from '../../api/work.ts';
import type { CertificateSigningRequest } from '../../registration/hub/resources.ts';

/** Where addon agents run unless the ManagedClusterAddOn or an AddOnDeploymentConfig says otherwise. */
export const defaultAddonInstallNamespace = addonAgentNamespace;

/** One config the addon's ManagedClusterAddOn references, as the manager resolved it. */
export interface ResolvedAddonConfig {
  group: string;
  resource: string;
  namespace?: string;
  name: string;
  /** the referenced object's spec (undefined when it does not exist) */
  spec?: unknown;
  /** sha256 of the spec's canonical JSON, as configReferences[].desiredConfig.specHash */
  specHash?: string;
}

/** What `AgentAddon.manifests` gets for one cluster. */
export interface AddonRenderContext {
  cluster: ManagedCluster;
  addon: ManagedClusterAddOn;
  /**
   * the namespace the agent runs in (resolved: MCA, AddOnDeploymentConfig, default): on the managed
   * cluster, or in hosted mode on the hosting cluster
   */
  installNamespace: string;
  /**
   * OCM's install mode: `Hosted` when the ManagedClusterAddOn names a hosting cluster (annotation
   * addon.open-cluster-management.io/hosting-cluster-name) and the addon supports it (hostedMode);
   * each manifest then says where it goes (annotation addon.open-cluster-management.io/hosted-manifest-location)
   */
  installMode: 'Default' | 'Hosted';
  /** in hosted mode: the hosting cluster's name */
  hostingClusterName?: string;
  /** the merged AddOnDeploymentConfig spec, when the addon references one */
  deploymentConfig?: AddOnDeploymentConfigSpec;
  /** AddOnDeploymentConfig customizedVariables by name */
  variables: Readonly<Record<string, string>>;
  /** every config the addon references, resolved */
  configs: readonly ResolvedAddonConfig[];
}

/** How the manager learns whether an addon's agent is healthy (ManagedClusterAddOn `Available`). */
export type AddonHealthProber =
  /** the agent renews Lease `<addon>` in its install namespace; the registration agent reports it */
  | { type: 'Lease' }
  /** Available follows the Deployments among the manifests (work status feedback: availableReplicas) */
  | { type: 'DeploymentAvailability' }
  /** feedback rules on given resources; `healthy` decides from the values the work agent reports */
  | {
      type: 'WorkField';
      probes: { resource: ResourceIdentifier; rules: FeedbackRule[] }[];
      /** undefined: healthy; a string: why not (becomes the condition's message) */
      healthy(values: readonly AddonProbeResult[]): string | undefined;
    }
  /** the addon's own code sets Available */
  | { type: 'Customized' }
  /** nothing checks; Available is left as the manager last wrote it */
  | { type: 'None' };

/** Feedback values of one probed resource, as the work agent reported them. */
export interface AddonProbeResult {
  resource: ResourceIdentifier;
  values: { name: string; fieldValue: Record<string, unknown> }[];
}

/** The hub identity an addon agent gets for one cluster. */
export interface AddonRegistration {
  /**
   * registrations for the cluster (status.registrations); default one kube-apiserver-client
   * registration with OCM's default subject (user
   * system:open-cluster-management:cluster:<c>:addon:<a>:agent:<agent>, groups
   * system:open-cluster-management:cluster:<c>:addon:<a>, system:open-cluster-management:addon:<a>
   * and system:authenticated)
   */
  configs?(cluster: ManagedCluster, addon: ManagedClusterAddOn): RegistrationConfig[];
  /**
   * what the identity may do in the cluster's hub namespace (a Role there bound to the addon's
   * per-cluster group); nothing outside that namespace. Default: no rules.
   */
  hubPermissions?(cluster: ManagedCluster, addon: ManagedClusterAddOn): V1PolicyRule[];
  /**
   * extra approval check after the manager's own (subject, requester, cluster); false leaves the
   * CSR for someone else. Default: approve.
   */
  approve?(cluster: ManagedCluster, addon: ManagedClusterAddOn, csr: CertificateSigningRequest): boolean;
  /**
   * RoleBindings of existing (Cluster)Roles to the identity's per-cluster group: in the cluster's
   * hub namespace or in another namespace (an AddOnTemplate's hubPermissions). Default: none.
   */
  hubRoleBindings?(cluster: ManagedCluster, addon: ManagedClusterAddOn): AddonHubRoleBinding[];
  /** for a custom signer: the signed certificate (PEM) for an approved CSR of that signer */
  sign?(csr: CertificateSigningRequest, addon?: ManagedClusterAddOn): Promise<string>;
}

/** One RoleBinding an addon's agent identity gets on the hub (see AddonRegistration.hubRoleBindings). */
export interface AddonHubRoleBinding {
  namespace: string;
  roleRef: { kind: 'ClusterRole' | 'Role'; name: string };
}

/** An addon, as its author writes it. */
export interface AgentAddon {
  /** the ClusterManagementAddOn / ManagedClusterAddOn name */
  readonly name: string;
  /** the agent's objects for one cluster, before the AddOnDeploymentConfig is applied to them */
  manifests(ctx: AddonRenderContext): KubernetesObject[] | Promise<KubernetesObject[]>;
  /** config kinds the addon accepts (ClusterManagementAddOn spec.supportedConfigs) */
  supportedConfigs?: ConfigMeta[];
  /** a hub identity for the agent; none: the agent gets no hub credential */
  registration?: AddonRegistration;
  /**
   * the addon can run in OCM's hosted mode: its manifests place the agent on the hosting cluster
   * (hosted-manifest-location), it reads the managed cluster through Secret `<addon>-managed-kubeconfig`
   * there, and Available follows the hosting works (health must be work-based). Default false: an
   * addon asked to be hosted gets HostingClusterValidity False and nothing deployed.
   */
  hostedMode?: boolean;
  /** default { type: 'Lease' } */
  health?: AddonHealthProber;
  /**
   * the probe for one cluster, when it depends on how that cluster runs the agent (a built-in
   * add-on its klusterlet agent hosts in-process renews a Lease); default: `health`
   */
  healthFor?(cluster: ManagedCluster): AddonHealthProber;
  /** ClusterManagementAddOn addOnMeta */
  displayName?: string;
  description?: string;
}

// addon.open-cluster-management.io/v1alpha1 AddOnTemplate (cluster-scoped, on the hub): an add-on
// defined by data — its agent's manifests (a ManifestWork spec with `{{VARIABLE}}` placeholders) and
// the hub identity the agent gets — instead of by code. A ClusterManagementAddOn uses one by listing
// `addontemplates` in spec.supportedConfigs with a default config (what `clusteradm addon create`
// writes); tether's hub then runs the add-on (src/addon/hub/template). Types, resource and CRD.
import type { ObjectMeta } from '../kube/types.ts';
import { addonApiGroup } from './addon.ts';
import type { ApiResource } from './resource.ts';
import * as s from './schema.ts';
import type { ManifestWorkSpec } from './work.ts';
import { manifestWorkSpecSchema } from './work-crds.ts';

export const addOnTemplateResource = {
  group: addonApiGroup,
  version: 'v1alpha1',
  plural: 'addontemplates',
  kind: 'AddOnTemplate',
  namespaced: false,
} as const satisfies ApiResource;

export const RegistrationType = { KubeClient: 'KubeClient', CustomSigner: 'CustomSigner' } as const;
export const HubPermissionsBindingType = {
  CurrentCluster: 'CurrentCluster',
  SingleNamespace: 'SingleNamespace',
} as const;

export interface RoleRef {
  apiGroup: string;
  kind: string;
  name: string;
}

export interface HubPermissionConfig {
  type: 'CurrentCluster' | 'SingleNamespace';
  /** a RoleBinding in the cluster's namespace to this ClusterRole */
  currentCluster?: { clusterRoleName: string };
  /** a RoleBinding in `namespace` to `roleRef` */
  singleNamespace?: { namespace: string; roleRef: RoleRef };
}

export interface TemplateRegistration {
  type: 'KubeClient' | 'CustomSigner';
  kubeClient?: { hubPermissions?: HubPermissionConfig[] };
  customSigner?: {
    signerName: string;
    subject?: { user?: string; groups?: string[]; organizationUnit?: string[] };
    signingCA: { name: string; namespace?: string };
  };
}

export interface AddOnTemplateSpec {
  addonName: string;
  agentSpec: ManifestWorkSpec;
  registration?: TemplateRegistration[];
}

export interface AddOnTemplate {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: AddOnTemplateSpec;
}

const roleRefSchema = (): s.JsonSchema =>
  s.object(
    { apiGroup: s.string(), kind: s.string(), name: s.string() },
    { required: ['apiGroup', 'kind', 'name'] },
  );

export function addOnTemplateCrd(): s.CrdManifest {
  return s.defineCrd({
    resource: addOnTemplateResource,
    description:
      "An add-on defined by data: its agent's manifests (a ManifestWork spec with {{VARIABLE}} placeholders) " +
      'and the hub registrations of the agent.',
    required: ['spec'],
    printerColumns: [{ name: 'ADDON NAME', type: 'string', jsonPath: '.spec.addonName' }],
    spec: s.object(
      {
        addonName: s.string(),
        agentSpec: manifestWorkSpecSchema(),
        registration: s.array(
          s.object(
            {
              type: s.oneOf(Object.values(RegistrationType)),
              kubeClient: s.object({
                hubPermissions: s.array(
                  s.object(
                    {
                      type: s.oneOf(Object.values(HubPermissionsBindingType)),
                      currentCluster: s.object(
                        { clusterRoleName: s.string() },
                        { required: ['clusterRoleName'] },
                      ),
                      singleNamespace: s.object(
                        { namespace: s.string(), roleRef: roleRefSchema() },
                        { required: ['namespace', 'roleRef'] },
                      ),
                    },
                    { required: ['type'] },
                  ),
                ),
              }),
              customSigner: s.object(
                {
                  signerName: s.string({
                    maxLength: 571,
                    minLength: 5,
                    pattern: '^([a-z0-9][a-z0-9-]*[a-z0-9]\\.)+[a-z]+\\/[a-z0-9-\\.]+$',
                  }),
                  subject: s.object({
                    user: s.string(),
                    groups: s.array(s.string()),
                    organizationUnit: s.array(s.string()),
                  }),
                  signingCA: s.object({ name: s.string(), namespace: s.string() }, { required: ['name'] }),
                },
                { required: ['signerName', 'signingCA'] },
              ),
            },
            { required: ['type'] },
          ),
        ),
      },
      { required: ['addonName', 'agentSpec'] },
    ),
  });
}

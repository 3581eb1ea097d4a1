// Hub admission for GitOpsCluster, as a ValidatingAdmissionPolicy (CEL with the `authorizer`
// library, evaluated by the apiserver). The GitOpsCluster controller acts with the hub's own rights:
// it writes Secrets into spec.argoServer.argoNamespace, grants a hub ServiceAccount
// `clustergateways/proxy` on the decided clusters, and sends each decided cluster a ManifestWork
// binding a ClusterRole there. So whoever writes a GitOpsCluster must already be allowed all of
// that themselves, or the kind would be a way up:
//   - `create` on Secrets in the Argo CD namespace;
//   - `create` on `clustergateways/proxy` (cluster.core.oam.dev), any cluster;
//   - `create` on ManifestWorks in every namespace (what the per-cluster RBAC work needs);
//   - the reference must be a Placement in the GitOpsCluster's own namespace (a namespace sees only the
//     cluster sets bound to it; a reference elsewhere would borrow another namespace's sets);
//   - fields tether does not act on are refused rather than ignored: createPolicyTemplate,
//     createBlankClusterSecrets, managedServiceAccountRef (the Secrets carry a hub ServiceAccount
//     token: see cluster-secret.ts).
// `tether init` and the charts install it with the cluster-set policies (placementAdmissionObjects).
import type { KubernetesObject } from '@kubernetes/client-node';
import { gitOpsClusterResource } from '../../api/index.ts';

export const gitOpsClusterPolicyName = 'gitopscluster.apps.open-cluster-management.io';

const may = (group: string, resource: string, extra = ''): string =>
  `authorizer.group('${group}').resource('${resource}')${extra}.check('create').allowed()`;

const argoNamespace = "object.spec.?argoServer.?argoNamespace.orValue('')";
const user = "'user ' + request.userInfo.username";

/** The policy and its binding. */
export function gitOpsClusterAdmissionObjects(): KubernetesObject[] {
  const unsupported = (field: string, why: string) => ({
    expression: `!has(object.spec.${field}) || ${field === 'managedServiceAccountRef' ? `object.spec.${field} == ''` : `object.spec.${field} == false`}`,
    message: `spec.${field} is not supported by tether: ${why}`,
  });
  return [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: gitOpsClusterPolicyName },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [gitOpsClusterResource.group],
              apiVersions: ['*'],
              operations: ['CREATE', 'UPDATE'],
              resources: [gitOpsClusterResource.plural],
            },
          ],
        },
        validations: [
          {
            expression:
              "!has(object.spec.placementRef) || object.spec.placementRef.?namespace.orValue('') == '' || " +
              'object.spec.placementRef.namespace == object.metadata.namespace',
            message: "spec.placementRef must name a Placement in the GitOpsCluster's own namespace",
          },
          {
            expression:
              "!has(object.spec.placementRef) || object.spec.placementRef.?kind.orValue('Placement') in ['', 'Placement']",
            message: 'spec.placementRef.kind must be Placement (cluster.open-cluster-management.io)',
          },
          unsupported('createPolicyTemplate', 'no policy framework'),
          unsupported('createBlankClusterSecrets', 'cluster Secrets always carry a working credential'),
          unsupported(
            'managedServiceAccountRef',
            'the Secrets carry a hub ServiceAccount token (a managed-cluster token cannot pass the hub apiserver)',
          ),
          {
            expression: `${argoNamespace} == '' || ${may('', 'secrets', `.namespace(${argoNamespace})`)}`,
            messageExpression: `${user} + ' may not write Argo CD cluster Secrets: that needs create on secrets in namespace ' + ${argoNamespace}`,
            reason: 'Forbidden',
          },
          {
            expression: may('cluster.core.oam.dev', 'clustergateways', ".subresource('proxy')"),
            messageExpression: `${user} + ' may not hand out cluster access: that needs create on clustergateways/proxy'`,
            reason: 'Forbidden',
          },
          {
            expression: may('work.open-cluster-management.io', 'manifestworks'),
            messageExpression: `${user} + ' may not grant rights on managed clusters: that needs create on manifestworks in every namespace'`,
            reason: 'Forbidden',
          },
        ],
      },
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: gitOpsClusterPolicyName },
      spec: { policyName: gitOpsClusterPolicyName, validationActions: ['Deny'] },
    },
  ] as unknown as KubernetesObject[];
}

// Hub admission for cluster sets, what OCM's webhooks enforce, as ValidatingAdmissionPolicies (CEL
// with the `authorizer` library, evaluated by the apiserver itself):
//   - a ManagedClusterSetBinding's name must equal spec.clusterSet;
//   - whoever writes a binding needs `create` on the virtual subresource managedclustersets/bind for
//     that set (OCM's permission to bind a set to a namespace);
//   - whoever adds, changes or removes a ManagedCluster's cluster.open-cluster-management.io/clusterset
//     label needs `create` on managedclustersets/join for the old and the new set;
//   - and with them the GitOpsCluster policy (src/placement/argocd/admission.ts): whoever writes one
//     must already hold what the controller will hand out.
// Owns these objects and waiting for them; `tether init` and the charts install the registration
// hub's policies, the placement hub applies these at start when its identity may.
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import {
  clusterSetLabel,
  type ManagedClusterSetBinding,
  managedClusterResource,
  managedClusterSetBindingResource,
} from '../../api/index.ts';
import { admissionPolicy, applyObjects, isAlreadyExists, ResourceClient } from '../../kube/index.ts';
import { pollUntil } from '../../wait.ts';
import { gitOpsClusterAdmissionObjects } from '../argocd/admission.ts';

export const bindingPolicyName = 'managedclustersetbinding.open-cluster-management.io';
export const joinPolicyName = 'managedcluster-clusterset.open-cluster-management.io';

/** OCM's message when a binding's name differs from its set. */
export const bindingNameMessage =
  'The ManagedClusterSetBinding must have the same name as the target ManagedClusterSet';

const fieldManager = 'tether';

const mayOnSet = (subresource: 'bind' | 'join', set: string): string =>
  "authorizer.group('cluster.open-cluster-management.io').resource('managedclustersets')" +
  `.subresource('${subresource}').name(${set}).check('create').allowed()`;

/** The policies and their bindings, in install order. */
export function placementAdmissionObjects(): KubernetesObject[] {
  const bindingSet = "object.?spec.?clusterSet.orValue('')";
  const bindingPolicy = admissionPolicy(bindingPolicyName, {
    matchConstraints: {
      resourceRules: [
        {
          apiGroups: [managedClusterSetBindingResource.group],
          apiVersions: ['*'],
          operations: ['CREATE', 'UPDATE'],
          resources: [managedClusterSetBindingResource.plural],
        },
      ],
    },
    validations: [
      { expression: `object.metadata.name == ${bindingSet}`, message: bindingNameMessage },
      {
        expression: mayOnSet('bind', bindingSet),
        messageExpression:
          `'user ' + request.userInfo.username + ' is not allowed to bind cluster set ' + ${bindingSet} + ` +
          "': that needs create on managedclustersets/bind'",
        reason: 'Forbidden',
      },
    ],
  });
  const label = (obj: string) => `${obj}.metadata.?labels[?'${clusterSetLabel}'].orValue('')`;
  const oldSet = `(request.operation == 'UPDATE' ? ${label('oldObject')} : '')`;
  const joinPolicy = admissionPolicy(joinPolicyName, {
    matchConstraints: {
      resourceRules: [
        {
          apiGroups: [managedClusterResource.group],
          apiVersions: ['*'],
          operations: ['CREATE', 'UPDATE'],
          resources: [managedClusterResource.plural],
        },
      ],
    },
    variables: [
      { name: 'newSet', expression: label('object') },
      { name: 'oldSet', expression: oldSet },
    ],
    validations: [
      {
        expression:
          'variables.newSet == variables.oldSet || (' +
          `(variables.newSet == '' || ${mayOnSet('join', 'variables.newSet')}) && ` +
          `(variables.oldSet == '' || ${mayOnSet('join', 'variables.oldSet')}))`,
        messageExpression:
          "'user ' + request.userInfo.username + ' may not move ManagedCluster ' + object.metadata.name + " +
          "' from cluster set \"' + variables.oldSet + '\" to \"' + variables.newSet + " +
          "'\": that needs create on managedclustersets/join for both'",
        reason: 'Forbidden',
      },
    ],
  });
  return [...bindingPolicy, ...joinPolicy, ...gitOpsClusterAdmissionObjects()];
}

/**
 * Applies the policies (server-side apply) and waits until the apiserver enforces them: a dry-run
 * binding whose name differs from its set is refused. `kc` must be allowed to bind (any set).
 */
export async function installPlacementAdmission(kc: KubeConfig, timeoutMs = 60_000): Promise<void> {
  await applyObjects(kc, placementAdmissionObjects(), fieldManager);
  const bindings = new ResourceClient<ManagedClusterSetBinding>(kc, managedClusterSetBindingResource);
  await pollUntil(
    async () => {
      try {
        await bindings.create(
          {
            apiVersion: 'cluster.open-cluster-management.io/v1beta2',
            kind: 'ManagedClusterSetBinding',
            metadata: { name: 'tether-admission-probe', namespace: 'default' },
            spec: { clusterSet: 'tether-admission-probe-other' },
          },
          { dryRun: true },
        );
        return false;
      } catch (err) {
        if (isAlreadyExists(err)) return false;
        if (String((err as Error).message).includes(bindingNameMessage)) return true;
        throw err;
      }
    },
    {
      timeoutMs,
      intervalMs: 100,
      description: 'the ManagedClusterSetBinding admission policy to be enforced',
    },
  );
}

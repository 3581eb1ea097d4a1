// Hub admission for ManagedClusterSetBindings, what OCM's webhook enforces, as a
// ValidatingAdmissionPolicy (CEL with the `authorizer` library, evaluated by the apiserver itself):
//   - a binding's name must equal spec.clusterSet;
//   - whoever writes a binding needs `create` on the virtual subresource managedclustersets/bind for
//     that set (OCM's permission to bind a set to a namespace).
// Owns these objects and waiting for them; `tether init` and the charts install the registration
// hub's policies, the placement hub applies these at start when its identity may.
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { type ManagedClusterSetBinding, managedClusterSetBindingResource } from '../../api/index.ts';
import { applyObjects, isAlreadyExists, ResourceClient } from '../../kube/index.ts';
import { pollUntil } from '../../wait.ts';

export const bindingPolicyName = 'managedclustersetbinding.open-cluster-management.io';

/** OCM's message when a binding's name differs from its set. */
export const bindingNameMessage =
  'The ManagedClusterSetBinding must have the same name as the target ManagedClusterSet';

const fieldManager = 'tether';

/** The policy and its binding, in install order. */
export function placementAdmissionObjects(): KubernetesObject[] {
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: bindingPolicyName },
    spec: {
      failurePolicy: 'Fail',
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
        {
          expression: 'object.metadata.name == object.?spec.?clusterSet.orValue("")',
          message: bindingNameMessage,
        },
        {
          expression:
            "authorizer.group('cluster.open-cluster-management.io').resource('managedclustersets')" +
            ".subresource('bind').name(object.?spec.?clusterSet.orValue('')).check('create').allowed()",
          messageExpression:
            "'user ' + request.userInfo.username + ' is not allowed to bind cluster set ' + " +
            "object.?spec.?clusterSet.orValue('') + ': that needs create on managedclustersets/bind'",
          reason: 'Forbidden',
        },
      ],
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: bindingPolicyName },
    spec: { policyName: bindingPolicyName, validationActions: ['Deny'] },
  };
  return [policy, binding] as KubernetesObject[];
}

/**
 * Applies the policy (server-side apply) and waits until the apiserver enforces it: a dry-run
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

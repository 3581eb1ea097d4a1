// Hub admission for what OCM's webhooks enforce, as ValidatingAdmissionPolicies (CEL with the
// `authorizer` library): the apiserver evaluates them itself, so nothing extra runs or can be down.
//   - accepting a cluster (spec.hubAcceptsClient) needs `update` on managedclusters/accept in
//     register.open-cluster-management.io, whoever writes it — a bootstrap token cannot accept itself;
//   - a cluster's agent may change in its ManagedCluster only spec.managedClusterClientConfigs (what
//     tether's agent writes): lease duration, taints, acceptance, labels and annotations are the hub's;
//   - a bootstrap identity (the bootstrap ServiceAccount, any bootstrap token) creates a ManagedCluster
//     without labels — labels put a cluster into sets and Placements, so they are the hub's — and
//     with annotations only under agent.open-cluster-management.io/ (what OCM's registration agent
//     sends from its clusterAnnotations; tether's agent sends none); it changes neither on update;
//   - a ManifestWork that names an executor needs `execute-as` on manifestworks for that
//     ServiceAccount in the work's namespace (OCM's permission boundary for executors);
//   - a cluster or add-on identity (a group starting `system:open-cluster-management:`) may write on
//     the hub only ManagedServiceAccount token Secrets: type Opaque, the managed-serviceaccount label
//     and a controller ownerReference to the ManagedServiceAccount of the Secret's own name — never a
//     `kubernetes.io/service-account-token` Secret the hub's token controller would fill in for a hub
//     ServiceAccount (a managed-cluster admin holds those credentials).
// Taint keys and effects are validated by the ManagedCluster CRD schema (src/api/cluster.ts).
// Owns installing and waiting for these objects; it must not touch RBAC.
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import {
  authenticationApiGroup,
  type ManagedCluster,
  managedClusterResource,
  managedClustersGroup,
  managedServiceAccountLabel,
} from '../../api/index.ts';
import { applyObjects, ResourceClient, waitUntilEnforced } from '../../kube/index.ts';
import { BOOTSTRAP_USER } from '../bootstrap.ts';

const FIELD_MANAGER = 'tether';

export const acceptPolicyName = 'managedcluster-accept.open-cluster-management.io';
export const agentSpecPolicyName = 'managedcluster-agent-spec.open-cluster-management.io';
export const executorPolicyName = 'manifestwork-executor.open-cluster-management.io';
export const bootstrapLabelsPolicyName = 'managedcluster-bootstrap-labels.open-cluster-management.io';
/** The only annotations a bootstrap identity may put on a new ManagedCluster (OCM's agent filter). */
export const agentAnnotationPrefix = 'agent.open-cluster-management.io/';
export const clusterSecretsPolicyName = 'managedcluster-secrets.open-cluster-management.io';

/** Every cluster registration and add-on identity carries a group starting with this. */
export const ocmIdentityGroupPrefix = 'system:open-cluster-management:';

const clusterRule = {
  apiGroups: ['cluster.open-cluster-management.io'],
  apiVersions: ['*'],
  operations: ['CREATE', 'UPDATE'],
  resources: ['managedclusters'],
};

function policy(name: string, spec: Record<string, unknown>): KubernetesObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: { failurePolicy: 'Fail', ...spec },
  } as KubernetesObject;
}

function binding(policyName: string): KubernetesObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: policyName },
    spec: { policyName, validationActions: ['Deny'] },
  } as KubernetesObject;
}

const accepted = (o: string): string => `${o}.spec.?hubAcceptsClient.orValue(false)`;

export function hubAdmissionPolicyNames(): string[] {
  return [
    acceptPolicyName,
    agentSpecPolicyName,
    bootstrapLabelsPolicyName,
    executorPolicyName,
    clusterSecretsPolicyName,
  ];
}

/** The policies and their bindings, in install order. */
export function hubAdmissionObjects(): KubernetesObject[] {
  const acceptPolicy = policy(acceptPolicyName, {
    matchConstraints: { resourceRules: [clusterRule] },
    validations: [
      {
        expression:
          `(request.operation == 'CREATE' ? !${accepted('object')} : ${accepted('object')} == ${accepted('oldObject')}) || ` +
          "authorizer.group('register.open-cluster-management.io').resource('managedclusters')" +
          ".subresource('accept').name(object.metadata.name).check('update').allowed()",
        messageExpression:
          "'user ' + request.userInfo.username + ' may not set spec.hubAcceptsClient of ManagedCluster ' + " +
          "object.metadata.name + ': that needs update on managedclusters/accept in group " +
          "register.open-cluster-management.io (a hub admin accepts clusters: tether accept)'",
        reason: 'Forbidden',
      },
    ],
  });
  const unchanged = (path: string, empty: string): string =>
    `object.${path}.orValue(${empty}) == oldObject.${path}.orValue(${empty})`;
  const agentPolicy = policy(agentSpecPolicyName, {
    matchConstraints: { resourceRules: [{ ...clusterRule, operations: ['UPDATE'] }] },
    matchConditions: [
      {
        name: 'is-a-cluster-agent',
        expression: `request.userInfo.groups.exists(g, g == '${managedClustersGroup}')`,
      },
    ],
    validations: [
      {
        expression: [
          unchanged('spec.?hubAcceptsClient', 'false'),
          unchanged('spec.?leaseDurationSeconds', '0'),
          unchanged('spec.?taints', '[]'),
          unchanged('metadata.?labels', '{}'),
          unchanged('metadata.?annotations', '{}'),
        ].join(' && '),
        messageExpression:
          "'a cluster agent (' + request.userInfo.username + ') may change only " +
          "spec.managedClusterClientConfigs of its ManagedCluster ' + object.metadata.name + " +
          "'; acceptance, lease duration, taints, labels and annotations are set on the hub'",
        reason: 'Forbidden',
      },
    ],
  });
  const bootstrapPolicy = policy(bootstrapLabelsPolicyName, {
    matchConstraints: { resourceRules: [clusterRule] },
    matchConditions: [
      {
        // The bootstrap ServiceAccount, and every bootstrap token (system:bootstrappers[:…] groups).
        name: 'is-a-bootstrap-identity',
        expression:
          `request.userInfo.username == '${BOOTSTRAP_USER}' || ` +
          "request.userInfo.groups.exists(g, g == 'system:bootstrappers' || g.startsWith('system:bootstrappers:'))",
      },
    ],
    validations: [
      {
        expression:
          "request.operation == 'CREATE' ? object.metadata.?labels.orValue({}).size() == 0 : " +
          unchanged('metadata.?labels', '{}'),
        messageExpression:
          "'a bootstrap identity (' + request.userInfo.username + ') may not set labels on ManagedCluster ' + " +
          "object.metadata.name + ': labels put a cluster into cluster sets and Placements, so the hub sets them'",
        reason: 'Forbidden',
      },
      {
        expression:
          "request.operation == 'CREATE' ? object.metadata.?annotations.orValue({}).all(k, " +
          `k.startsWith('${agentAnnotationPrefix}')) : ` +
          unchanged('metadata.?annotations', '{}'),
        messageExpression:
          "'a bootstrap identity (' + request.userInfo.username + ') may set only " +
          `${agentAnnotationPrefix}* annotations on a new ManagedCluster (' + object.metadata.name + '), ` +
          "and change none'",
        reason: 'Forbidden',
      },
    ],
  });
  const executor = 'object.spec.executor.subject.serviceAccount';
  const executorPolicy = policy(executorPolicyName, {
    matchConstraints: {
      resourceRules: [
        {
          apiGroups: ['work.open-cluster-management.io'],
          apiVersions: ['*'],
          operations: ['CREATE', 'UPDATE'],
          resources: ['manifestworks'],
        },
      ],
    },
    matchConditions: [
      {
        name: 'names-an-executor-service-account',
        expression: 'object.spec.?executor.?subject.?serviceAccount.hasValue()',
      },
      {
        // Metadata-only writes (finalizers by the work agent) do not re-check the executor.
        name: 'spec-written',
        expression: "request.operation == 'CREATE' || object.spec != oldObject.spec",
      },
    ],
    validations: [
      {
        expression:
          "authorizer.group('work.open-cluster-management.io').resource('manifestworks')" +
          `.namespace(object.metadata.namespace).name('system:serviceaccount:' + ${executor}.namespace + ':' + ${executor}.name)` +
          ".check('execute-as').allowed()",
        messageExpression:
          `'user ' + request.userInfo.username + ' may not run ManifestWork ' + object.metadata.name + ` +
          `' as system:serviceaccount:' + ${executor}.namespace + ':' + ${executor}.name + ` +
          "': that needs execute-as on manifestworks in namespace ' + object.metadata.namespace",
        reason: 'Forbidden',
      },
    ],
  });
  const policies = [acceptPolicy, agentPolicy, bootstrapPolicy, executorPolicy, clusterSecretsPolicy()];
  return policies.flatMap((p) => [p, binding(p.metadata?.name ?? '')]);
}

/** What src/serviceaccount/agent/token-secret.ts writes, and all a cluster or add-on identity may. */
function clusterSecretsPolicy(): KubernetesObject {
  const owner =
    "has(r.controller) && r.controller && r.kind == 'ManagedServiceAccount' && " +
    `r.apiVersion.startsWith('${authenticationApiGroup}/') && r.name == object.metadata.name`;
  return policy(clusterSecretsPolicyName, {
    matchConstraints: {
      resourceRules: [
        { apiGroups: [''], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: ['secrets'] },
      ],
    },
    matchConditions: [
      {
        name: 'is-a-cluster-or-addon-identity',
        expression: `request.userInfo.groups.exists(g, g.startsWith('${ocmIdentityGroupPrefix}'))`,
      },
    ],
    validations: [
      {
        expression:
          "object.?type.orValue('Opaque') == 'Opaque' && " +
          `object.metadata.?labels[?'${managedServiceAccountLabel}'].orValue('') == 'true' && ` +
          `object.metadata.?ownerReferences.orValue([]).exists(r, ${owner})`,
        messageExpression:
          "'a managed cluster or add-on identity (' + request.userInfo.username + ') may write on the hub " +
          'only ManagedServiceAccount token Secrets: type Opaque, label ' +
          `${managedServiceAccountLabel}=true and a controller ownerReference to the ` +
          "ManagedServiceAccount of the same name; Secret ' + object.metadata.namespace + '/' + " +
          "object.metadata.name + ' of type ' + object.?type.orValue('Opaque') + ' is not one'",
        reason: 'Forbidden',
      },
    ],
  });
}

/**
 * Applies the policies (server-side apply) and waits until the apiserver enforces them: policies
 * are compiled and picked up asynchronously, so a probe user that RBAC lets create ManagedClusters
 * (granted for the wait only) dry-runs a self-accepting create until the accept policy refuses it.
 */
export async function installHubAdmission(kc: KubeConfig, timeoutMs = 60_000): Promise<void> {
  await applyObjects(kc, hubAdmissionObjects(), FIELD_MANAGER);
  await waitUntilEnforced(kc, {
    user: 'tether:admission-probe',
    rules: [
      {
        apiGroups: ['cluster.open-cluster-management.io'],
        resources: ['managedclusters'],
        verbs: ['create'],
      },
    ],
    write: (asProbe) =>
      new ResourceClient<ManagedCluster>(asProbe, managedClusterResource).create(
        { metadata: { name: 'tether-admission-probe' }, spec: { hubAcceptsClient: true } },
        { dryRun: true },
      ),
    refusal: 'hubAcceptsClient',
    description: 'the hub admission policies to be enforced',
    timeoutMs,
    fieldManager: FIELD_MANAGER,
  });
}

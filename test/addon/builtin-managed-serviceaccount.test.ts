// The managed-serviceaccount addon, rendered for one cluster: `tether serviceaccount-agent` with the
// addon's hub kubeconfig, RBAC on the managed cluster confined to its namespace's ServiceAccounts
// (plus token reviews), and on the hub the rules the agent's identity has always needed.
import { describe, expect, it } from 'vitest';
import { managedServiceAccountAddon } from '../../src/addon/builtin/managed-serviceaccount.ts';
import { serviceAccountAgentHubRules } from '../../src/serviceaccount/rbac.ts';
import {
  cluster,
  managedClusterAddOn,
  mountsOf,
  one,
  type PodTemplate,
  render,
  renderContext,
} from './builtin-fixtures.ts';

const addon = managedServiceAccountAddon({ image: 'localhost/tether:1.2.3' });

interface Rules {
  metadata: { name: string; namespace?: string };
  rules: { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }[];
}
interface Binding {
  roleRef: { kind: string; name: string };
  subjects: { kind: string; name: string; namespace: string }[];
}

describe('managed-serviceaccount addon', () => {
  it('renders the agent for cluster1 reading managed-serviceaccount-hub-kubeconfig', async () => {
    const objects = await render(
      addon,
      renderContext('managed-serviceaccount', 'cluster1', { installNamespace: 'msa-ns' }),
    );
    const d = one<PodTemplate>(objects, 'Deployment', 'managed-serviceaccount-addon-agent');
    expect(d.metadata?.namespace).toBe('msa-ns');
    expect(d.spec.replicas).toBe(1);
    expect(d.spec.template.spec.serviceAccountName).toBe('managed-serviceaccount');
    expect(d.spec.template.spec.containers[0]?.args).toEqual([
      'serviceaccount-agent',
      '--cluster-name=cluster1',
      '--hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig',
      '--install-namespace=msa-ns',
      '--ops-port=8094',
      '--ops-bind-address=0.0.0.0',
    ]);
    expect(mountsOf(d)).toMatchObject({
      '/managed/hub-kubeconfig': 'Secret/managed-serviceaccount-hub-kubeconfig',
    });
    expect(one(objects, 'ServiceAccount').metadata).toEqual({
      name: 'managed-serviceaccount',
      namespace: 'msa-ns',
    });
  });

  it("trusts an AddOnDeploymentConfig's forward proxy CA where the manager mounts it", async () => {
    const objects = await render(
      addon,
      renderContext('managed-serviceaccount', 'cluster1', {
        deploymentConfig: { proxyConfig: { httpsProxy: 'https://squid:3129', caBundle: 'Y2E=' } },
      }),
    );
    expect(one<PodTemplate>(objects, 'Deployment').spec.template.spec.containers[0]?.args).toContain(
      '--proxy-ca-file=/managed/proxy-ca/ca-bundle.crt',
    );
  });

  it('may manage ServiceAccounts and their tokens only in its install namespace on the managed cluster', async () => {
    const objects = await render(
      addon,
      renderContext('managed-serviceaccount', 'cluster1', { installNamespace: 'msa-ns' }),
    );
    const role = one<Rules>(objects, 'Role');
    expect(role.metadata.namespace).toBe('msa-ns');
    expect(role.rules).toEqual([
      {
        apiGroups: [''],
        resources: ['serviceaccounts'],
        verbs: ['get', 'list', 'watch', 'create', 'delete'],
      },
      { apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'] },
    ]);
    const clusterRole = one<Rules>(objects, 'ClusterRole');
    expect(clusterRole.rules).toEqual([
      { apiGroups: [''], resources: ['namespaces'], verbs: ['get'], resourceNames: ['msa-ns'] },
      { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
    ]);
    for (const kind of ['RoleBinding', 'ClusterRoleBinding']) {
      const b = one<Binding>(objects, kind);
      expect(b.subjects).toEqual([
        { kind: 'ServiceAccount', name: 'managed-serviceaccount', namespace: 'msa-ns' },
      ]);
      expect(b.roleRef.name).toBe(role.metadata.name);
    }
  });

  it("has the hub rules tether agent's identity needs for ManagedServiceAccounts, and no others", () => {
    const perms = addon.registration?.hubPermissions?.(
      cluster('cluster1'),
      managedClusterAddOn('managed-serviceaccount', 'cluster1'),
    );
    expect(perms).toEqual(serviceAccountAgentHubRules);
    // copies: the manager may not change the shared rules
    perms?.[0]?.verbs?.push('deletecollection');
    expect(serviceAccountAgentHubRules[0]?.verbs).not.toContain('deletecollection');
    expect(addon.registration?.configs).toBeUndefined();
    expect(addon.health).toEqual({ type: 'DeploymentAvailability' });
  });
});

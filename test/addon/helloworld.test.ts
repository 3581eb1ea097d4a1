// The helloworld add-on as its manager renders it for one cluster: the agent's objects in the
// install namespace, the Deployment running this example's `agent` from the tether image with the
// hub credential mounted where OCM mounts it, the image from the `Image` variable, and the hub
// identity's permissions (read ConfigMaps in the cluster namespace) and Lease health.
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { helloworld, helloworldAddon } from '../../examples/helloworld-addon/helloworld.ts';
import type { AddonRenderContext } from '../../src/addon/sdk/types.ts';
import type { ManagedCluster } from '../../src/api/cluster.ts';
import { defaultImage } from '../../src/install/image-ref.ts';

function context(variables: Record<string, string> = {}): AddonRenderContext {
  return {
    cluster: { metadata: { name: 'cluster1' } } as ManagedCluster,
    addon: {
      apiVersion: 'addon.open-cluster-management.io/v1alpha1',
      kind: 'ManagedClusterAddOn',
      metadata: { name: 'helloworld', namespace: 'cluster1' },
      spec: { installNamespace: 'helloworld' },
    },
    installNamespace: 'helloworld',
    installMode: 'Default',
    variables,
    configs: [],
  };
}

type Deployment = KubernetesObject & {
  spec: {
    template: {
      spec: {
        serviceAccountName: string;
        volumes: { name: string; secret?: { secretName: string } }[];
        containers: {
          image: string;
          command: string[];
          args: string[];
          volumeMounts: { name: string; mountPath: string }[];
        }[];
      };
    };
  };
};

async function render(addon = helloworldAddon, variables: Record<string, string> = {}) {
  const objects = await addon.manifests(context(variables));
  const deployment = objects.find((o) => o.kind === 'Deployment') as Deployment;
  return { objects, deployment, container: deployment.spec.template.spec.containers[0]! };
}

describe('helloworld add-on', () => {
  it('renders its agent in the install namespace: namespace (kept when disabled), ServiceAccount, RBAC, Deployment', async () => {
    const { objects } = await render();
    expect(objects.map((o) => `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name}`)).toEqual([
      'Namespace//helloworld',
      'ServiceAccount/helloworld/helloworld-agent',
      'Role/helloworld/helloworld-agent',
      'RoleBinding/helloworld/helloworld-agent',
      'Deployment/helloworld/helloworld-agent',
    ]);
    expect(objects[0]?.metadata?.annotations).toEqual({
      'addon.open-cluster-management.io/deletion-orphan': '',
    });
    const role = objects[2] as KubernetesObject & { rules: { resources: string[]; verbs: string[] }[] };
    expect(role.rules.map((r) => r.resources)).toEqual([['configmaps'], ['leases']]);
  });

  it("runs this example's agent with the cluster name, install namespace and the mounted hub kubeconfig", async () => {
    const { deployment, container } = await render();
    expect(container.command).toEqual(['node', '/app/examples/helloworld-addon/helloworld.ts', 'agent']);
    expect(container.args).toEqual([
      '--hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig',
      '--cluster-name=cluster1',
      '--addon-namespace=helloworld',
    ]);
    const pod = deployment.spec.template.spec;
    expect(pod.serviceAccountName).toBe('helloworld-agent');
    expect(pod.volumes).toEqual([
      { name: 'hub-kubeconfig', secret: { secretName: 'helloworld-hub-kubeconfig' } },
    ]);
    expect(container.volumeMounts).toEqual([
      { name: 'hub-kubeconfig', mountPath: '/managed/hub-kubeconfig', readOnly: true },
    ]);
  });

  it("passes its agents a lease duration only when the manager is given one (else theirs, OCM's 60 s)", async () => {
    expect((await render()).container.args.some((a) => a.startsWith('--lease-duration'))).toBe(false);
    expect((await render(helloworld({ leaseDurationSeconds: 5 }))).container.args).toContain(
      '--lease-duration=5',
    );
  });

  it('takes its image from the Image variable, else the given default, else the tether image', async () => {
    expect((await render()).container.image).toBe(defaultImage());
    expect((await render(helloworld({ image: 'registry.example/tether:1' }))).container.image).toBe(
      'registry.example/tether:1',
    );
    const fromVariable = await render(helloworld({ image: 'registry.example/tether:1' }), {
      Image: 'mirror.example/tether:2',
    });
    expect(fromVariable.container.image).toBe('mirror.example/tether:2');
  });

  it('asks for a hub identity that reads ConfigMaps in its cluster namespace, and Lease health', () => {
    const cluster = context().cluster;
    expect(helloworldAddon.registration?.hubPermissions?.(cluster, context().addon)).toEqual([
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] },
    ]);
    expect(helloworldAddon.registration?.configs).toBeUndefined(); // OCM's default subject
    expect(helloworldAddon.health).toEqual({ type: 'Lease' });
    expect(helloworldAddon.name).toBe('helloworld');
  });
});

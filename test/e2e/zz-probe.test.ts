import { it } from 'vitest';
import { managedClusterResource } from '../../src/api/index.ts';
import { loadKubeconfig, ResourceClient } from '../../src/kube/index.ts';
import { testEnv } from './env.ts';
it('probe', async () => {
  const c = new ResourceClient(loadKubeconfig(testEnv().hub.kubeconfigPath), managedClusterResource);
  const o = { metadata: { name: 'probe-ssa' }, spec: { leaseDurationSeconds: 30 } } as never;
  await c.apply(o, { fieldManager: 'a' });
  const err = await c.apply({ metadata: { name: 'probe-ssa' }, spec: { leaseDurationSeconds: 31 } } as never, { fieldManager: 'b' }).catch((e) => e);
  console.log('ERR', err.name, err.status, err.reason, err.message);
  await c.delete('probe-ssa');
});

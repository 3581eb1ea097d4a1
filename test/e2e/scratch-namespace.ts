// A namespace of its own on the hub for one e2e file, created before its tests and deleted after
// them, and per-test undo steps run last-registered first after each test (stop watchers before
// deleting what they watch); the first failing step fails the test.
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { ResourceClient } from '../../src/kube/index.ts';
import { Cleanups } from '../registration/hub/e2e-fixtures.ts';
import { uniqueName } from './helpers.ts';

export interface ScratchNamespace {
  namespace: string;
  /** an undo step for the running test */
  cleanup(step: () => Promise<unknown>): void;
}

/** Registers the hooks; call at the top level of a test file. */
export function scratchNamespace(kc: KubeConfig, prefix: string): ScratchNamespace {
  const namespaces = new ResourceClient(kc, {
    group: '',
    version: 'v1',
    plural: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
  });
  const namespace = uniqueName(prefix);
  const steps = new Cleanups();
  beforeAll(async () => {
    await namespaces.create({ metadata: { name: namespace } });
  });
  afterEach(() => steps.run());
  afterAll(async () => {
    await namespaces.delete(namespace, undefined, { ignoreNotFound: true });
  });
  return { namespace, cleanup: (step) => steps.add(step) };
}

// Access to the shared real control planes started by global-setup.ts.
import { inject } from 'vitest';
import type { ControlPlaneInfo, TunnelInfo } from '../../src/localenv/types.ts';

export interface TestEnv {
  hub: ControlPlaneInfo;
  cluster1: ControlPlaneInfo;
  tunnel: TunnelInfo;
}

declare module 'vitest' {
  export interface ProvidedContext {
    tetherEnv: TestEnv;
  }
}

export function testEnv(): TestEnv {
  return inject('tetherEnv');
}

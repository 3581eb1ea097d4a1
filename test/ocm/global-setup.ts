// `npm run test:ocm`: one environment for every interop file (hub, cluster1, cluster2: etcd,
// kube-apiserver, kube-controller-manager each; squid and tether's proxy-server between them),
// and OCM's binaries found before anything starts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { type Environment, startEnvironment } from '../../src/localenv/environment.ts';
import type { ControlPlaneInfo, TunnelInfo } from '../../src/localenv/types.ts';
import { info, tunnelInfo } from '../e2e/global-setup.ts';
import { describeOcmBinaries, type OcmBinaries, resolveOcmBinaries } from './fixtures/binaries.ts';

export interface OcmTestEnv {
  hub: ControlPlaneInfo;
  cluster1: ControlPlaneInfo;
  cluster2: ControlPlaneInfo;
  tunnel: TunnelInfo;
  bin: OcmBinaries;
}

declare module 'vitest' {
  export interface ProvidedContext {
    ocmEnv: OcmTestEnv;
  }
}

let env: Environment | undefined;
let dir: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  const bin = resolveOcmBinaries();
  process.stderr.write(`[ocm setup] ${describeOcmBinaries(bin)}\n`);
  const started = Date.now();
  dir = mkdtempSync(join(tmpdir(), 'tether-ocm-'));
  env = await startEnvironment({
    clusters: 2,
    dir,
    namePrefix: 'ocm-',
    progress: (line) => process.stderr.write(`[ocm setup] ${line}\n`),
  });
  const [cluster1, cluster2] = env.clusters;
  const t = env.tunnel;
  if (!cluster1 || !cluster2 || !t) throw new Error('the environment lacks cluster1, cluster2 or its tunnel');
  project.provide('ocmEnv', {
    hub: info(env.hub),
    cluster1: info(cluster1),
    cluster2: info(cluster2),
    tunnel: tunnelInfo(t),
    bin,
  });
  process.stderr.write(
    `[ocm setup] hub, cluster1, cluster2 ready in ${((Date.now() - started) / 1000).toFixed(1)}s\n`,
  );
}

export async function teardown(): Promise<void> {
  await env?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}

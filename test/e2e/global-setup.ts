// Starts one real environment (hub + cluster1: etcd, kube-apiserver, kube-controller-manager each)
// for every e2e file, supervised like `tether up`'s, and stops it afterwards. Building the binaries
// on a cold machine happens here.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { type Environment, startEnvironment } from '../../src/localenv/environment.ts';
import type { ControlPlaneInfo, TunnelInfo } from '../../src/localenv/types.ts';

let env: Environment | undefined;
let dir: string | undefined;

/** What a test file may see of a control plane (paths and URL, no process handles). */
export function info(cp: ControlPlaneInfo): ControlPlaneInfo {
  const { name, apiserverUrl, kubeconfigPath, caCertPath, caKeyPath, frontProxyCaCertPath, dir: cpDir } = cp;
  return { name, apiserverUrl, kubeconfigPath, caCertPath, caKeyPath, frontProxyCaCertPath, dir: cpDir };
}

/** The same of the tunnel stack. */
export function tunnelInfo(t: TunnelInfo): TunnelInfo {
  const {
    squidUrl,
    squidAccessLogPath,
    proxyServerAddress,
    connectFrontendUrl,
    proxyClientCertPath,
    proxyClientKeyPath,
    hubCaPath,
  } = t;
  return {
    squidUrl,
    squidAccessLogPath,
    proxyServerAddress,
    connectFrontendUrl,
    proxyClientCertPath,
    proxyClientKeyPath,
    hubCaPath,
  };
}

export async function setup(project: TestProject): Promise<void> {
  const started = Date.now();
  dir = mkdtempSync(join(tmpdir(), 'tether-e2e-'));
  env = await startEnvironment({
    clusters: 1,
    dir,
    progress: (line) => process.stderr.write(`[e2e setup] ${line}\n`),
  });
  // As in `tether up`: a shared process that crashes is restarted (same ports and data) and the
  // crash reported, instead of failing every later file; repeated crashes are reported and left.
  env.supervise({
    report: (message) => process.stderr.write(`[e2e env] ${message}\n`),
    onGiveUp: (reason) => process.stderr.write(`[e2e env] ${reason}\n`),
  });
  const cluster1 = env.clusters[0];
  if (!cluster1) throw new Error('environment has no cluster1');
  const t = env.tunnel;
  if (!t) throw new Error('environment has no tunnel');
  project.provide('tetherEnv', {
    hub: info(env.hub),
    cluster1: info(cluster1),
    tunnel: tunnelInfo(t),
  });
  process.stderr.write(
    `[e2e setup] hub + cluster1 ready in ${((Date.now() - started) / 1000).toFixed(1)}s\n`,
  );
}

export async function teardown(): Promise<void> {
  await env?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}

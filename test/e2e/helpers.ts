// Small helpers shared by e2e files: clients for the test control planes and the real kubectl.
import { spawn } from 'node:child_process';
import { KubeConfig } from '@kubernetes/client-node';
import type { ResourceDescriptor } from '../../src/kube/index.ts';
import type { ControlPlaneInfo } from '../../src/localenv/types.ts';

/** core/v1 ConfigMaps, the object the informer and controller e2e tests watch and write. */
export const configMapResource: ResourceDescriptor = {
  group: '',
  version: 'v1',
  plural: 'configmaps',
  kind: 'ConfigMap',
  namespaced: true,
};

export function adminKubeConfig(cp: ControlPlaneInfo): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  return kc;
}

/** Runs the real kubectl (optionally feeding stdin); resolves with stdout, rejects quoting stderr. */
export function kubectl(
  kubeconfig: string,
  args: string[],
  opts: { input?: string; timeoutMs?: number } = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('kubectl', ['--kubeconfig', kubeconfig, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new Error(`kubectl ${args.join(' ')} failed (${signal ?? code}): ${stderr.trim()}`));
    });
    child.stdin.end(opts.input ?? '');
  });
}

let counter = 0;
/** A name unique within this test run. */
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid.toString(36)}-${counter}`;
}

// Shared by the helloworld e2e files: the example's agent (or manager) as a child process, as its pod
// runs it, with its output kept for failure messages; and the managed-cluster credential its pod
// would have (a token of the ServiceAccount its manifests create).
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import { kubeconfigFromParts, kubeconfigToYaml } from '../../src/kube/index.ts';
import { requestServiceAccountToken } from '../../src/serviceaccount/token.ts';
import { waitFor } from '../registration/hub/e2e-fixtures.ts';
import { testEnv } from './env.ts';

const env = testEnv();

/** `node examples/helloworld-addon/helloworld.ts <args>`, output kept (last 20 kB). */
export class HelloworldProcess {
  readonly child: ChildProcess;
  /** the last 20 kB of stdout and stderr */
  output = '';

  constructor(args: string[]) {
    this.child = spawn(process.execPath, ['examples/helloworld-addon/helloworld.ts', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TETHER_LOG_LEVEL: 'info' },
    });
    const keep = (d: Buffer) => {
      this.output = (this.output + d.toString()).slice(-20_000);
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
  }

  /** SIGTERM (SIGKILL after 10 s); the exit code. */
  async stop(): Promise<number | null> {
    const child = this.child;
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  }

  /** waitFor, quoting the process's output when it times out. */
  async eventually<T>(
    check: () => Promise<T | undefined | false>,
    what: string,
    timeoutMs = 30_000,
  ): Promise<T> {
    try {
      return await waitFor(check, what, timeoutMs);
    } catch (err) {
      throw new Error(`${(err as Error).message}\nhelloworld output:\n${this.output}`);
    }
  }
}

/** A kubeconfig file for ServiceAccount `namespace/name` on cluster1 (what the agent's pod gets). */
export async function writeServiceAccountKubeconfig(
  managedAdmin: KubeConfig,
  namespace: string,
  name: string,
  path: string,
): Promise<void> {
  const { token } = await requestServiceAccountToken(managedAdmin, namespace, name, {
    expirationSeconds: 3600,
    audiences: [],
  });
  const kc = kubeconfigFromParts({
    name,
    server: env.cluster1.apiserverUrl,
    caPem: readFileSync(env.cluster1.caCertPath, 'utf8'),
    token,
  });
  writeFileSync(path, kubeconfigToYaml(kc), { mode: 0o600 });
}

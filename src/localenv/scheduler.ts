// kube-scheduler for a local control plane that has a real node: runs on the host next to the
// apiserver (127.0.0.1), with its own client certificate (system:kube-scheduler, bound by the
// default RBAC) issued from the control plane's CA. Without it Deployments' pods stay Pending.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { ProcessFailedError } from '../errors.ts';
import { issueCertificate, loadCertificateAuthority } from '../pki/index.ts';
import { pollUntil } from '../wait.ts';
import { writeKubeconfigFile } from './kubeconfig-file.ts';
import { describeExit, freePort, SupervisedProcess } from './process.ts';
import type { ControlPlaneInfo } from './types.ts';

/** Starts kube-scheduler for `cp` with its files in `dir`; resolves once /healthz answers. */
export async function startScheduler(
  cp: ControlPlaneInfo,
  binary: string,
  dir: string,
  timeoutMs = 60_000,
  signal?: AbortSignal,
): Promise<SupervisedProcess> {
  const caPem = readFileSync(cp.caCertPath, 'utf8');
  const ca = await loadCertificateAuthority(caPem, readFileSync(cp.caKeyPath, 'utf8'));
  const client = await issueCertificate(ca, { commonName: 'system:kube-scheduler', usage: 'client' });
  const kubeconfig = join(dir, 'scheduler.kubeconfig');
  writeKubeconfigFile(kubeconfig, {
    name: cp.name,
    server: cp.apiserverUrl,
    caPem,
    certPem: client.certPem,
    keyPem: client.keyPem,
  });
  const port = await freePort();
  const certDir = join(dir, 'scheduler-certs');
  writeFileSync(join(dir, 'scheduler.port'), String(port));
  const proc = new SupervisedProcess({
    name: `${cp.name}/kube-scheduler`,
    command: binary,
    logFile: join(dir, 'kube-scheduler.log'),
    args: [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
      `--cert-dir=${certDir}`,
      '--leader-elect=false',
      '--profiling=false',
      '--v=1',
    ],
  });
  const healthy = async (s?: AbortSignal): Promise<void> => {
    // /healthz of a self-signed loopback listener we just started: no identity to verify
    const dispatcher = new Agent({ connect: { rejectUnauthorized: false, timeout: 2000 } });
    await pollUntil(
      async () => {
        if (!proc.running)
          throw new ProcessFailedError(`${proc.name} exited (log: ${proc.logFile})`, proc.tail());
        const res = await request(`https://127.0.0.1:${port}/healthz`, { dispatcher });
        await res.body.text();
        return res.statusCode === 200;
      },
      { timeoutMs, intervalMs: 250, description: `${proc.name} /healthz`, signal: s },
    ).finally(() => dispatcher.close());
  };
  proc.readiness = () => healthy();
  // an exit during start-up ends the wait at once instead of at the deadline
  const died = new AbortController();
  void proc.exited.then((info) => {
    if (proc.running) return;
    died.abort(
      new ProcessFailedError(
        `${proc.name} exited (${describeExit(info)}) (log: ${proc.logFile})`,
        proc.tail(),
      ),
    );
  });
  try {
    await healthy(signal ? AbortSignal.any([signal, died.signal]) : died.signal);
  } catch (err) {
    await proc.stop();
    if (died.signal.aborted) throw died.signal.reason;
    if (err instanceof ProcessFailedError || signal?.aborted) throw err;
    throw new ProcessFailedError(
      `${proc.name} did not become healthy: ${(err as Error).message}`,
      proc.tail(),
    );
  }
  return proc;
}

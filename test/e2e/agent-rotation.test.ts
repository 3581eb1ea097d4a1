// `tether agent` gets a new hub certificate while a hub service holds a connection into the cluster
// through the tunnel: the proxy-agent opens a tunnel with the new certificate and drains the old
// one, so the held connection keeps working and closes the old tunnel only when it ends. Real
// processes: the shared proxy-server and squid, a registration hub, and `tether agent` (work and
// serviceaccount agents off). The new certificate comes the way an operator can force one: the
// hub-kubeconfig-secret is deleted, the agent bootstraps again, and the admin approves the request
// (`tether accept --skip-approve-check`: a bootstrap token alone never re-issues a joined cluster).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { CoreV1Api } from '@kubernetes/client-node';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hubKubeconfigSecretName } from '../../src/api/index.ts';
import { freePort, localChildEnv, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { approveClusterCsrs } from '../../src/registration/hub/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { apiserverThroughTunnel, getVersion } from './fixtures/apiserver-through-tunnel.ts';
import { adminKubeConfig } from './fixtures/helpers.ts';
import { env, hubKc, type JoinedCluster, joinedCluster } from './fixtures/joined-cluster.ts';

let joined: JoinedCluster;
let agent: SupervisedProcess;
let opsPort: number;
const sockets: TLSSocket[] = [];

beforeAll(async () => {
  joined = await joinedCluster('rot', 60);
  opsPort = await freePort();
  const apiserver = new URL(env.cluster1.apiserverUrl);
  agent = new SupervisedProcess({
    name: `${joined.name}/agent`,
    command: process.execPath,
    args: [
      tetherBin,
      'agent',
      `--cluster-name=${joined.name}`,
      '--agent-name=agent',
      `--kubeconfig=${env.cluster1.kubeconfigPath}`,
      `--bootstrap-kubeconfig=${joined.bootstrapKubeconfigPath}`,
      `--agent-namespace=${joined.agentNamespace}`,
      `--proxy-url=${env.tunnel.squidUrl}`,
      `--proxy-server=${env.tunnel.proxyServerAddress}`,
      `--hub-ca-file=${env.tunnel.hubCaPath}`,
      `--kube-apiserver=${apiserver.hostname}:${apiserver.port}`,
      '--no-work',
      '--no-serviceaccount',
      `--ops-port=${opsPort}`,
    ],
    logFile: join(joined.bootstrapKubeconfigPath, '..', 'agent.log'),
    env: localChildEnv({ ...process.env, TETHER_LOG_LEVEL: 'info' }),
  });
  await pollUntil(
    async () => {
      if (!agent.running) throw new Error(`tether agent exited:\n${agent.tail()}`);
      const res = await request(`http://127.0.0.1:${opsPort}/readyz`);
      await res.body.text();
      return res.statusCode === 200;
    },
    { timeoutMs: 90_000, intervalMs: 250, description: 'tether agent joined with a tunnel' },
  );
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await agent?.stop(5000);
  await joined?.cleanup();
});

const agentLog = (): string => readFileSync(agent.logFile, 'utf8');

describe('tether agent certificate rotation', () => {
  it('keeps a connection held through the tunnel across a new hub certificate, then drains the old tunnel', async () => {
    const held = await apiserverThroughTunnel(env.tunnel, joined.name, env.cluster1, sockets);
    expect((await getVersion(held)).status).toBe('HTTP/1.1 200 OK');

    await adminKubeConfig(env.cluster1)
      .makeApiClient(CoreV1Api)
      .deleteNamespacedSecret({ name: hubKubeconfigSecretName, namespace: joined.agentNamespace });
    // Until the agent has taken the second credential and holds a tunnel made with it.
    await pollUntil(
      async () => {
        await approveClusterCsrs(hubKc, joined.name, { skipApproveCheck: true });
        const log = agentLog();
        const first = log.indexOf('"msg":"hub credential ready');
        const second = first < 0 ? -1 : log.indexOf('"msg":"hub credential ready', first + 1);
        return second >= 0 && log.includes('"msg":"tunnel established"', second);
      },
      {
        timeoutMs: 60_000,
        intervalMs: 250,
        description: 'the agent to take the new certificate and open a tunnel with it',
      },
    );
    // Same TCP connection, same TLS session with the apiserver: it went through the old tunnel.
    const after = await getVersion(held);
    expect(after.status).toBe('HTTP/1.1 200 OK');
    expect(after.body).toContain('"gitVersion"');
    const fresh = await apiserverThroughTunnel(env.tunnel, joined.name, env.cluster1, sockets);
    expect((await getVersion(fresh)).status).toBe('HTTP/1.1 200 OK');
    // The old tunnel takes no new streams but stays open while the held connection uses it.
    expect(agentLog()).toContain('"msg":"draining tunnel with the replaced certificate"');
    expect(agentLog()).not.toContain('"msg":"drained tunnel closed"');

    held.destroy();
    await pollUntil(() => agentLog().includes('"msg":"drained tunnel closed"'), {
      timeoutMs: 15_000,
      intervalMs: 100,
      description: 'the old tunnel to close once its last stream ended',
    });
    expect((await getVersion(fresh)).status).toBe('HTTP/1.1 200 OK');
  });
});

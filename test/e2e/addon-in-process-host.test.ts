// The klusterlet agent's host for built-in add-on agents (src/addon/inprocess/host.ts), on cluster1's
// real apiserver: an add-on runs once the hub's ConfigMap `<addon>-in-process` and its registration
// Secret are both in one namespace, renews its Lease while healthy, takes a new certificate by
// rotating, restarts on a changed ConfigMap and stops when either goes. The runners here record what
// the host asks of them (the real ones are proved on real nodes: test/e2e/in-cluster.test.ts).
import { afterEach, describe, expect, it } from 'vitest';
import { type InProcessAddonHost, startInProcessAddonHost } from '../../src/addon/inprocess/host.ts';
import type { AddonCredential, AddonRunner, HostedAddonInput } from '../../src/addon/inprocess/runner.ts';
import { addonNameLabel } from '../../src/api/addon.ts';
import { inProcessAddonLabel } from '../../src/api/addon-in-process.ts';
import { clusterNameLabel } from '../../src/api/cluster.ts';
import {
  configMapResource,
  type Lease,
  leaseResource,
  ResourceClient,
  secretResource,
} from '../../src/kube/index.ts';
import { logger } from '../../src/log.ts';
import { registrationSecretLabel } from '../../src/registration/agent/addon/hub-kubeconfig.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';
import { scratchNamespace } from './fixtures/scratch-namespace.ts';

const env = testEnv();
const managed = adminKubeConfig(env.cluster1);
const scratch = scratchNamespace(managed, 'inproc');
const ns = scratch.namespace;
const configMaps = new ResourceClient(managed, configMapResource);
const secrets = new ResourceClient(managed, secretResource);
const leases = new ResourceClient<Lease>(managed, leaseResource);
const b64 = (s: string) => Buffer.from(s).toString('base64');

/** A runner that records its runs: what each started from, rotations, and whether it stopped. */
function recordingRunner() {
  const runs: { input: HostedAddonInput; rotations: AddonCredential[]; stopped: boolean }[] = [];
  const runner: AddonRunner = async (input) => {
    const run = { input, rotations: [] as AddonCredential[], stopped: false };
    runs.push(run);
    return {
      healthy: () => true,
      rotate: async (credential) => {
        run.rotations.push(credential);
      },
      stop: async () => {
        run.stopped = true;
      },
    };
  };
  return { runs, runner };
}

function registrationSecret(addon: string, cert: string, cluster: string) {
  return {
    metadata: {
      name: `${addon}-hub-kubeconfig`,
      namespace: ns,
      labels: { [registrationSecretLabel]: 'true', [clusterNameLabel]: cluster, [addonNameLabel]: addon },
    },
    data: { 'tls.crt': b64(cert), 'tls.key': b64('KEY') },
  };
}

function inProcessConfigMap(addon: string, data: Record<string, string>) {
  return {
    metadata: { name: `${addon}-in-process`, namespace: ns, labels: { [inProcessAddonLabel]: addon } },
    data,
  };
}

let host: InProcessAddonHost | undefined;
afterEach(async () => {
  await host?.stop();
  host = undefined;
});

describe('in-process add-on host', () => {
  it('runs an add-on once its ConfigMap and credential are there, renews its Lease, rotates, restarts and stops', async () => {
    const cluster = uniqueName('c');
    const addon = 'cluster-proxy';
    const { runs, runner } = recordingRunner();
    scratch.cleanup(async () => {
      await configMaps.delete(`${addon}-in-process`, ns, { ignoreNotFound: true });
      await secrets.delete(`${addon}-hub-kubeconfig`, ns, { ignoreNotFound: true });
      await leases.delete(addon, ns, { ignoreNotFound: true });
    });
    host = startInProcessAddonHost({
      clusterName: cluster,
      managedKubeConfig: managed,
      runners: new Map([[addon, runner]]),
      leaseDurationSeconds: 1,
      log: logger('test-addon-host'),
    });
    const eventually = (what: string, check: () => boolean | Promise<boolean>) =>
      pollUntil(check, { timeoutMs: 20_000, intervalMs: 100, description: what });

    // the credential alone (the hub still deploys the add-on as a pod): nothing runs
    await secrets.create(registrationSecret(addon, 'CERT-1', cluster));
    await eventually('the host to have synced, running nothing', () => host?.running().length === 0);
    await configMaps.create(inProcessConfigMap(addon, { 'proxy-server': 'hub:8091', 'ca.crt': 'CA' }));
    await eventually('the add-on to run', () => runs.length === 1);
    expect(runs[0]?.input).toEqual({
      namespace: ns,
      config: { 'proxy-server': 'hub:8091', 'ca.crt': 'CA' },
      credential: { certPem: 'CERT-1', keyPem: 'KEY' },
    });
    await eventually(
      'Lease cluster-proxy to be renewed',
      async () => (await leases.get(addon, ns)) !== undefined,
    );

    // a new certificate rotates the running agent; it is not restarted
    await secrets.patchMerge(`${addon}-hub-kubeconfig`, { data: { 'tls.crt': b64('CERT-2') } }, ns);
    await eventually('the rotation', () => (runs[0]?.rotations.length ?? 0) === 1);
    expect(runs[0]?.rotations[0]?.certPem).toBe('CERT-2');
    expect(runs).toHaveLength(1);

    // a changed ConfigMap restarts it with the new settings
    await configMaps.patchMerge(`${addon}-in-process`, { data: { 'proxy-server': 'hub:9091' } }, ns);
    await eventually('a restart', () => runs.length === 2);
    expect(runs[0]?.stopped).toBe(true);
    expect(runs[1]?.input.config['proxy-server']).toBe('hub:9091');
    expect(runs[1]?.input.credential.certPem).toBe('CERT-2');

    // the hub stops rendering it in-process (add-on disabled, or deployed as a pod again): it stops
    await configMaps.delete(`${addon}-in-process`, ns);
    await eventually('the add-on to stop', () => runs[1]?.stopped === true && host?.running().length === 0);
  });

  it("does not run an add-on from another cluster's credential or an add-on it was not asked to host", async () => {
    const cluster = uniqueName('c');
    const { runs, runner } = recordingRunner();
    scratch.cleanup(async () => {
      for (const addon of ['managed-serviceaccount', 'cluster-proxy']) {
        await configMaps.delete(`${addon}-in-process`, ns, { ignoreNotFound: true });
        await secrets.delete(`${addon}-hub-kubeconfig`, ns, { ignoreNotFound: true });
      }
    });
    const { runs: proxyRuns, runner: proxyRunner } = recordingRunner();
    host = startInProcessAddonHost({
      clusterName: cluster,
      managedKubeConfig: managed,
      runners: new Map([
        ['managed-serviceaccount', runner],
        ['cluster-proxy', proxyRunner],
      ]),
      leaseDurationSeconds: 1,
      log: logger('test-addon-host'),
    });
    // managed-serviceaccount: a credential written for another cluster
    await secrets.create(registrationSecret('managed-serviceaccount', 'OTHER', uniqueName('other')));
    await configMaps.create(inProcessConfigMap('managed-serviceaccount', {}));
    // cluster-proxy: its ConfigMap and credential, the control case
    await secrets.create(registrationSecret('cluster-proxy', 'CERT', cluster));
    await configMaps.create(
      inProcessConfigMap('cluster-proxy', { 'proxy-server': 'hub:8091', 'ca.crt': 'CA' }),
    );
    await pollUntil(async () => proxyRuns.length === 1, {
      timeoutMs: 20_000,
      intervalMs: 100,
      description: 'cluster-proxy to run',
    });
    expect(runs).toEqual([]);
    expect(host.running()).toEqual(['cluster-proxy']);
  });
});

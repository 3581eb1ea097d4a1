// Issue 23, a flood of CertificateSigningRequests: a hostile managed cluster's identity and a
// bootstrap-token holder each create hundreds of CSRs for another, joined cluster's identity. None
// is approved, and meanwhile that cluster's own renewal and a new cluster's join are still approved
// within seconds. The real kube-controller-manager signs what is approved; the agents are clients
// with certificates minted from the hub CA.
import { describe, expect, it } from 'vitest';
import { createCertificateRequest } from '../../src/pki/index.ts';
import { agentSubject } from '../../src/tunnel/identity.ts';
import { kubectl, uniqueName } from './fixtures/helpers.ts';
import {
  admin,
  agentKubeconfig,
  approvalOf,
  clientsFor,
  createCluster,
  env,
  joinedCluster,
  kubeconfigAs,
  requestCertificate,
  scopedHubWithBootstrapUser,
  waitFor,
} from './fixtures/registration-hub.ts';

const { scope, cleanups, bootstrapUser } = scopedHubWithBootstrapUser('csrflood');
const floodLabel = 'e2e.tether.dev/csr-flood';

type Clients = ReturnType<typeof clientsFor>;

/** `count` CSRs through `csrs` for `victim`'s agent identity, `parallel` at a time; their names. */
async function flood(csrs: Clients['csrs'], victim: string, tag: string, count: number): Promise<string[]> {
  const { csrPem } = await createCertificateRequest(agentSubject(victim, 'agent1'));
  const names: string[] = [];
  const parallel = 25;
  for (let start = 0; start < count; start += parallel) {
    const batch = Array.from({ length: Math.min(parallel, count - start) }, (_, i) => `${tag}-${start + i}`);
    await Promise.all(
      batch.map((name) =>
        csrs.create({
          metadata: {
            name,
            labels: { 'open-cluster-management.io/cluster-name': victim, [floodLabel]: scope },
          },
          spec: {
            request: Buffer.from(csrPem).toString('base64'),
            signerName: 'kubernetes.io/kube-apiserver-client',
            usages: ['client auth', 'digital signature', 'key encipherment'],
          },
        }),
      ),
    );
    names.push(...batch);
  }
  return names;
}

/**
 * Right behind a flood: `victim` renews and a new cluster joins; both must be approved within 5 s.
 * Before the fix both took ≈ 10 s behind 500 junk CSRs: queued on one cluster, they held every
 * approver worker.
 */
async function othersStillApproved(victim: string, bootstrap: Clients) {
  const asked = Date.now();
  const victimAgent = clientsFor(await agentKubeconfig(victim));
  const renewal = await requestCertificate(cleanups, victimAgent.csrs, {
    subject: agentSubject(victim, 'agent1'),
    cluster: victim,
  });
  const newcomer = await createCluster(cleanups, scope);
  const join = await requestCertificate(cleanups, bootstrap.csrs, {
    subject: agentSubject(newcomer, 'agent1'),
    cluster: newcomer,
  });
  const approvedWithin = async (csr: string) => {
    await waitFor(
      async () => approvalOf(await admin.csrs.get(csr)),
      `${csr} approved during the flood`,
      5_000,
    );
    return Date.now() - asked;
  };
  const [renewalMs, joinMs] = await Promise.all([approvedWithin(renewal), approvedWithin(join)]);
  return { renewalMs, joinMs };
}

/** The flood's CSRs go when the test ends; a joined victim and the bootstrap user's clients. */
async function floodScene() {
  cleanups.add(() =>
    kubectl(env.hub.kubeconfigPath, ['delete', 'csr', '-l', `${floodLabel}=${scope}`, '--wait=false'], {
      timeoutMs: 120_000,
    }),
  );
  const bootstrap = clientsFor(await kubeconfigAs({ commonName: bootstrapUser }));
  const victim = await joinedCluster(cleanups, scope, bootstrap.csrs);
  return { bootstrap, victim };
}

describe('a flood of CSRs', () => {
  it('a cluster identity and a bootstrap identity flooding 500 CSRs get none approved, and another cluster’s renewal and a new join are approved within seconds', async () => {
    const { bootstrap, victim } = await floodScene();
    const attacker = await createCluster(cleanups, scope);
    const attackerAgent = clientsFor(await agentKubeconfig(attacker));
    await waitFor(
      () => attackerAgent.csrs.list({ labelSelector: floodLabel }).then(Boolean, () => false),
      `the hub to grant ${attacker}'s agent its CSR rights`,
    );

    const floodStart = Date.now();
    const [fromCluster, fromBootstrap] = await Promise.all([
      flood(attackerAgent.csrs, victim, uniqueName('flood-cluster'), 250),
      flood(bootstrap.csrs, victim, uniqueName('flood-bootstrap'), 250),
    ]);
    const floodMs = Date.now() - floodStart;

    const { renewalMs, joinMs } = await othersStillApproved(victim, bootstrap);
    console.log(
      `500 junk CSRs created in ${floodMs} ms; renewal approved after ${renewalMs} ms, join after ${joinMs} ms`,
    );

    const junk = (await admin.csrs.list({ labelSelector: `${floodLabel}=${scope}` })).items;
    expect(junk.map((c) => c.metadata?.name).sort()).toEqual([...fromCluster, ...fromBootstrap].sort());
    expect(junk.filter((c) => approvalOf(c)).map((c) => c.metadata?.name)).toEqual([]);
  });

  it('a cluster identity renewing its own certificate 500 times does not hold up another cluster’s renewal or a new join', async () => {
    const { bootstrap, victim } = await floodScene();
    const attacker = await joinedCluster(cleanups, scope, bootstrap.csrs);
    const attackerAgent = clientsFor(await agentKubeconfig(attacker));
    const floodStart = Date.now();
    // Valid renewals, approved as OCM approves them: what they must not do is starve the others.
    await flood(attackerAgent.csrs, attacker, uniqueName('flood-renewal'), 500);
    const floodMs = Date.now() - floodStart;
    const { renewalMs, joinMs } = await othersStillApproved(victim, bootstrap);
    console.log(
      `500 renewals created in ${floodMs} ms; renewal approved after ${renewalMs} ms, join after ${joinMs} ms`,
    );
  });
});

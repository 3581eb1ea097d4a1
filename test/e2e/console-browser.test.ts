// The console in a real browser: headless Chromium (Debian's chromium-headless-shell) drives the page
// (puppeteer-core, test/e2e/fixtures/browser.ts) against the shared hub. It shows cluster1 on the fleet page and
// turns it Unavailable within seconds of its condition changing (a watch, not a reload); a cluster
// page shows a work with its conditions and status feedback; the placements page a placement's
// decisions, the events page an event filtered by cluster; a user who may not list
// ManagedClusters sees the forbidden panel quoting the apiserver, not an empty table; and the page
// runs under its Content-Security-Policy without a violation or an uncaught exception. Screenshots
// of each state are saved (their folder is printed).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type ManagedCluster,
  type ManifestWork,
  managedClusterResource,
  manifestWorkResource,
  type Placement,
  type PlacementDecision,
  placementDecisionResource,
  placementResource,
} from '../../src/api/index.ts';
import { ConsoleServer } from '../../src/console/index.ts';
import { type KubeObject, kubeconfigFromParts, ResourceClient } from '../../src/kube/index.ts';
import { issueCertificate, loadCertificateAuthority } from '../../src/pki/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { removeScreenshotDir, screenshotDir, startBrowserPage } from './fixtures/browser.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';
import { Cleanups } from './fixtures/registration-hub.ts';

const env = testEnv();
const hubKc = adminKubeConfig(env.hub);
const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
const works = new ResourceClient<ManifestWork>(hubKc, manifestWorkResource);
const namespaces = new ResourceClient(hubKc, {
  group: '',
  version: 'v1',
  plural: 'namespaces',
  kind: 'Namespace',
  namespaced: false,
});
const secrets = new ResourceClient(hubKc, {
  group: '',
  version: 'v1',
  plural: 'secrets',
  kind: 'Secret',
  namespaced: true,
});
const cleanups = new Cleanups();
afterEach(() => cleanups.run());

type Browser = Awaited<ReturnType<typeof startBrowser>>;

/** Headless Chromium with one page (test/e2e/fixtures/browser.ts), closed by `cleanups`. */
async function startBrowser() {
  const b = await startBrowserPage(shots);
  cleanups.add(() => b.close());
  return {
    navigate: (url: string) => b.page.goto(url),
    evaluate: async <T>(expression: string): Promise<T> => (await b.page.evaluate(expression)) as T,
    screenshot: async (path: string): Promise<void> => {
      await b.page.screenshot({ path, fullPage: true });
    },
    /** exceptions and CSP/other console errors the page reported */
    errors: b.errors,
  };
}

/** Polls the page until `expression` is truthy; returns its value. */
function waitInPage<T>(
  page: Browser,
  expression: string,
  description: string,
  timeoutMs = 15_000,
): Promise<T> {
  return pollUntil(() => page.evaluate<T>(expression), { timeoutMs, intervalMs: 100, description });
}

let shots: string;
let console_: ConsoleServer;
let createdCluster1 = false;
let createdNamespace = false;
let originalStatus: ManagedCluster['status'];

const available = (status: 'True' | 'False') => ({
  type: 'ManagedClusterConditionAvailable',
  status,
  reason: status === 'True' ? 'ManagedClusterAvailable' : 'ManagedClusterLeaseUpdateStopped',
  message: status === 'True' ? 'cluster is available' : 'the agent stopped updating its lease',
  lastTransitionTime: new Date().toISOString(),
});

describe('the console in headless Chromium (Debian chromium-headless-shell, installed by hack/deps.sh)', () => {
  beforeAll(async () => {
    shots = screenshotDir('console-browser');
    const existing = await clusters.get('cluster1');
    if (!existing) {
      await clusters.create({ metadata: { name: 'cluster1' }, spec: { hubAcceptsClient: true } });
      createdCluster1 = true;
    }
    originalStatus = existing?.status;
    if (!(await namespaces.get('cluster1'))) {
      await namespaces.create({ metadata: { name: 'cluster1' } });
      createdNamespace = true;
    }
    await clusters.patchStatus('cluster1', {
      status: {
        conditions: [
          {
            type: 'ManagedClusterJoined',
            status: 'True',
            reason: 'ManagedClusterJoined',
            message: 'joined',
            lastTransitionTime: new Date().toISOString(),
          },
          available('True'),
        ],
        allocatable: { cpu: '3500m', memory: '7Gi' },
        capacity: { cpu: '4', memory: '8Gi' },
      },
    });
    console_ = new ConsoleServer({ kubeConfig: hubKc });
    await console_.start();
  });

  afterAll(async () => {
    await console_?.stop();
    if (createdCluster1) await clusters.delete('cluster1', undefined, { ignoreNotFound: true });
    else {
      // put back what this file changed: the conditions, and the resources it set
      const { conditions = null, allocatable = null, capacity = null } = originalStatus ?? {};
      await clusters.patchStatus('cluster1', { status: { conditions, allocatable, capacity } });
    }
    if (createdNamespace) await namespaces.delete('cluster1', undefined, { ignoreNotFound: true });
  });

  it('shows cluster1 Available, then Unavailable within seconds of its condition changing', async () => {
    const page = await startBrowser();
    await page.navigate(`${console_.url}#/`);
    const row = '[data-testid="cluster-row-cluster1"]';
    expect(
      await waitInPage<string>(
        page,
        `document.querySelector('${row}')?.dataset.available`,
        'cluster1 on the fleet page',
      ),
    ).toBe('True');
    expect(
      await page.evaluate<boolean>(`!!document.querySelector('[data-testid="availability-plot"] canvas')`),
    ).toBe(true);
    expect(await page.evaluate<string>(`document.querySelector('${row}').textContent`)).toContain('3.5 / 4');
    await page.screenshot(join(shots, 'fleet-available.png'));

    const changed = Date.now();
    await clusters.patchStatus('cluster1', {
      status: {
        conditions: [(await clusters.get('cluster1'))?.status?.conditions?.[0], available('False')],
      },
    });
    await waitInPage(
      page,
      `document.querySelector('${row}')?.dataset.available === 'False'`,
      'cluster1 Unavailable',
      10_000,
    );
    const seconds = (Date.now() - changed) / 1000;
    expect(seconds).toBeLessThan(5);
    expect(
      await page.evaluate<string>(`document.querySelector('[data-testid="fleet-summary"]').textContent`),
    ).toBe('0 of 1 clusters available');
    await page.screenshot(join(shots, 'fleet-unavailable.png'));
    expect(page.errors).toEqual([]);
  });

  it('shows a work with its conditions and status feedback on the cluster page', async () => {
    const name = uniqueName('console-work');
    await works.create({
      metadata: { name, namespace: 'cluster1' },
      spec: {
        workload: {
          manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' } }],
        },
      },
    });
    cleanups.add(() => works.delete(name, 'cluster1', { ignoreNotFound: true }));
    const now = new Date().toISOString();
    await works.patchStatus(
      name,
      {
        status: {
          conditions: ['Applied', 'Available'].map((type) => ({
            type,
            status: 'True',
            reason: type,
            message: `${type} by the e2e test`,
            lastTransitionTime: now,
          })),
          resourceStatus: {
            manifests: [
              {
                resourceMeta: {
                  ordinal: 0,
                  group: '',
                  version: 'v1',
                  kind: 'ConfigMap',
                  resource: 'configmaps',
                  name,
                  namespace: 'default',
                },
                statusFeedback: {
                  values: [{ name: 'replicas', fieldValue: { type: 'Integer', integer: 3 } }],
                },
                conditions: [],
              },
            ],
          },
        },
      },
      'cluster1',
    );
    const page = await startBrowser();
    await page.navigate(`${console_.url}#/clusters/cluster1`);
    const row = `[data-testid="work-row-${name}"]`;
    expect(
      await waitInPage<string>(
        page,
        `document.querySelector('${row}')?.dataset.applied`,
        `work ${name} on the cluster page`,
      ),
    ).toBe('True');
    expect(await page.evaluate<string>(`document.querySelector('${row}').dataset.degraded`)).toBe('Unknown');
    expect(await page.evaluate<string>(`document.querySelector('${row}').textContent`)).toContain(
      `ConfigMap/${name} replicas=3`,
    );
    expect(await page.evaluate<boolean>(`!!document.querySelector('section[data-testid="tunnel"]')`)).toBe(
      true,
    );
    await page.screenshot(join(shots, 'cluster-work.png'));
    expect(page.errors).toEqual([]);
  });

  it("shows a placement with the clusters its decisions chose, and cluster1's events", async () => {
    const ns = uniqueName('console-placement');
    await namespaces.create({ metadata: { name: ns } });
    cleanups.add(() => namespaces.delete(ns, undefined, { ignoreNotFound: true }));
    const placements = new ResourceClient<Placement>(hubKc, placementResource);
    const decisions = new ResourceClient<PlacementDecision>(hubKc, placementDecisionResource);
    await placements.create({ metadata: { name: 'web', namespace: ns }, spec: {} });
    const decision = `web-decision-1`;
    await decisions.create({
      metadata: {
        name: decision,
        namespace: ns,
        labels: { 'cluster.open-cluster-management.io/placement': 'web' },
      },
    });
    await decisions.patchStatus(
      decision,
      { status: { decisions: [{ clusterName: 'cluster1', reason: '' }] } },
      ns,
    );
    const events = new ResourceClient<KubeObject & Record<string, unknown>>(hubKc, {
      group: '',
      version: 'v1',
      plural: 'events',
      kind: 'Event',
      namespaced: true,
    });
    const eventName = uniqueName('console-event');
    await events.create({
      metadata: { name: eventName, namespace: 'cluster1' },
      involvedObject: {
        kind: 'ManifestWork',
        name: eventName,
        namespace: 'cluster1',
        apiVersion: 'work.open-cluster-management.io/v1',
      },
      reason: 'ConsoleTest',
      message: `seen by ${eventName}`,
      type: 'Warning',
      firstTimestamp: new Date().toISOString(),
      lastTimestamp: new Date().toISOString(),
      count: 1,
      source: { component: 'console-e2e' },
    });
    cleanups.add(() => events.delete(eventName, 'cluster1', { ignoreNotFound: true }));

    const page = await startBrowser();
    await page.navigate(`${console_.url}#/placements`);
    const row = `[data-testid="placement-row-${ns}-web"]`;
    expect(
      await waitInPage<string>(
        page,
        `document.querySelector('${row}')?.textContent.includes('cluster1') && document.querySelector('${row}').textContent`,
        'placement web with its decision',
      ),
    ).toContain('web');
    await page.screenshot(join(shots, 'placements.png'));

    await page.evaluate(`location.hash = '#/events'`);
    await waitInPage(
      page,
      `document.querySelector('[data-testid="events-table"]')?.textContent.includes('seen by ${eventName}')`,
      'the event',
    );
    // filtered to cluster1 (its namespace), the event stays
    await page.evaluate(`(() => {
      const select = document.querySelector('[data-testid="events-cluster"]');
      select.value = 'cluster1';
      select.dispatchEvent(new Event('change'));
    })()`);
    await waitInPage(
      page,
      `document.querySelector('[data-testid="events-table"]')?.textContent.includes('ConsoleTest')`,
      'the event for cluster1',
    );
    await page.screenshot(join(shots, 'events.png'));
    expect(page.errors).toEqual([]);
  });

  it('renders every page again after visiting all of them (watches give back their connections)', async () => {
    // Chromium keeps six HTTP/1.1 connections per host and each watch holds one: the watches of
    // pages left behind must end, or the next page's lists queue behind them and never render.
    const page = await startBrowser();
    await page.navigate(`${console_.url}#/`);
    const visits: Array<[string, string]> = [
      ['#/', 'fleet-table'],
      ['#/clusters/cluster1', 'works'],
      ['#/placements', 'placements-page'],
      ['#/events', 'events-page'],
      ['#/clusters/cluster1', 'works'],
      ['#/placements', 'placements-page'],
      ['#/', 'fleet-table'],
    ];
    for (const [hash, testid] of visits) {
      await page.evaluate(`location.hash = '${hash}'`);
      // rendered and loaded: the page's sections show no "Loading…" any more
      await waitInPage(
        page,
        `!!document.querySelector('[data-testid="${testid}"]') && !document.querySelector('[data-testid="loading"]')`,
        `${hash} to render with its data`,
        10_000,
      );
    }
    expect(page.errors).toEqual([]);
  });

  it("keeps the console's token out of the page's URL, browser storage and cookies after visiting every page", async () => {
    const page = await startBrowser();
    await page.navigate(`${console_.url}#/`);
    for (const hash of ['#/', '#/clusters/cluster1', '#/placements', '#/events']) {
      await page.evaluate(`location.hash = '${hash}'`);
      await waitInPage(page, `!document.querySelector('[data-testid="loading"]')`, `${hash} to load`, 10_000);
    }
    const kept = await page.evaluate<{ href: string; local: string; session: string; cookie: string }>(
      `({ href: location.href, local: JSON.stringify({ ...localStorage }), session: JSON.stringify({ ...sessionStorage }), cookie: document.cookie })`,
    );
    expect(kept.href).not.toContain(console_.token);
    expect(kept.local).toBe('{}');
    expect(kept.session).toBe('{}');
    expect(kept.cookie).toBe('');
    expect(page.errors).toEqual([]);
  });

  it('shows a user who may not list ManagedClusters the forbidden panel, quoting the apiserver', async () => {
    const user = uniqueName('console-browser-viewer');
    const ca = await loadCertificateAuthority(
      readFileSync(env.hub.caCertPath, 'utf8'),
      readFileSync(env.hub.caKeyPath, 'utf8'),
    );
    const cert = await issueCertificate(ca, { commonName: user, usage: 'client', validitySeconds: 3600 });
    const viewer = new ConsoleServer({
      kubeConfig: kubeconfigFromParts({
        name: user,
        server: env.hub.apiserverUrl,
        caPem: readFileSync(env.hub.caCertPath, 'utf8'),
        certPem: cert.certPem,
        keyPem: cert.keyPem,
      }),
    });
    await viewer.start();
    cleanups.add(() => viewer.stop());
    const page = await startBrowser();
    await page.navigate(`${viewer.url}#/`);
    const text = await waitInPage<string>(
      page,
      `document.querySelector('[data-testid="forbidden"]')?.textContent`,
      'the forbidden panel',
    );
    expect(text).toContain(`User "${user}" cannot list resource "managedclusters"`);
    expect(await page.evaluate<boolean>(`!!document.querySelector('[data-testid="fleet-table"]')`)).toBe(
      false,
    );
    await page.screenshot(join(shots, 'fleet-forbidden.png'));
    // the 403s of the page's own requests are logged as network errors; nothing else may be
    expect(page.errors.filter((e) => !e.includes('403'))).toEqual([]);
  });
});

afterAll(() => {
  removeScreenshotDir(shots);
});

// What clusteradm does against a hub, call for call, as ../shared/ocm/clusteradm.md records it
// (clusteradm b75b40c, OCM API v1.3): the same objects, names, labels, patches and selectors, so
// the compatibility tests can run each operation against tether's hub and check what a clusteradm
// user would see. Written from the facts, not from clusteradm's code. Only what the tests use:
// `get token`, `join`'s bootstrap kubeconfig, `accept`, `get clusters|works|addon`, `create work`,
// `delete work`, `addon enable|disable`.
import {
  ApisApi,
  CertificatesV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1CertificateSigningRequest,
  Watch,
} from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { isNotFound } from '../../src/kube/index.ts';
import { certificateRequestSubject } from '../../src/pki/index.ts';

const cluster = { group: 'cluster.open-cluster-management.io', version: 'v1', plural: 'managedclusters' };
const work = { group: 'work.open-cluster-management.io', version: 'v1', plural: 'manifestworks' };
const addonGroup = 'addon.open-cluster-management.io';
const cmas = { group: addonGroup, version: 'v1alpha1', plural: 'clustermanagementaddons' };
const mcas = { group: addonGroup, version: 'v1alpha1', plural: 'managedclusteraddons' };
export const clusterSetLabel = 'cluster.open-cluster-management.io/clusterset';

type Obj = {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; finalizers?: string[] };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};
type Condition = { type: string; status: string };

const conditionStatus = (o: Obj, type: string): string =>
  ((o.status?.conditions as Condition[] | undefined) ?? []).find((c) => c.type === type)?.status ?? '';

/** Every hub command's preflight: discovery must list managedclusters in cluster.open-cluster-management.io/v1. */
export async function isHub(hub: KubeConfig): Promise<boolean> {
  const groups = await hub.makeApiClient(ApisApi).getAPIVersions();
  if (!groups.groups.some((g) => g.name === cluster.group && g.versions.some((v) => v.version === 'v1'))) {
    return false;
  }
  const res = await hub
    .makeApiClient(CustomObjectsApi)
    .getAPIResources({ group: cluster.group, version: 'v1' });
  return res.resources.some((r) => r.name === cluster.plural);
}

/** `clusteradm get token`: a TokenRequest for open-cluster-management/agent-registration-bootstrap, 3600 s. */
export async function getToken(hub: KubeConfig): Promise<string> {
  const tr = await hub.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name: 'agent-registration-bootstrap',
    namespace: 'open-cluster-management',
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  return tr.status?.token ?? '';
}

/** `clusteradm join`'s bootstrap kubeconfig: cluster `hub`, user `bootstrap`, context `bootstrap` (namespace default). */
export function joinBootstrapKubeconfig(p: {
  server: string;
  caPem: string;
  token: string;
  proxyUrl?: string;
}) {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'hub',
        cluster: {
          server: p.server,
          'certificate-authority-data': Buffer.from(p.caPem).toString('base64'),
          ...(p.proxyUrl ? { 'proxy-url': p.proxyUrl } : {}),
        },
      },
    ],
    users: [{ name: 'bootstrap', user: { token: p.token } }],
    contexts: [{ name: 'bootstrap', context: { cluster: 'hub', user: 'bootstrap', namespace: 'default' } }],
    'current-context': 'bootstrap',
  });
}

/** `clusteradm join` on the managed cluster: Secret `bootstrap-hub-kubeconfig`, type Opaque, key `kubeconfig`. */
export async function writeJoinSecret(managed: KubeConfig, namespace: string, kubeconfig: string) {
  const core = managed.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } }).catch(() => {});
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: 'bootstrap-hub-kubeconfig', namespace },
      type: 'Opaque',
      stringData: { kubeconfig },
    },
  });
}

const eligibleUsers = [
  'system:serviceaccount:open-cluster-management:agent-registration-bootstrap',
  'system:serviceaccount:open-cluster-management-hub:grpc-server-sa',
];
const eligibleGroups = [
  'system:bootstrappers:managedcluster',
  'system:serviceaccounts:open-cluster-management',
  'system:serviceaccounts:open-cluster-management-hub',
];

/** Whether clusteradm accept (without --skip-approve-check) would consider this CSR. */
export function acceptEligible(csr: V1CertificateSigningRequest): boolean {
  const user = csr.spec.username ?? '';
  const userOk = user.startsWith('system:bootstrap:') || eligibleUsers.includes(user);
  return userOk && (csr.spec.groups ?? []).some((g) => eligibleGroups.includes(g));
}

export interface AcceptResult {
  /** CSRs approved by this call (names) */
  approved: string[];
  /** whether at least one CSR of the cluster is approved now */
  anyApproved: boolean;
}

/** `clusteradm accept --clusters <name>` once (no --wait): approve the cluster's CSRs, then accept it. */
export async function accept(hub: KubeConfig, name: string, argv0 = 'clusteradm'): Promise<AcceptResult> {
  const objects = hub.makeApiClient(CustomObjectsApi);
  const mc = (await objects.getClusterCustomObject({ ...cluster, name })) as Obj;
  const certs = hub.makeApiClient(CertificatesV1Api);
  const list = await certs.listCertificateSigningRequest({
    labelSelector: `open-cluster-management.io/cluster-name=${name}`,
  });
  const eligible = list.items.filter(acceptEligible);
  const requesters = new Set(
    eligible.map(
      (c) => certificateRequestSubject(Buffer.from(c.spec.request, 'base64').toString()).commonName,
    ),
  );
  const approved: string[] = [];
  let anyApproved = false;
  if (requesters.size <= 1) {
    for (const csr of eligible) {
      const conditions = csr.status?.conditions ?? [];
      if (conditions.some((c) => c.type === 'Denied')) continue;
      if (conditions.some((c) => c.type === 'Approved')) {
        anyApproved = true;
        continue;
      }
      const body: V1CertificateSigningRequest = {
        ...csr,
        status: {
          ...csr.status,
          conditions: [
            ...conditions,
            {
              type: 'Approved',
              status: 'True',
              reason: `${argv0} Approve`,
              message: `This CSR was approved by ${argv0} certificate approve.`,
              lastUpdateTime: new Date(),
            },
          ],
        },
      };
      await certs.replaceCertificateSigningRequestApproval({ name: csr.metadata?.name ?? '', body });
      approved.push(csr.metadata?.name ?? '');
      anyApproved = true;
    }
  }
  if (mc.spec?.hubAcceptsClient !== true) {
    await objects.patchClusterCustomObject(
      { ...cluster, name, body: { spec: { hubAcceptsClient: true } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }
  return { approved, anyApproved };
}

/** `clusteradm get clusters -o table`: one row per ManagedCluster, clusteradm's columns. */
export async function getClusters(hub: KubeConfig): Promise<Record<string, string>[]> {
  const list = (await hub.makeApiClient(CustomObjectsApi).listClusterCustomObject(cluster)) as {
    items: Obj[];
  };
  return list.items.map((mc) => {
    const capacity = (mc.status?.capacity ?? {}) as Record<string, string>;
    const version = (mc.status?.version ?? {}) as { kubernetes?: string };
    return {
      NAME: mc.metadata.name,
      ACCEPTED: String(mc.spec?.hubAcceptsClient === true),
      AVAILABLE: conditionStatus(mc, 'ManagedClusterConditionAvailable'),
      CLUSTERSET: mc.metadata.labels?.[clusterSetLabel] ?? '',
      CPU: String(capacity.cpu ?? ''),
      MEMORY: String(capacity.memory ?? ''),
      'KUBERNETES VERSION': version.kubernetes ?? '',
    };
  });
}

/** `clusteradm get works --cluster <c>`: table rows and the tree's Resources lines. */
export async function getWorks(hub: KubeConfig, clusterName: string) {
  const objects = hub.makeApiClient(CustomObjectsApi);
  await objects.getClusterCustomObject({ ...cluster, name: clusterName });
  const list = (await objects.listNamespacedCustomObject({ ...work, namespace: clusterName })) as {
    items: Obj[];
  };
  return list.items.map((w) => {
    const manifests = ((w.status?.resourceStatus as { manifests?: unknown[] } | undefined)?.manifests ??
      []) as {
      resourceMeta: { resource: string; namespace?: string; name: string };
      conditions?: Condition[];
    }[];
    const resources: Record<string, string> = {};
    for (const m of manifests) {
      const key = `${m.resourceMeta.resource}.${m.resourceMeta.namespace ? `${m.resourceMeta.namespace}/` : ''}${m.resourceMeta.name}`;
      const applied = (m.conditions ?? []).find((c) => c.type === 'Applied')?.status;
      resources[key] = applied === 'True' ? 'applied' : applied === 'False' ? 'not-applied' : 'unknown';
    }
    return {
      row: {
        NAME: w.metadata.name,
        CLUSTER: w.metadata.namespace ?? '',
        'NUMBER OF MANIFESTS': String(
          ((w.spec?.workload as { manifests?: unknown[] })?.manifests ?? []).length,
        ),
        APPLIED: conditionStatus(w, 'Applied'),
        AVAILABLE: conditionStatus(w, 'Available'),
      },
      resources,
    };
  });
}

/** `clusteradm create work <name> -f … --clusters <c> [--overwrite]`. */
export async function createWork(
  hub: KubeConfig,
  name: string,
  clusterName: string,
  manifests: unknown[],
  overwrite: boolean,
): Promise<'created' | 'exists' | 'updated'> {
  const objects = hub.makeApiClient(CustomObjectsApi);
  let existing: Obj | undefined;
  try {
    existing = (await objects.getNamespacedCustomObject({ ...work, namespace: clusterName, name })) as Obj;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  if (!existing) {
    await objects.createNamespacedCustomObject({
      ...work,
      namespace: clusterName,
      body: {
        apiVersion: `${work.group}/${work.version}`,
        kind: 'ManifestWork',
        metadata: { name, namespace: clusterName },
        spec: { workload: { manifests } },
      },
    });
    return 'created';
  }
  if (!overwrite) return 'exists';
  existing.spec = { ...existing.spec, workload: { manifests } };
  await objects.replaceNamespacedCustomObject({ ...work, namespace: clusterName, name, body: existing });
  return 'updated';
}

/** `clusteradm delete work <name> --cluster <c>`: DELETE, then any Deleted event in the namespace within 10 s. */
export async function deleteWork(hub: KubeConfig, name: string, clusterName: string): Promise<void> {
  const objects = hub.makeApiClient(CustomObjectsApi);
  await objects.getNamespacedCustomObject({ ...work, namespace: clusterName, name });
  let stop: (() => void) | undefined;
  const deleted = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error('clusteradm delete work: no Deleted event within 10 s')),
      10_000,
    );
    void new Watch(hub)
      .watch(
        `/apis/${work.group}/${work.version}/namespaces/${clusterName}/${work.plural}`,
        {},
        (type) => {
          if (type === 'DELETED') {
            clearTimeout(timer);
            resolve();
          }
        },
        (err) => {
          if (err && (err as { name?: string }).name !== 'AbortError') reject(err);
        },
      )
      .then((ctl) => {
        stop = () => ctl.abort();
      });
  });
  try {
    await objects.deleteNamespacedCustomObject({ ...work, namespace: clusterName, name });
    await deleted;
  } finally {
    stop?.();
  }
}

/** `clusteradm addon enable --names <a> --clusters <c> [-n ns]`. */
export async function addonEnable(
  hub: KubeConfig,
  addon: string,
  clusterName: string,
  installNamespace = 'open-cluster-management-agent-addon',
): Promise<void> {
  const objects = hub.makeApiClient(CustomObjectsApi);
  await objects.getClusterCustomObject({ ...cluster, name: clusterName });
  try {
    await objects.getClusterCustomObject({ ...cmas, name: addon });
  } catch (err) {
    if (isNotFound(err)) throw new Error(`enabling the unknown addon ${addon} is not supported`);
    throw err;
  }
  await objects.createNamespacedCustomObject({
    ...mcas,
    namespace: clusterName,
    body: {
      apiVersion: `${mcas.group}/${mcas.version}`,
      kind: 'ManagedClusterAddOn',
      metadata: { name: addon, namespace: clusterName, labels: {}, annotations: {} },
      spec: { installNamespace },
    },
  });
}

/** `clusteradm addon disable --names <a> --clusters <c>`: deletes the ManagedClusterAddOn only. */
export async function addonDisable(hub: KubeConfig, addon: string, clusterName: string): Promise<void> {
  await hub.makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject({
    ...mcas,
    namespace: clusterName,
    name: addon,
  });
}

/** `clusteradm get addon -o table`: NAME and INSTALLEDCLUSTERS (MCAs of that name in any namespace). */
export async function getAddons(hub: KubeConfig): Promise<Record<string, string>[]> {
  const objects = hub.makeApiClient(CustomObjectsApi);
  const cmaList = (await objects.listClusterCustomObject(cmas)) as { items: Obj[] };
  const mcaList = (await objects.listClusterCustomObject(mcas)) as { items: Obj[] };
  return cmaList.items.map((c) => ({
    NAME: c.metadata.name,
    INSTALLEDCLUSTERS: String(mcaList.items.filter((m) => m.metadata.name === c.metadata.name).length),
  }));
}

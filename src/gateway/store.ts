// The ClusterGateway store: informers on ManagedClusters and credential Secrets on the hub turn
// into one ClusterGateway per reachable cluster, plus (never served) what the proxy needs to reach
// it: endpoint, CA, server name and credential. Each visible change bumps a store-wide
// resourceVersion and goes into a bounded event log, so list + watch behave like the apiserver's
// ("watch from the list's resourceVersion", 410 Gone when that is older than the log).
//
// Sources, by precedence for one name:
//   1. cluster-gateway's credential Secret `<credentialNamespace>/<name>` (label
//      cluster.core.oam.dev/cluster-credential-type): endpoint Const (dialled directly) unless the
//      endpoint-type label says ClusterProxy;
//   2. an accepted ManagedCluster `<name>` whose ManagedServiceAccount token Secret `<msaName>`
//      exists in namespace `<name>`: endpoint ClusterProxy (through the tunnel).
import type { KubeConfig } from '@kubernetes/client-node';
import { type ManagedCluster, managedClusterResource, managedServiceAccountLabel } from '../api/index.ts';
import { Informer, type KubeObject, ResourceClient, secretResource } from '../kube/index.ts';
import type { Logger } from '../log.ts';
import {
  type ClusterEndpointType,
  type ClusterGateway,
  CredentialSecretKey,
  credentialTypeLabel,
  endpointTypeLabel,
  gatewayGroupVersion,
  HealthyReason,
  impersonateAnnotation,
} from './types.ts';

interface Secret extends KubeObject {
  data?: Record<string, string>;
}

export type UpstreamCredential =
  | { type: 'ServiceAccountToken'; token: string }
  | { type: 'X509Certificate'; certPem: string; keyPem: string }
  /** the caller's own credential goes through (the user-server): the gateway adds none */
  | { type: 'None' };

/** How to reach one cluster's apiserver. Holds secrets: never logged, never served. */
export interface Upstream {
  cluster: string;
  endpointType: ClusterEndpointType;
  /** https URL of the apiserver as its certificate names it (host = TLS server name) */
  url: URL;
  /** CA bundle the apiserver's certificate must chain to; undefined = cannot be verified */
  caPem: string | undefined;
  credential: UpstreamCredential;
  impersonate: boolean;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  type: WatchEventType;
  object: ClusterGateway;
  /** the state before a MODIFIED (selectors may have matched it and no longer match, or the reverse) */
  old?: ClusterGateway;
  rv: number;
}

interface Entry {
  object: ClusterGateway;
  upstream: Upstream;
}

export interface ClusterGatewayStoreOptions {
  hubKubeConfig: KubeConfig;
  msaName: string;
  credentialNamespace: string;
  /** events kept for watches that resume from an older resourceVersion (default 1000) */
  eventLogSize?: number;
  log: Logger;
}

const decode = (data: Record<string, string> | undefined, key: string): string | undefined => {
  const v = data?.[key];
  return v ? Buffer.from(v, 'base64').toString('utf8') : undefined;
};

export class ClusterGatewayStore {
  private readonly clusters: Informer<ManagedCluster>;
  private readonly msaSecrets: Informer<Secret>;
  private readonly credentialSecrets: Informer<Secret>;
  private readonly opts: ClusterGatewayStoreOptions;
  private readonly entries = new Map<string, Entry>();
  private readonly health = new Map<string, { healthy: boolean; reason?: string }>();
  private readonly listeners = new Set<(e: StoreEvent) => void>();
  private readonly eventLog: StoreEvent[] = [];
  private readonly eventLogSize: number;
  // Starts at the clock (µs) so versions keep growing across restarts; clients only compare them.
  private rv = Date.now() * 1000;
  /** every event after this version is still in eventLog */
  private horizon = this.rv;
  private synced = false;

  constructor(opts: ClusterGatewayStoreOptions) {
    this.opts = opts;
    this.eventLogSize = opts.eventLogSize ?? 1000;
    const kc = opts.hubKubeConfig;
    this.clusters = new Informer(new ResourceClient<ManagedCluster>(kc, managedClusterResource), {
      log: opts.log,
    });
    this.msaSecrets = new Informer(new ResourceClient<Secret>(kc, secretResource), {
      labelSelector: `${managedServiceAccountLabel}=true`,
      fieldSelector: `metadata.name=${opts.msaName}`,
      name: 'gateway-msa-secrets',
      log: opts.log,
    });
    this.credentialSecrets = new Informer(new ResourceClient<Secret>(kc, secretResource), {
      namespace: opts.credentialNamespace,
      labelSelector: credentialTypeLabel,
      name: 'gateway-credential-secrets',
      log: opts.log,
    });
    const on = <T extends KubeObject>(informer: Informer<T>, nameOf: (o: T) => string | undefined) => {
      const touch = (o: T): void => {
        const name = nameOf(o);
        if (name && this.synced) this.recompute(name);
      };
      informer.addHandlers({ add: touch, update: (_o, n) => touch(n), delete: touch });
    };
    on(this.clusters, (o) => o.metadata?.name);
    on(this.msaSecrets, (o) => o.metadata?.namespace);
    on(this.credentialSecrets, (o) => o.metadata?.name);
  }

  async start(timeoutMs = 30_000): Promise<void> {
    for (const i of [this.clusters, this.msaSecrets, this.credentialSecrets]) i.start();
    await Promise.all(
      [this.clusters, this.msaSecrets, this.credentialSecrets].map((i) => i.waitForSync(timeoutMs)),
    );
    this.synced = true;
    const names = new Set([
      ...this.clusters.keys(),
      ...this.msaSecrets.list().map((s) => s.metadata?.namespace ?? ''),
      ...this.credentialSecrets.list().map((s) => s.metadata?.name ?? ''),
    ]);
    for (const name of names) if (name) this.recompute(name);
  }

  async stop(): Promise<void> {
    this.listeners.clear();
    await Promise.all([this.clusters.stop(), this.msaSecrets.stop(), this.credentialSecrets.stop()]);
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  get(name: string): ClusterGateway | undefined {
    return this.entries.get(name)?.object;
  }

  upstream(name: string): Upstream | undefined {
    return this.entries.get(name)?.upstream;
  }

  /**
   * The apiserver of accepted ManagedCluster `name` through the tunnel, with no credential of the
   * gateway's (the user-server passes the caller's through): URL and CA from the cluster's client
   * config, else the CA of its gateway MSA Secret. Credential Secrets (endpoint Const) are not
   * consulted: cluster-proxy's user-server reaches clusters only through the tunnel.
   */
  apiserverUpstream(name: string): Upstream | undefined {
    const mc = this.clusters.getByName(name);
    if (mc?.spec?.hubAcceptsClient !== true) return undefined;
    const clientConfig = mc.spec.managedClusterClientConfigs?.[0];
    const caFromCluster = clientConfig?.caBundle
      ? Buffer.from(clientConfig.caBundle, 'base64').toString('utf8')
      : undefined;
    const msa = this.msaSecrets.getByName(this.opts.msaName, name);
    return {
      cluster: name,
      endpointType: 'ClusterProxy',
      url: safeUrl(clientConfig?.url) ?? new URL('https://kubernetes.default.svc'),
      caPem: caFromCluster ?? decode(msa?.data, 'ca.crt'),
      credential: { type: 'None' },
      impersonate: false,
    };
  }

  list(): ClusterGateway[] {
    return [...this.entries.values()]
      .map((e) => e.object)
      .sort((a, b) => a.metadata.name!.localeCompare(b.metadata.name!));
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  /** Records a health result; a change shows up as MODIFIED to watchers. */
  setHealth(name: string, healthy: boolean, reason?: string): void {
    const prev = this.health.get(name);
    if (prev && prev.healthy === healthy && prev.reason === reason) return;
    this.health.set(name, { healthy, reason });
    const entry = this.entries.get(name);
    if (!entry) return;
    const object = this.withStatus(entry.object, name, ++this.rv);
    this.entries.set(name, { ...entry, object });
    this.emit({ type: 'MODIFIED', object, old: entry.object, rv: this.rv });
  }

  /**
   * Subscribes to changes after `fromRv` (undefined/"0": the current state as ADDED events first).
   * Returns the events to replay, or 'expired' when they are no longer all known (→ 410 Gone).
   */
  subscribe(
    fromRv: string | undefined,
    listener: (e: StoreEvent) => void,
  ): { replay: StoreEvent[]; unsubscribe: () => void } | 'expired' {
    let replay: StoreEvent[];
    if (!fromRv || fromRv === '0') {
      replay = this.list().map((object) => ({ type: 'ADDED' as const, object, rv: this.rv }));
    } else {
      const from = Number(fromRv);
      if (!Number.isSafeInteger(from) || from < this.horizon || from > this.rv) return 'expired';
      replay = this.eventLog.filter((e) => e.rv > from);
    }
    this.listeners.add(listener);
    return { replay, unsubscribe: () => this.listeners.delete(listener) };
  }

  private emit(event: StoreEvent): void {
    this.eventLog.push(event);
    while (this.eventLog.length > this.eventLogSize) this.horizon = this.eventLog.shift()?.rv ?? this.horizon;
    for (const l of this.listeners) l(event);
  }

  private withStatus(object: ClusterGateway, name: string, rv: number): ClusterGateway {
    const h = this.health.get(name) ?? { healthy: false, reason: HealthyReason.Unknown };
    return {
      ...object,
      metadata: { ...object.metadata, resourceVersion: String(rv) },
      status: { healthy: h.healthy, ...(h.healthy || !h.reason ? {} : { healthyReason: h.reason }) },
    };
  }

  private recompute(name: string): void {
    const next = this.build(name);
    const prev = this.entries.get(name);
    if (!next) {
      if (!prev) return;
      this.entries.delete(name);
      this.health.delete(name);
      const object = {
        ...prev.object,
        metadata: { ...prev.object.metadata, resourceVersion: String(++this.rv) },
      };
      this.emit({ type: 'DELETED', object, rv: this.rv });
      return;
    }
    const visible = (o: ClusterGateway): string =>
      JSON.stringify([o.metadata.uid, o.metadata.labels, o.metadata.annotations, o.spec]);
    if (prev && visible(prev.object) === visible(next.object)) {
      // Only the credential or CA changed (e.g. a rotated token): nothing a client can see.
      this.entries.set(name, { object: prev.object, upstream: next.upstream });
      return;
    }
    const object = this.withStatus(next.object, name, ++this.rv);
    this.entries.set(name, { object, upstream: next.upstream });
    this.emit({ type: prev ? 'MODIFIED' : 'ADDED', object, old: prev?.object, rv: this.rv });
  }

  private build(name: string): { object: ClusterGateway; upstream: Upstream } | undefined {
    const mc = this.clusters.getByName(name);
    const cred = this.credentialSecrets.getByName(name, this.opts.credentialNamespace);
    if (cred) {
      const built = this.fromCredentialSecret(name, cred, mc);
      if (built) return built;
    }
    const msa = this.msaSecrets.getByName(this.opts.msaName, name);
    if (mc?.spec?.hubAcceptsClient !== true || !msa) return undefined;
    const token = decode(msa.data, 'token');
    if (!token) return undefined;
    const clientConfig = mc.spec.managedClusterClientConfigs?.[0];
    const caFromCluster = clientConfig?.caBundle
      ? Buffer.from(clientConfig.caBundle, 'base64').toString('utf8')
      : undefined;
    const url = safeUrl(clientConfig?.url) ?? new URL('https://kubernetes.default.svc');
    const impersonate = mc.metadata.annotations?.[impersonateAnnotation] === 'true';
    return {
      object: this.object(name, mc, 'ClusterProxy', 'ServiceAccountToken', impersonate),
      upstream: {
        cluster: name,
        endpointType: 'ClusterProxy',
        url,
        caPem: caFromCluster ?? decode(msa.data, 'ca.crt'),
        credential: { type: 'ServiceAccountToken', token },
        impersonate,
      },
    };
  }

  private fromCredentialSecret(
    name: string,
    secret: Secret,
    mc: ManagedCluster | undefined,
  ): { object: ClusterGateway; upstream: Upstream } | undefined {
    const labels = secret.metadata?.labels ?? {};
    const credentialType = labels[credentialTypeLabel];
    const endpointType: ClusterEndpointType =
      labels[endpointTypeLabel] === 'ClusterProxy' ? 'ClusterProxy' : 'Const';
    let credential: UpstreamCredential;
    if (credentialType === 'ServiceAccountToken') {
      const token = decode(secret.data, CredentialSecretKey.Token);
      if (!token) return undefined;
      credential = { type: credentialType, token };
    } else if (credentialType === 'X509Certificate') {
      const certPem = decode(secret.data, CredentialSecretKey.TlsCert);
      const keyPem = decode(secret.data, CredentialSecretKey.TlsKey);
      if (!certPem || !keyPem) return undefined;
      credential = { type: credentialType, certPem, keyPem };
    } else {
      return undefined;
    }
    const clientConfig = mc?.spec?.managedClusterClientConfigs?.[0];
    const url =
      safeUrl(decode(secret.data, CredentialSecretKey.Endpoint)) ??
      (endpointType === 'ClusterProxy'
        ? (safeUrl(clientConfig?.url) ?? new URL('https://kubernetes.default.svc'))
        : undefined);
    if (!url) return undefined;
    const caPem =
      decode(secret.data, CredentialSecretKey.CaCert) ??
      (clientConfig?.caBundle ? Buffer.from(clientConfig.caBundle, 'base64').toString('utf8') : undefined);
    const impersonate = secret.metadata?.annotations?.[impersonateAnnotation] === 'true';
    const object = this.object(name, secret, endpointType, credentialType, impersonate);
    if (endpointType === 'Const')
      object.spec.access.endpoint.const = { address: url.href.replace(/\/$/, '') };
    return { object, upstream: { cluster: name, endpointType, url, caPem, credential, impersonate } };
  }

  private object(
    name: string,
    source: KubeObject,
    endpointType: ClusterEndpointType,
    credentialType: 'ServiceAccountToken' | 'X509Certificate',
    impersonate: boolean,
  ): ClusterGateway {
    const labels = { ...(source.metadata?.labels ?? {}) };
    delete labels[credentialTypeLabel];
    delete labels[endpointTypeLabel];
    return {
      apiVersion: gatewayGroupVersion,
      kind: 'ClusterGateway',
      metadata: {
        name,
        uid: source.metadata?.uid,
        creationTimestamp: source.metadata?.creationTimestamp,
        ...(Object.keys(labels).length > 0 ? { labels } : {}),
        ...(impersonate ? { annotations: { [impersonateAnnotation]: 'true' } } : {}),
      },
      spec: {
        provider: '',
        access: { endpoint: { type: endpointType }, credential: { type: credentialType } },
      },
      status: { healthy: false },
    };
  }
}

function safeUrl(text: string | undefined): URL | undefined {
  if (!text) return undefined;
  try {
    const url = new URL(text.trim());
    return url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

// The clustergateways resource itself: get, list (label/field selectors, Table output for kubectl)
// and watch (resourceVersion semantics of the apiserver: from a list's version, from "0" = current
// state first, 410 Gone when the version is no longer known; timeoutSeconds; optional bookmarks).
import type { ServerResponse } from 'node:http';
import type { Matcher } from './selectors.ts';
import { kubeStatus, sendStatus } from './status.ts';
import type { ClusterGatewayStore, StoreEvent } from './store.ts';
import { type ClusterGateway, gatewayGroupVersion } from './types.ts';

/** The Accept header asks for a meta.k8s.io Table (kubectl get's human output). */
export function wantsTable(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((part) => {
    const p = part.replace(/\s/g, '');
    return p.includes('as=Table') && p.includes('g=meta.k8s.io') && /v=v1(beta1)?(;|$)/.test(p);
  });
}

const tableColumns = [
  { name: 'Name', type: 'string', format: 'name', description: 'Name of the managed cluster', priority: 0 },
  { name: 'Provider', type: 'string', format: '', description: 'Who provides the cluster', priority: 0 },
  {
    name: 'Credential-Type',
    type: 'string',
    format: '',
    description: 'How the gateway authenticates',
    priority: 0,
  },
  {
    name: 'Endpoint-Type',
    type: 'string',
    format: '',
    description: 'ClusterProxy (tunnel) or Const',
    priority: 0,
  },
  { name: 'Healthy', type: 'string', format: '', description: 'The apiserver answers /healthz', priority: 0 },
];

function tableRow(o: ClusterGateway, includeObject: string): Record<string, unknown> {
  const object =
    includeObject === 'None'
      ? undefined
      : includeObject === 'Object'
        ? o
        : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata };
  return {
    cells: [
      o.metadata.name,
      o.spec.provider,
      o.spec.access.credential.type,
      o.spec.access.endpoint.type,
      String(o.status.healthy),
    ],
    ...(object ? { object } : {}),
  };
}

function table(
  items: ClusterGateway[],
  resourceVersion: string,
  includeObject: string,
): Record<string, unknown> {
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion },
    columnDefinitions: tableColumns,
    rows: items.map((o) => tableRow(o, includeObject)),
  };
}

function sendJson(res: ServerResponse, code: number, body: unknown, contentType = 'application/json'): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const tableContentType = 'application/json;as=Table;v=v1;g=meta.k8s.io';

export function getClusterGateway(
  store: ClusterGatewayStore,
  res: ServerResponse,
  name: string,
  accept: string | undefined,
  query: URLSearchParams,
): void {
  const object = store.get(name);
  if (!object) {
    sendStatus(res, notFound(name));
    return;
  }
  if (wantsTable(accept)) {
    const includeObject = query.get('includeObject') ?? 'Metadata';
    sendJson(
      res,
      200,
      table([object], object.metadata.resourceVersion ?? '', includeObject),
      tableContentType,
    );
    return;
  }
  sendJson(res, 200, object);
}

export function notFound(name: string) {
  return kubeStatus(404, `clustergateways.cluster.core.oam.dev "${name}" not found`, {
    name,
    group: 'cluster.core.oam.dev',
    kind: 'clustergateways',
  });
}

export function listClusterGateways(
  store: ClusterGatewayStore,
  res: ServerResponse,
  matches: Matcher,
  accept: string | undefined,
  query: URLSearchParams,
): void {
  const items = store.list().filter((o) => matches(o.metadata.labels, o.metadata.name ?? ''));
  const resourceVersion = store.resourceVersion;
  if (wantsTable(accept)) {
    sendJson(
      res,
      200,
      table(items, resourceVersion, query.get('includeObject') ?? 'Metadata'),
      tableContentType,
    );
    return;
  }
  sendJson(res, 200, {
    kind: 'ClusterGatewayList',
    apiVersion: gatewayGroupVersion,
    metadata: { resourceVersion },
    items,
  });
}

export interface WatchLimits {
  /** close a watch whose client has this many bytes unread (default 8 MiB) */
  maxBufferedBytes: number;
  /** send a BOOKMARK this often when asked for (default 30 s) */
  bookmarkIntervalMs: number;
  /** upper bound of a watch (default 30 min, like the apiserver's min-request-timeout range) */
  maxWatchSeconds: number;
}

/** Streams watch events until the client leaves, timeoutSeconds passes or it falls too far behind. */
export function watchClusterGateways(
  store: ClusterGatewayStore,
  res: ServerResponse,
  matches: Matcher,
  accept: string | undefined,
  query: URLSearchParams,
  limits: WatchLimits,
  onOpen: () => () => void,
): void {
  const asTable = wantsTable(accept);
  const includeObject = query.get('includeObject') ?? 'Metadata';
  const visible = (o: ClusterGateway | undefined): boolean =>
    o !== undefined && matches(o.metadata.labels, o.metadata.name ?? '');
  const write = (type: string, object: unknown): void => {
    res.write(`${JSON.stringify({ type, object })}\n`);
    if (res.writableLength > limits.maxBufferedBytes) {
      // Too slow a reader: end it; the client relists and watches again.
      res.destroy();
    }
  };
  const send = (e: StoreEvent): void => {
    // A change in or out of the selection is ADDED / DELETED for this watch, as in the apiserver.
    let type: string | undefined;
    if (e.type === 'MODIFIED') {
      const was = visible(e.old);
      const is = visible(e.object);
      type = was && is ? 'MODIFIED' : is ? 'ADDED' : was ? 'DELETED' : undefined;
    } else if (visible(e.object)) {
      type = e.type;
    }
    if (type) write(type, asTable ? table([e.object], String(e.rv), includeObject) : e.object);
  };
  const fromRv = query.get('resourceVersion') ?? undefined;
  let pending: StoreEvent[] = [];
  let live = false;
  const sub = store.subscribe(fromRv, (e) => (live ? send(e) : pending.push(e)));
  res.writeHead(200, {
    'content-type': asTable ? tableContentType : 'application/json',
    'cache-control': 'no-cache, private',
  });
  res.flushHeaders();
  if (sub === 'expired') {
    const status = kubeStatus(410, `too old resource version: ${fromRv} (${store.resourceVersion})`);
    res.end(`${JSON.stringify({ type: 'ERROR', object: { ...status, reason: 'Expired' } })}\n`);
    return;
  }
  for (const e of sub.replay) send(e);
  for (const e of pending) send(e);
  pending = [];
  live = true;
  const closeGauge = onOpen();
  const timeoutSeconds = Math.min(
    Number(query.get('timeoutSeconds') ?? '0') || limits.maxWatchSeconds,
    limits.maxWatchSeconds,
  );
  const timers: NodeJS.Timeout[] = [setTimeout(() => res.end(), timeoutSeconds * 1000)];
  if (query.get('allowWatchBookmarks') === 'true') {
    timers.push(
      setInterval(() => {
        const bookmark = {
          kind: 'ClusterGateway',
          apiVersion: gatewayGroupVersion,
          metadata: { resourceVersion: store.resourceVersion },
        };
        write('BOOKMARK', bookmark);
      }, limits.bookmarkIntervalMs),
    );
  }
  res.once('close', () => {
    for (const t of timers) clearTimeout(t);
    sub.unsubscribe();
    closeGauge();
  });
}

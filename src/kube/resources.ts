// Typed access to one kind of Kubernetes resource (core, built-in or custom) through client-node.
// A ResourceDescriptor says where the kind lives; ResourceClient<T> reads and writes it as plain
// JSON: no discovery round trips, `/status` subresources, merge patch and server-side apply.
//
// Why not client-node's typed APIs directly: they turn built-in kinds into model classes with Date
// fields (and drop fields the model does not know), and KubernetesObjectApi discovers plurals and
// has no subresources. RawObjectApi keeps client-node's whole request path (KubeConfig auth,
// proxy-url / tls-server-name dispatcher, middleware, ApiException) and only takes over building
// the URL and decoding the body, so every object here is exactly the JSON the apiserver sent.
//
// Every ApiException leaving this module is an ApiError (src/errors.ts) carrying the HTTP status,
// the apiserver's reason and message; 409 Conflict is a ConflictError (stale resourceVersion) or,
// for a server-side apply refused over fields other managers own, an ApplyConflictError.
import './dispatcher.ts'; // pooled connections for every KubeConfig (see dispatcher.ts)
import {
  ApiException,
  HttpMethod,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  type ResponseContext,
} from '@kubernetes/client-node';
import { InvalidArgumentError, TetherError, TimeoutError } from '../errors.ts';
import { isNotFound, toApiError } from './api-errors.ts';
import { peekServerHealth } from './server-health.ts';
import {
  apiVersionOf,
  type KubeObject,
  type MergePatch,
  type ResourceDescriptor,
  resourcePath,
} from './types.ts';

export interface ResourceList<T> {
  items: T[];
  /** the list's resourceVersion: start a watch here to see every later change */
  resourceVersion: string;
}

export interface CallOptions {
  /** aborts the request */
  signal?: AbortSignal;
  /** overrides the client's request timeout */
  timeoutMs?: number;
}

export interface WriteOptions extends CallOptions {
  fieldManager?: string;
  dryRun?: boolean;
}

export interface ApplyOptions extends CallOptions {
  fieldManager: string;
  /** take over fields other managers own (server-side apply conflicts) */
  force?: boolean;
  dryRun?: boolean;
}

export interface ListOptions extends CallOptions {
  /** namespaced kinds: one namespace; leave out for all namespaces */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface DeleteOptions extends CallOptions {
  /** resolve false instead of throwing when the object is already gone */
  ignoreNotFound?: boolean;
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  gracePeriodSeconds?: number;
  /** delete only this incarnation / this version of the object */
  preconditions?: { uid?: string; resourceVersion?: string };
}

export interface ResourceClientOptions {
  /** per request (default 30 s); a watch is not a request here */
  requestTimeoutMs?: number;
  /** objects per list page (default 500) */
  pageSize?: number;
  /** list fails with TETHER_LIMIT_EXCEEDED above this many objects (default 100 000) */
  maxListItems?: number;
}

/** client-node's request pipeline with our URL and a body decoded as plain JSON. */
class RawObjectApi extends KubernetesObjectApi {
  async send(
    method: HttpMethod,
    path: string,
    query: Query,
    body: unknown,
    contentType: string,
    signal: AbortSignal,
  ): Promise<unknown> {
    const ctx = this.configuration.baseServer.makeRequestContext(path, method);
    ctx.setHeaderParam('Accept', 'application/json');
    for (const [key, value] of Object.entries(query)) {
      if (value !== undefined) ctx.setQueryParam(key, String(value));
    }
    if (body !== undefined) {
      ctx.setHeaderParam('Content-Type', contentType);
      ctx.setBody(JSON.stringify(body));
    }
    ctx.setSignal(signal);
    return this.requestPromise(ctx);
  }

  protected override async processResponse<T extends KubernetesObject>(
    response: ResponseContext,
  ): Promise<T> {
    const text = await response.body.text();
    if (response.httpStatusCode >= 200 && response.httpStatusCode <= 299) {
      return (text ? JSON.parse(text) : {}) as T;
    }
    throw new ApiException(response.httpStatusCode, 'Unsuccessful HTTP Request', text, response.headers);
  }
}

type Query = Record<string, string | number | boolean | undefined>;

/** An object to create or replace: apiVersion and kind may be left out (filled in from the descriptor). */
export type WriteObject<T extends KubeObject> = Omit<T, 'apiVersion' | 'kind'> &
  KubeObject & { apiVersion?: T['apiVersion']; kind?: T['kind'] };

/** What a server-side apply states: only the fields the manager owns, so any top-level field may go. */
export type ApplyObject<T extends KubeObject> = Partial<T> & KubeObject;

/** One request: `path` defaults to the object (or collection, without name) in `namespace`. */
interface RequestSpec {
  op: string;
  method: HttpMethod;
  name?: string;
  namespace?: string;
  path?: string;
  query?: Query;
  body?: unknown;
  contentType?: string;
}

/** Typed CRUD, patch and server-side apply for one kind. */
export class ResourceClient<T extends KubeObject = KubeObject> {
  readonly descriptor: ResourceDescriptor;
  readonly kubeconfig: KubeConfig;
  readonly apiVersion: string;
  private readonly api: RawObjectApi;
  private readonly requestTimeoutMs: number;
  private readonly pageSize: number;
  private readonly maxListItems: number;

  constructor(kubeconfig: KubeConfig, descriptor: ResourceDescriptor, options: ResourceClientOptions = {}) {
    this.kubeconfig = kubeconfig;
    this.descriptor = descriptor;
    this.apiVersion = apiVersionOf(descriptor);
    this.api = kubeconfig.makeApiClient(RawObjectApi);
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.pageSize = options.pageSize ?? 500;
    this.maxListItems = options.maxListItems ?? 100_000;
  }

  /** The object, or undefined when it does not exist. */
  async get(name: string, namespace?: string, options: CallOptions = {}): Promise<T | undefined> {
    try {
      return this.typed(await this.request({ op: 'get', method: HttpMethod.GET, name, namespace }, options));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Every object matching the selectors, fetched page by page from one consistent snapshot. */
  async list(options: ListOptions = {}): Promise<ResourceList<T>> {
    const items: T[] = [];
    let resourceVersion = '';
    let continueToken: string | undefined;
    const path = resourcePath(this.descriptor, options.namespace);
    do {
      const query = {
        labelSelector: options.labelSelector,
        fieldSelector: options.fieldSelector,
        limit: this.pageSize,
        continue: continueToken,
      };
      const page = (await this.request({ op: 'list', method: HttpMethod.GET, path, query }, options)) as {
        items?: T[];
        metadata?: { resourceVersion?: string; continue?: string };
      };
      for (const item of page.items ?? []) items.push(this.typed(item));
      if (items.length > this.maxListItems) {
        const what = `list ${this.descriptor.plural}: more than ${this.maxListItems} objects`;
        throw new TetherError('TETHER_LIMIT_EXCEEDED', `${what}; narrow the selector or raise maxListItems`);
      }
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      continueToken = page.metadata?.continue || undefined;
    } while (continueToken);
    return { items, resourceVersion };
  }

  async create(obj: WriteObject<T>, options: WriteOptions = {}): Promise<T> {
    const namespace = obj.metadata?.namespace;
    const spec = { op: 'create', method: HttpMethod.POST, path: this.path(namespace), namespace };
    const query = writeQuery(options);
    return this.typed(await this.request({ ...spec, query, body: this.withTypeMeta(obj) }, options));
  }

  /**
   * Write the whole object. It must carry the metadata.resourceVersion it was read at: when the
   * object changed since, the apiserver refuses and this throws ConflictError.
   */
  async replace(obj: WriteObject<T>, options: WriteOptions = {}): Promise<T> {
    return this.put(obj, undefined, options);
  }

  /** replace() of the status subresource (spec changes in `obj` are ignored by the apiserver). */
  async replaceStatus(obj: WriteObject<T>, options: WriteOptions = {}): Promise<T> {
    return this.put(obj, 'status', options);
  }

  /** JSON merge patch; put metadata.resourceVersion in the patch to make it conditional. */
  async patchMerge(
    name: string,
    patch: MergePatch,
    namespace?: string,
    options: WriteOptions = {},
  ): Promise<T> {
    return this.patch(name, namespace, undefined, patch, MERGE_PATCH, writeQuery(options), options);
  }

  /** JSON merge patch of the status subresource. */
  async patchStatus(
    name: string,
    patch: MergePatch,
    namespace?: string,
    options: WriteOptions = {},
  ): Promise<T> {
    return this.patch(name, namespace, 'status', patch, MERGE_PATCH, writeQuery(options), options);
  }

  /**
   * Server-side apply: `obj` states the fields `fieldManager` owns. apiVersion and kind are filled
   * in; leave resourceVersion out unless the apply must fail when the object changed.
   */
  async apply(obj: ApplyObject<T>, options: ApplyOptions): Promise<T> {
    return this.applyTo(obj, undefined, options);
  }

  /** Server-side apply of the status subresource. */
  async applyStatus(obj: ApplyObject<T>, options: ApplyOptions): Promise<T> {
    return this.applyTo(obj, 'status', options);
  }

  /** Delete; true when the apiserver accepted it, false when it was already gone (ignoreNotFound). */
  async delete(name: string, namespace?: string, options: DeleteOptions = {}): Promise<boolean> {
    const { propagationPolicy, gracePeriodSeconds, preconditions } = options;
    // Preconditions only travel in a DeleteOptions body; the rest go as query parameters, which the
    // apiserver reads the same way. A DELETE with a body costs a connection: the HTTP client does
    // not keep it alive afterwards (1 000 new TLS connections for 500 deletes in the work bench).
    const body = preconditions
      ? { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy, gracePeriodSeconds, preconditions }
      : undefined;
    const query: Query = preconditions ? {} : { propagationPolicy, gracePeriodSeconds };
    try {
      await this.request({ op: 'delete', method: HttpMethod.DELETE, name, namespace, query, body }, options);
      return true;
    } catch (err) {
      if (options.ignoreNotFound && isNotFound(err)) return false;
      throw err;
    }
  }

  /** Path of the collection (all namespaces when namespace is undefined), e.g. for a watch. */
  collectionPath(namespace?: string): string {
    return resourcePath(this.descriptor, namespace);
  }

  private async put(obj: WriteObject<T>, subresource: string | undefined, options: WriteOptions): Promise<T> {
    const { name, namespace, resourceVersion } = obj.metadata ?? {};
    const what = `replace ${this.descriptor.kind} ${name ?? ''}`;
    if (!name) throw new InvalidArgumentError(`${what}: metadata.name is empty`);
    if (!resourceVersion) {
      throw new InvalidArgumentError(`${what}: metadata.resourceVersion is empty; read the object first`);
    }
    const op = subresource ? `replace ${subresource} of` : 'replace';
    const path = this.path(namespace, name, subresource);
    const spec = { op, method: HttpMethod.PUT, name, namespace, path, query: writeQuery(options) };
    return this.typed(await this.request({ ...spec, body: this.withTypeMeta(obj) }, options));
  }

  private async patch(
    name: string,
    namespace: string | undefined,
    subresource: string | undefined,
    body: unknown,
    contentType: string,
    query: Query,
    options: CallOptions,
  ): Promise<T> {
    const op = subresource ? `patch ${subresource} of` : 'patch';
    const path = this.path(namespace, name, subresource);
    const spec = { op, method: HttpMethod.PATCH, name, namespace, path, query, body, contentType };
    return this.typed(await this.request(spec, options));
  }

  private async applyTo(obj: KubeObject, subresource: string | undefined, options: ApplyOptions): Promise<T> {
    const name = obj.metadata?.name;
    const what = `apply ${this.descriptor.kind} ${name ?? ''}`;
    if (!name) throw new InvalidArgumentError(`${what}: metadata.name is empty`);
    if (!options.fieldManager) throw new InvalidArgumentError(`${what}: fieldManager is empty`);
    const query = { ...writeQuery(options), force: options.force ?? false };
    // JSON is YAML, so a JSON body under the apply-patch+yaml content type is what kubectl sends too.
    const body = this.withTypeMeta(obj);
    return this.patch(name, obj.metadata?.namespace, subresource, body, APPLY_PATCH, query, options);
  }

  private path(namespace: string | undefined, name?: string, subresource?: string): string {
    if (this.descriptor.namespaced && !namespace) {
      throw new InvalidArgumentError(`${this.descriptor.kind} ${name ?? ''} is namespaced: give a namespace`);
    }
    return resourcePath(this.descriptor, namespace, name, subresource);
  }

  private withTypeMeta(obj: KubeObject): T {
    const { apiVersion = this.apiVersion, kind = this.descriptor.kind } = obj;
    return { ...obj, apiVersion, kind } as T;
  }

  /** List items come without apiVersion/kind; put them back so every object describes itself. */
  private typed(obj: unknown): T {
    const o = obj as T;
    return o.apiVersion && o.kind ? o : this.withTypeMeta(o);
  }

  private async request(spec: RequestSpec, options: CallOptions): Promise<unknown> {
    const { op, name, namespace } = spec;
    const path = spec.path ?? this.path(namespace, name);
    const timeoutMs = options.timeoutMs ?? this.requestTimeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    const what = `${op} ${this.descriptor.kind}${name ? ` ${namespace ? `${namespace}/` : ''}${name}` : ''}`;
    try {
      const contentType = spec.contentType ?? 'application/json';
      const result = await this.api.send(spec.method, path, spec.query ?? {}, spec.body, contentType, signal);
      // Any answer proves the server reachable to the informers sharing its health (server-health.ts).
      peekServerHealth(this.kubeconfig)?.reportSuccess();
      return result;
    } catch (err) {
      if (!options.signal?.aborted) peekServerHealth(this.kubeconfig)?.reportFailure(err);
      if (timeout.aborted && !options.signal?.aborted) {
        throw new TimeoutError(`${what}: no answer from the apiserver within ${timeoutMs} ms`);
      }
      throw toApiError(err, what) ?? err;
    }
  }
}

const MERGE_PATCH = 'application/merge-patch+json';
const APPLY_PATCH = 'application/apply-patch+yaml';

function writeQuery(options: { fieldManager?: string; dryRun?: boolean }): Query {
  return { fieldManager: options.fieldManager, dryRun: options.dryRun ? 'All' : undefined };
}

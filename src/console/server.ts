// ConsoleServer: the fleet console's local HTTP server. It serves the single-page app (index.html
// with the per-process token, app.js, app.css, all from memory) and forwards read-only requests
// under /api, /apis and /version to the hub kube-apiserver as the viewer, with the viewer's own
// kubeconfig credentials (upstream.ts), streaming every answer through unread (watches) and
// passing apiserver errors (403 Status objects and the like) through unchanged.
//
// It listens on loopback only and checks every request (security.ts) in this order: Host (DNS
// rebinding) → Origin / Sec-Fetch-Site (cross-site requests) → path (no dot segments or encoded
// separators) → method (GET only: read-only) → token (API requests) → the concurrency limit.
// Every refusal is a Kubernetes Status object, so the page shows the console's refusals and the
// apiserver's the same way. No cookies are ever set.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { errorMessage, InvalidArgumentError } from '../errors.ts';
import { logger } from '../log.ts';
import { type ConsoleBundle, consoleBundle } from './build.ts';
import { indexHtml } from './page.ts';
import {
  CONSOLE_TOKEN_HEADER,
  checkRequestPath,
  hostAllowed,
  isApiPath,
  isLoopbackAddress,
  LOOPBACK_ADDRESSES,
  newConsoleToken,
  originAllowed,
  SECURITY_HEADERS,
  tokenMatches,
} from './security.ts';
import { getFromApiserver } from './upstream.ts';

const log = logger('console');

/** Upstream requests (watches included) one console has open at once, by default. */
export const DEFAULT_MAX_CONCURRENT_UPSTREAM = 64;

/** Browser connections to the console at once; more are refused at accept. */
export const MAX_CONSOLE_CONNECTIONS = 256;

/** How long a browser may take to send a request's headers. */
export const REQUEST_HEADERS_TIMEOUT_MS = 10_000;

export interface ConsoleServerOptions {
  /** the viewer's hub kubeconfig: every forwarded request is made with its credentials */
  kubeConfig: KubeConfig;
  /** loopback address to listen on (default 127.0.0.1) */
  address?: string;
  /** port (default 0: a free one) */
  port?: number;
  /** upstream requests open at once; more get 429 (default DEFAULT_MAX_CONCURRENT_UPSTREAM) */
  maxConcurrentUpstream?: number;
}

/** A Kubernetes Status object, the shape every refusal and apiserver error has. */
function statusBody(code: number, reason: string, message: string): string {
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    code,
  });
}

/** Whether a forwarded request is a watch (its body may stay open for minutes). */
function isWatch(path: string, query: string): boolean {
  return /[?&]watch=(1|true)(&|$)/.test(query) || path.includes('/watch/');
}

export class ConsoleServer {
  readonly #kc: KubeConfig;
  readonly #address: string;
  readonly #requestedPort: number;
  readonly #maxUpstream: number;
  readonly #token = newConsoleToken();
  readonly #server: Server;
  #port = 0;
  #upstreamOpen = 0;

  constructor(options: ConsoleServerOptions) {
    const address = options.address ?? '127.0.0.1';
    if (!isLoopbackAddress(address)) {
      throw new InvalidArgumentError(
        `the console listens on loopback only (${LOOPBACK_ADDRESSES.join(', ')}), not "${address}": ` +
          'it has no authentication of its own and acts with your kubeconfig credentials',
      );
    }
    this.#kc = options.kubeConfig;
    this.#address = address;
    this.#requestedPort = options.port ?? 0;
    this.#maxUpstream = options.maxConcurrentUpstream ?? DEFAULT_MAX_CONCURRENT_UPSTREAM;
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch((err) => {
        log.warn({ err: errorMessage(err) }, 'console request failed');
        if (!res.headersSent) this.#refuse(res, 500, 'InternalError', errorMessage(err));
        else res.destroy();
      });
    });
    // Bounds on what a browser (or anything else on this machine) can hold open or send.
    this.#server.headersTimeout = REQUEST_HEADERS_TIMEOUT_MS;
    this.#server.requestTimeout = 0; // watches stream for as long as the apiserver keeps them
    this.#server.maxHeadersCount = 64;
    this.#server.maxConnections = MAX_CONSOLE_CONNECTIONS;
  }

  /** Starts listening; resolves once the port is bound. The bundle is built in the background. */
  async start(): Promise<void> {
    consoleBundle().catch((err) => log.error({ err: errorMessage(err) }, 'console bundle failed to build'));
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#requestedPort, this.#address, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    this.#port = (this.#server.address() as AddressInfo).port;
  }

  /** The port listened on (after start). */
  get port(): number {
    return this.#port;
  }

  /** The console's URL, e.g. http://127.0.0.1:8009/ (it carries no token). */
  get url(): string {
    const host = this.#address === '::1' ? '[::1]' : this.#address;
    return `http://${host}:${this.#port}/`;
  }

  /** The per-process token the page sends with every API request (for tests). */
  get token(): string {
    return this.#token;
  }

  /** Upstream requests open now. */
  get upstreamOpen(): number {
    return this.#upstreamOpen;
  }

  /** Stops listening and ends every open request (watches included). */
  async stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
  }

  #refuse(
    res: ServerResponse,
    code: number,
    reason: string,
    message: string,
    extra: Record<string, string> = {},
  ): void {
    res.writeHead(code, {
      ...SECURITY_HEADERS,
      'Cache-Control': 'no-store',
      'Content-Type': 'application/json',
      ...extra,
    });
    res.end(statusBody(code, reason, message));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const host = req.headers.host;
    if (!hostAllowed(host, this.#port)) {
      this.#refuse(
        res,
        403,
        'Forbidden',
        `the console answers only to its loopback address, not Host "${host ?? ''}"`,
      );
      return;
    }
    const origin = req.headers.origin;
    const fetchSite = req.headers['sec-fetch-site'];
    if (!originAllowed(origin, typeof fetchSite === 'string' ? fetchSite : undefined, host as string)) {
      this.#refuse(res, 403, 'Forbidden', 'cross-site requests to the console are refused');
      return;
    }
    const checked = checkRequestPath(req.url ?? '');
    if (!checked.ok) {
      this.#refuse(res, 400, 'BadRequest', checked.reason);
      return;
    }
    if (req.method !== 'GET') {
      this.#refuse(
        res,
        405,
        'MethodNotAllowed',
        `the console is read-only: ${req.method} is not allowed, only GET`,
        {
          Allow: 'GET',
        },
      );
      return;
    }
    if (isApiPath(checked.path)) {
      await this.#forward(req, res, checked.path, checked.query);
      return;
    }
    await this.#serveStatic(res, checked.path);
  }

  async #serveStatic(res: ServerResponse, path: string): Promise<void> {
    if (path === '/' || path === '/index.html') {
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        'Content-Type': 'text/html; charset=utf-8',
        // the page carries the token: never kept by a cache
        'Cache-Control': 'no-store',
      });
      res.end(indexHtml(this.#token));
      return;
    }
    if (path !== '/app.js' && path !== '/app.css') {
      this.#refuse(res, 404, 'NotFound', `no such console page: ${path}`);
      return;
    }
    let bundle: ConsoleBundle;
    try {
      bundle = await consoleBundle();
    } catch (err) {
      this.#refuse(res, 500, 'InternalError', `the console bundle failed to build: ${errorMessage(err)}`);
      return;
    }
    const file = path === '/app.js' ? bundle.js : bundle.css;
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'Content-Type': file.contentType,
      'Content-Length': String(file.bytes),
      'Cache-Control': 'no-cache',
    });
    res.end(file.body);
  }

  async #forward(req: IncomingMessage, res: ServerResponse, path: string, query: string): Promise<void> {
    if (!tokenMatches(req.headers[CONSOLE_TOKEN_HEADER], this.#token)) {
      this.#refuse(
        res,
        403,
        'Forbidden',
        `API requests need the console's ${CONSOLE_TOKEN_HEADER} header (reload the console page)`,
      );
      return;
    }
    if (this.#upstreamOpen >= this.#maxUpstream) {
      this.#refuse(
        res,
        429,
        'TooManyRequests',
        `the console has ${this.#maxUpstream} requests to the hub open already; close other console tabs`,
        { 'Retry-After': '5' },
      );
      return;
    }
    this.#upstreamOpen++;
    const abort = new AbortController();
    const onClose = (): void => abort.abort();
    res.on('close', onClose);
    try {
      let upstream: Awaited<ReturnType<typeof getFromApiserver>>;
      try {
        upstream = await getFromApiserver(this.#kc, `${path}${query}`, req.headers, {
          watch: isWatch(path, query),
          signal: abort.signal,
        });
      } catch (err) {
        if (abort.signal.aborted) return;
        this.#refuse(
          res,
          502,
          'ServiceUnavailable',
          `the hub apiserver could not be reached: ${errorMessage(err)}`,
        );
        return;
      }
      res.writeHead(upstream.statusCode, {
        ...SECURITY_HEADERS,
        ...upstream.headers,
        'Cache-Control': 'no-store',
      });
      res.flushHeaders();
      await pipeline(upstream.body, res).catch(() => {
        // the browser went away or the apiserver ended the stream early: both ends are closed
      });
    } finally {
      res.off('close', onClose);
      this.#upstreamOpen--;
    }
  }
}

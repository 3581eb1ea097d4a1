// The CRD conversion webhook for the addon group: answers apiextensions.k8s.io ConversionReviews
// (v1 and v1beta1) on POST /convert over TLS, converting ClusterManagementAddOn and
// ManagedClusterAddOn between v1alpha1 and v1beta1 (conversion.ts). Served by `tether hub` and by
// the local environment; the CRDs point at it (src/api/addon.ts). Owns no Kubernetes state.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { addonConversionPath } from '../api/addon-crds.ts';
import type { Logger } from '../log.ts';
import { AddonConversionError, convertAddonObject, type JsonObject } from './conversion.ts';

/** The review versions the API server may send (the CRDs list both). */
export const conversionReviewApiVersions = ['apiextensions.k8s.io/v1', 'apiextensions.k8s.io/v1beta1'];

/**
 * Largest request body accepted. The API server sends every object of a list in one review, so
 * this bounds the largest list a client can read at a converted version; 3 MiB objects (etcd's
 * limit) × a few, with room: 32 MiB.
 */
export const defaultMaxReviewBytes = 32 * 1024 * 1024;

/** Header timeout and whole-request timeout for one review (the API server waits 30 s at most). */
const requestTimeoutMs = 30_000;

export class InvalidConversionReviewError extends Error {}

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Answers one ConversionReview. Objects that cannot be converted give `result.status: Failure`
 * with a message naming the object and the reason (the API server passes it to the client);
 * a body that is no ConversionReview at all throws InvalidConversionReviewError.
 */
export function reviewConversion(review: unknown): JsonObject {
  if (!isObject(review)) throw new InvalidConversionReviewError('body is not a JSON object');
  const apiVersion = review['apiVersion'];
  if (!conversionReviewApiVersions.includes(apiVersion as string) || review['kind'] !== 'ConversionReview')
    throw new InvalidConversionReviewError(
      `expected kind ConversionReview of ${conversionReviewApiVersions.join(' or ')}, got ${JSON.stringify(review['kind'])} of ${JSON.stringify(apiVersion)}`,
    );
  const request = review['request'];
  if (!isObject(request) || typeof request['uid'] !== 'string')
    throw new InvalidConversionReviewError('request.uid is missing');
  const uid = request['uid'];
  const answer = (response: JsonObject): JsonObject => ({
    apiVersion,
    kind: 'ConversionReview',
    response: { uid, ...response },
  });
  const failure = (message: string): JsonObject =>
    answer({ convertedObjects: [], result: { status: 'Failure', message } });
  const desired = request['desiredAPIVersion'];
  if (typeof desired !== 'string') return failure('request.desiredAPIVersion is missing');
  const objects = request['objects'];
  if (!Array.isArray(objects)) return failure('request.objects is not a list');
  const converted: JsonObject[] = [];
  for (const [i, obj] of objects.entries()) {
    try {
      converted.push(convertAddonObject(obj, desired));
    } catch (err) {
      if (!(err instanceof AddonConversionError)) throw err;
      const meta = isObject(obj) && isObject(obj['metadata']) ? obj['metadata'] : {};
      const name = [meta['namespace'], meta['name']].filter((p) => typeof p === 'string').join('/');
      return failure(`cannot convert object ${i}${name ? ` (${name})` : ''} to ${desired}: ${err.message}`);
    }
  }
  return answer({ convertedObjects: converted, result: { status: 'Success' } });
}

export interface AddonConversionWebhookOptions {
  /** Address to listen on. */
  host: string;
  /** 0 picks a free port. */
  port: number;
  certPem: string;
  keyPem: string;
  maxBodyBytes?: number;
  log?: Logger;
}

export interface AddonConversionWebhookServer {
  /** The port actually bound. */
  port: number;
  close(): Promise<void>;
}

function send(res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(code, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function status(code: number, message: string): JsonObject {
  return { apiVersion: 'v1', kind: 'Status', status: 'Failure', code, message };
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

async function handle(req: IncomingMessage, res: ServerResponse, maxBodyBytes: number, log?: Logger) {
  const path = new URL(req.url ?? '/', 'https://webhook').pathname;
  if (path !== addonConversionPath)
    return send(res, 404, status(404, `only ${addonConversionPath} is served`));
  if (req.method !== 'POST')
    return send(res, 405, status(405, `${addonConversionPath} takes POST only`), { allow: 'POST' });
  const body = await readBody(req, maxBodyBytes);
  if (!body) {
    send(res, 413, status(413, `ConversionReview larger than ${maxBodyBytes} bytes`), {
      connection: 'close',
    });
    req.destroy();
    return;
  }
  let review: unknown;
  try {
    review = JSON.parse(body.toString('utf8'));
  } catch {
    return send(res, 400, status(400, 'body is not JSON'));
  }
  try {
    const answer = reviewConversion(review);
    const response = answer['response'] as JsonObject;
    const result = response['result'] as JsonObject;
    if (result['status'] !== 'Success')
      log?.warn({ uid: response['uid'], message: result['message'] }, 'conversion refused');
    send(res, 200, answer);
  } catch (err) {
    if (!(err instanceof InvalidConversionReviewError)) throw err;
    send(res, 400, status(400, err.message));
  }
}

/** Serves POST /convert over TLS until close(). */
export async function startAddonConversionWebhook(
  opts: AddonConversionWebhookOptions,
): Promise<AddonConversionWebhookServer> {
  const maxBodyBytes = opts.maxBodyBytes ?? defaultMaxReviewBytes;
  const server: Server = createServer(
    { cert: opts.certPem, key: opts.keyPem, minVersion: 'TLSv1.2', requestTimeout: requestTimeoutMs },
    (req, res) => {
      handle(req, res, maxBodyBytes, opts.log).catch((err: unknown) => {
        opts.log?.error({ err }, 'conversion webhook request failed');
        if (!res.headersSent) send(res, 500, status(500, 'internal error converting the review'));
        else res.destroy();
      });
    },
  );
  server.headersTimeout = requestTimeoutMs;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

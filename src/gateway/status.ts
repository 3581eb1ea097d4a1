// Kubernetes Status objects: every error the gateway answers is one, so kubectl prints the
// message the way it prints the apiserver's own ("Error from server (Forbidden): …").
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { TetherError } from '../errors.ts';

export interface KubeStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: string;
  code: number;
  details?: { name?: string; group?: string; kind?: string };
}

const reasons: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  410: 'Expired',
  500: 'InternalError',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

export function kubeStatus(code: number, message: string, details?: KubeStatus['details']): KubeStatus {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason: reasons[code] ?? 'Unknown',
    code,
    ...(details ? { details } : {}),
  };
}

/** Writes a Status response (nothing when headers already went out: then the stream is cut). */
export function sendStatus(res: ServerResponse, status: KubeStatus): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(status);
  res.writeHead(status.code, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-cache, private',
  });
  res.end(body);
}

/** Writes a Status as a raw HTTP/1.1 response on a socket (for Upgrade requests) and closes it. */
export function sendStatusOnSocket(socket: Duplex, status: KubeStatus): void {
  const body = JSON.stringify(status);
  if (socket.writable) {
    socket.end(
      `HTTP/1.1 ${status.code} ${status.reason}\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
  (socket as Partial<Socket>).destroySoon?.();
}

/** The HTTP status a failed dial or upstream request maps to. */
export function statusForUpstreamError(err: unknown, cluster: string): KubeStatus {
  const message = err instanceof Error ? err.message : String(err);
  const code = err instanceof TetherError ? err.code : ((err as { code?: string })?.code ?? '');
  switch (code) {
    case 'TETHER_NO_AGENT':
    case 'TETHER_AGENT_UNRESPONSIVE':
    case 'TETHER_LIMIT_EXCEEDED':
    case 'TETHER_STREAM_CLOSED':
      return kubeStatus(503, `cluster ${cluster} is not reachable: ${message}`);
    case 'TETHER_DIAL_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'TETHER_TIMEOUT':
      return kubeStatus(504, `cluster ${cluster} did not answer in time: ${message}`);
    case 'TETHER_TARGET_NOT_ALLOWED':
      return kubeStatus(502, `the agent of cluster ${cluster} refused the target: ${message}`);
    default:
      return kubeStatus(502, `cannot reach the apiserver of cluster ${cluster}: ${message}`);
  }
}

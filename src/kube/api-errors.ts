// Kubernetes API errors as tether errors. client-node throws ApiException with the HTTP status in
// `.code` and the apiserver's Status (JSON text or object) in `.body`; callers here get an ApiError
// with status, reason and the apiserver's message, and branch with isNotFound / isConflict / ….
import { ApiException } from '@kubernetes/client-node';
import { ApiError, ConflictError } from '../errors.ts';

interface StatusBody {
  code?: number;
  reason?: string;
  message?: string;
}

const defaultReasons: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Expired',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

function parseStatus(body: unknown): StatusBody {
  let value = body;
  if (Buffer.isBuffer(value)) value = value.toString('utf8');
  if (typeof value === 'string') {
    const text = value.trim();
    try {
      value = JSON.parse(text);
    } catch {
      return text ? { message: text.slice(0, 1000) } : {};
    }
  }
  if (value && typeof value === 'object') {
    const s = value as Record<string, unknown>;
    return {
      code: typeof s.code === 'number' ? s.code : undefined,
      reason: typeof s.reason === 'string' ? s.reason : undefined,
      message: typeof s.message === 'string' ? s.message : undefined,
    };
  }
  return {};
}

/**
 * The ApiError for a client-node ApiException (or the ApiError itself), undefined for anything
 * else. `context` (e.g. "get Secret ns/name") prefixes the apiserver's message.
 */
export function toApiError(err: unknown, context?: string): ApiError | undefined {
  if (err instanceof ApiError) return err;
  if (!(err instanceof ApiException)) return undefined;
  const status = parseStatus(err.body);
  const code = err.code;
  const reason = status.reason || defaultReasons[code] || 'Unknown';
  const apiMessage = status.message || `HTTP ${code}`;
  const message = context ? `${context}: ${apiMessage}` : apiMessage;
  if (code === 409 && reason === 'Conflict') return new ConflictError(message, { cause: err });
  return new ApiError(code, reason, message, { cause: err });
}

function statusOf(err: unknown): { status: number; reason: string } | undefined {
  const apiErr = toApiError(err);
  return apiErr ? { status: apiErr.status, reason: apiErr.reason } : undefined;
}

export function isNotFound(err: unknown): boolean {
  return statusOf(err)?.status === 404;
}

/** 409 because the object changed since it was read (not because it already exists). */
export function isConflict(err: unknown): boolean {
  const s = statusOf(err);
  return s?.status === 409 && s.reason !== 'AlreadyExists';
}

export function isAlreadyExists(err: unknown): boolean {
  const s = statusOf(err);
  return s?.status === 409 && s.reason === 'AlreadyExists';
}

export function isForbidden(err: unknown): boolean {
  return statusOf(err)?.status === 403;
}

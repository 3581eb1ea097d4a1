// Kubernetes API errors as tether errors. client-node throws ApiException with the HTTP status in
// `.code` and the apiserver's Status (JSON text or object) in `.body`; callers here get an ApiError
// with status, reason and the apiserver's message, and branch with isNotFound / isConflict / ….
//
// Two different failures share 409 reason Conflict: a write at a stale resourceVersion
// (ConflictError: read again and retry) and a server-side apply setting fields another field
// manager owns (ApplyConflictError: retrying changes nothing). The apiserver marks the second with
// details.causes[].reason "FieldManagerConflict" (metav1.StatusCause's type is `reason` in JSON).
import { ApiException } from '@kubernetes/client-node';
import { ApiError, ApplyConflictError, ConflictError, type FieldConflict } from '../errors.ts';

interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

interface StatusBody {
  code?: number;
  reason?: string;
  message?: string;
  causes?: StatusCause[];
}

const fieldManagerConflict = 'FieldManagerConflict';

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
      reason: stringOf(s.reason),
      message: stringOf(s.message),
      causes: causesOf(s.details),
    };
  }
  return {};
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function causesOf(details: unknown): StatusCause[] | undefined {
  const causes = (details as { causes?: unknown } | null | undefined)?.causes;
  if (!Array.isArray(causes)) return undefined;
  return causes
    .filter((c): c is Record<string, unknown> => !!c && typeof c === 'object')
    .map((c) => ({ reason: stringOf(c.reason), message: stringOf(c.message), field: stringOf(c.field) }));
}

function fieldConflicts(causes: StatusCause[] | undefined): FieldConflict[] {
  return (causes ?? [])
    .filter((c) => c.reason === fieldManagerConflict)
    .map(({ field, message }) => ({ field, message }));
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
  if (code === 409 && reason === 'Conflict') {
    const conflicts = fieldConflicts(status.causes);
    if (conflicts.length > 0) return new ApplyConflictError(message, conflicts, { cause: err });
    return new ConflictError(message, { cause: err });
  }
  return new ApiError(code, reason, message, { cause: err });
}

function statusOf(err: unknown): { status: number; reason: string; applyConflict: boolean } | undefined {
  const apiErr = toApiError(err);
  if (!apiErr) return undefined;
  return {
    status: apiErr.status,
    reason: apiErr.reason,
    applyConflict: apiErr instanceof ApplyConflictError,
  };
}

export function isNotFound(err: unknown): boolean {
  return statusOf(err)?.status === 404;
}

/**
 * 409 because the object changed since it was read: read it again and retry. Not for an object
 * that already exists, nor for a server-side apply refused over field ownership (isApplyConflict).
 */
export function isConflict(err: unknown): boolean {
  const s = statusOf(err);
  return s?.status === 409 && s.reason !== 'AlreadyExists' && !s.applyConflict;
}

/** 409 because a server-side apply set fields other field managers own (see ApplyConflictError). */
export function isApplyConflict(err: unknown): boolean {
  return statusOf(err)?.applyConflict === true;
}

export function isAlreadyExists(err: unknown): boolean {
  const s = statusOf(err);
  return s?.status === 409 && s.reason === 'AlreadyExists';
}

export function isForbidden(err: unknown): boolean {
  return statusOf(err)?.status === 403;
}

// Which failed requests say "the server cannot be reached" rather than "the server said no".
//
// Only the first kind is shared between the clients of one apiserver (see server-health.ts): a
// refused or reset connection, a timeout, a forward proxy that cannot tunnel. Anything carrying an
// HTTP status is an answer about that one request (403 for a missing RBAC rule, 404 for a CRD not
// installed yet, 503 from an aggregated API that is down while the rest of the server works), and
// it must not wake or slow down other clients of the same server.
import { ApiException } from '@kubernetes/client-node';
import { ApiError, TetherError } from '../errors.ts';

/** How deep to follow `cause` chains (undici nests the socket error one or two levels down). */
const MAX_CAUSE_DEPTH = 5;

/** Node system errors and undici's transport errors, by code. */
const TRANSPORT_CODE =
  /^(E[A-Z]+|UND_ERR_[A-Z_]+|ERR_SOCKET_[A-Z_]+|ERR_STREAM_PREMATURE_CLOSE|ERR_TLS_[A-Z_]+)$/;

/** undici's fetch reports a failed connection as TypeError "fetch failed", a cut body as "terminated". */
const FETCH_TRANSPORT_MESSAGES = new Set(['fetch failed', 'terminated']);

/** The HTTP status in an error from our clients, client-node or its Watch; undefined if none. */
export function httpStatusOf(err: unknown): number | undefined {
  if (err instanceof ApiError) return err.status;
  if (err instanceof ApiException) return err.code;
  const statusCode = (err as { statusCode?: unknown } | null | undefined)?.statusCode;
  return typeof statusCode === 'number' ? statusCode : undefined;
}

/** True when `err` means the server could not be reached (no answer at all), see the header. */
export function isConnectivityError(err: unknown): boolean {
  if (!(err instanceof Error) || httpStatusOf(err) !== undefined) return false;
  if (err.name === 'TimeoutError') return true;
  // Our own coded errors are decisions (limits, bad arguments), not transport failures.
  if (err instanceof TetherError) return false;
  let current: unknown = err;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && TRANSPORT_CODE.test(code)) return true;
    if (current.name === 'TimeoutError') return true;
    if (current instanceof TypeError && FETCH_TRANSPORT_MESSAGES.has(current.message)) return true;
    current = current.cause;
  }
  return false;
}

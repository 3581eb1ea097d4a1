// Coded errors. Every error tether raises on purpose is a TetherError with a stable `code`
// (TETHER_*) and a message that says what to do next. Callers branch on `code`, never on text.

export type TetherErrorCode =
  | 'TETHER_INVALID_ARGUMENT'
  | 'TETHER_INVALID_KUBECONFIG'
  | 'TETHER_BINARY_BUILD_FAILED'
  | 'TETHER_BINARY_NOT_FOUND'
  | 'TETHER_PROCESS_FAILED'
  | 'TETHER_NODE_UNSUPPORTED'
  | 'TETHER_TIMEOUT'
  | 'TETHER_API_ERROR'
  | 'TETHER_NO_AGENT'
  | 'TETHER_AGENT_UNRESPONSIVE'
  | 'TETHER_TARGET_NOT_ALLOWED'
  | 'TETHER_DIAL_FAILED'
  | 'TETHER_DIAL_TIMEOUT'
  | 'TETHER_PROXY_UNREACHABLE'
  | 'TETHER_PROXY_REFUSED'
  | 'TETHER_PROXY_UPSTREAM_FAILED'
  | 'TETHER_PROXY_AUTH'
  | 'TETHER_PROXY_TLS'
  | 'TETHER_PROTOCOL'
  | 'TETHER_LIMIT_EXCEEDED'
  | 'TETHER_UNAUTHORIZED'
  | 'TETHER_STREAM_CLOSED';

export class TetherError extends Error {
  readonly code: TetherErrorCode;
  constructor(code: TetherErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TetherError';
    this.code = code;
  }
}

/** A command-line flag or argument has a value we cannot use. */
export class InvalidArgumentError extends TetherError {
  constructor(message: string) {
    super('TETHER_INVALID_ARGUMENT', message);
    this.name = 'InvalidArgumentError';
  }
}

/** A kubeconfig file is missing, unparsable or lacks what we need. */
export class InvalidKubeconfigError extends TetherError {
  constructor(path: string, problem: string, options?: { cause?: unknown }) {
    super('TETHER_INVALID_KUBECONFIG', `kubeconfig ${path}: ${problem}`, options);
    this.name = 'InvalidKubeconfigError';
  }
}

/** A child process (etcd, kube-apiserver, …) failed to start or died. */
export class ProcessFailedError extends TetherError {
  readonly logTail: string;
  constructor(message: string, logTail: string) {
    super('TETHER_PROCESS_FAILED', logTail ? `${message}\n--- last log lines ---\n${logTail}` : message);
    this.name = 'ProcessFailedError';
    this.logTail = logTail;
  }
}

/** Something we waited for did not happen before its deadline. */
export class TimeoutError extends TetherError {
  constructor(message: string) {
    super('TETHER_TIMEOUT', message);
    this.name = 'TimeoutError';
  }
}

/** The Kubernetes API answered with an error status. */
export class ApiError extends TetherError {
  readonly status: number;
  readonly reason: string;
  constructor(status: number, reason: string, message: string, options?: { cause?: unknown }) {
    super('TETHER_API_ERROR', message, options);
    this.name = 'ApiError';
    this.status = status;
    this.reason = reason;
  }
}

export function isTetherError(err: unknown, code?: TetherErrorCode): err is TetherError {
  return err instanceof TetherError && (code === undefined || err.code === code);
}

/** Best-effort message for any thrown value. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

/**
 * The apiserver refused a write because the object changed since it was read (409, reason
 * Conflict): read it again and retry, or let the work queue requeue the key.
 */
export class ConflictError extends ApiError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(409, 'Conflict', message, options);
    this.name = 'ConflictError';
  }
}

/** One field a server-side apply could not take because another field manager owns it. */
export interface FieldConflict {
  /** the field path, e.g. `.spec.leaseDurationSeconds` */
  field?: string;
  /** the apiserver's text, e.g. `conflict with "agent" using cluster.open-cluster-management.io/v1` */
  message?: string;
}

/**
 * A server-side apply was refused (409) because other field managers own fields it set. Retrying
 * the same apply will not help: drop those fields, or apply with force to take them over.
 */
export class ApplyConflictError extends ApiError {
  readonly conflicts: FieldConflict[];
  constructor(message: string, conflicts: FieldConflict[], options?: { cause?: unknown }) {
    super(409, 'Conflict', message, options);
    this.name = 'ApplyConflictError';
    this.conflicts = conflicts;
  }
}

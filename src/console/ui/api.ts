// The page's only way to the hub: fetch() against the console's own origin with the console token
// in the X-Tether-Console-Token header. The token is read once from the <meta> element the console
// put in index.html: it is never put in a URL, in localStorage/sessionStorage or in a cookie.
// Failures come back as ApiFailure, carrying the apiserver's (or the console's) Status message, so
// a page can quote it ("forbidden: User … cannot list …") rather than show an empty table.

const TOKEN_META = 'tether-console-token';
const TOKEN_HEADER = 'X-Tether-Console-Token';

let token: string | undefined;

function consoleToken(): string {
  if (token === undefined) {
    const meta = document.querySelector<HTMLMetaElement>(`meta[name="${TOKEN_META}"]`);
    token = meta?.content ?? '';
  }
  return token;
}

/** A refused or failed API request: HTTP status, the Status reason and message. */
export class ApiFailure extends Error {
  override name = 'ApiFailure';
  readonly code: number;
  readonly reason: string;
  constructor(code: number, reason: string, message: string) {
    super(message);
    this.code = code;
    this.reason = reason;
  }
}

/** GET `path` (under /api or /apis) from the console, as the viewer. */
export function apiGet(path: string, signal?: AbortSignal): Promise<Response> {
  return fetch(path, {
    method: 'GET',
    // no token when the page is served by the gateway (behind kubectl proxy: the hub authenticates)
    headers: consoleToken()
      ? { [TOKEN_HEADER]: consoleToken(), Accept: 'application/json' }
      : { Accept: 'application/json' },
    credentials: 'omit',
    cache: 'no-store',
    ...(signal ? { signal } : {}),
  });
}

/** The ApiFailure a non-2xx response stands for (its Status message when the body is one). */
export async function failureOf(response: Response): Promise<ApiFailure> {
  let message = `${response.status} ${response.statusText}`;
  let reason = '';
  try {
    const body = (await response.json()) as { kind?: string; message?: string; reason?: string };
    if (body.kind === 'Status') {
      message = body.message ?? message;
      reason = body.reason ?? '';
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiFailure(response.status, reason, message);
}

/** The ApiFailure of an ERROR watch event's Status object. */
export function failureOfStatus(status: Record<string, unknown>): ApiFailure {
  const code = typeof status.code === 'number' ? status.code : 500;
  const reason = typeof status.reason === 'string' ? status.reason : '';
  const message = typeof status.message === 'string' ? status.message : 'watch error';
  return new ApiFailure(code, reason, message);
}

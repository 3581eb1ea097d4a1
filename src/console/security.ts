// The console's trust checks, each a pure function of one request's headers or path, so that each
// can be tested on its own and the server reads as a list of them.
//
// The console forwards requests to the hub with the viewer's own kubeconfig credentials, so any web
// page that could make the viewer's browser talk to it would act with the viewer's rights. What
// stops that, in the order server.ts applies it:
// - Host must name the loopback address and port the console listens on: a DNS-rebound name
//   (attacker.example resolving to 127.0.0.1) arrives with its own Host and is refused;
// - a present Origin must be the console's own, and `Sec-Fetch-Site: cross-site` is refused;
// - every API request carries a per-process random token that only the console's own page can read
//   (it is embedded in index.html, which another origin cannot read): no cookie carries authority,
//   so there is nothing for a cross-site request to ride on;
// - paths with dot segments or percent-encoded separators are refused before they are forwarded,
//   so what the console checks is what the apiserver routes.
// This module owns no sockets and reads no credentials.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** The header every forwarded API request must carry, holding the console's token. */
export const CONSOLE_TOKEN_HEADER = 'x-tether-console-token';

/** The `<meta name>` index.html carries the token in; the page reads it from the DOM. */
export const CONSOLE_TOKEN_META = 'tether-console-token';

/** Headers every response carries, whatever it is. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

/** The addresses the console may listen on: it has no authentication of its own. */
export const LOOPBACK_ADDRESSES: readonly string[] = ['127.0.0.1', '::1', 'localhost'];

/** Whether `address` is one the console may listen on (see LOOPBACK_ADDRESSES). */
export function isLoopbackAddress(address: string): boolean {
  return LOOPBACK_ADDRESSES.includes(address);
}

/** A fresh console token: 32 random bytes, base64url (43 characters). */
export function newConsoleToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * Whether `presented` equals `expected`, in time independent of where they differ. Both are hashed
 * first so that their lengths do not show either; an absent or repeated header never matches.
 */
export function tokenMatches(presented: string | string[] | undefined, expected: string): boolean {
  if (typeof presented !== 'string' || presented === '' || expected === '') return false;
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The Host header values the console on `port` answers: its loopback names, with that port. */
export function allowedHosts(port: number): string[] {
  return [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
}

/** Whether a request's Host header names the console itself (not a DNS-rebound name). */
export function hostAllowed(host: string | undefined, port: number): boolean {
  if (host === undefined) return false;
  return allowedHosts(port).includes(host.toLowerCase());
}

/**
 * Whether a request's Origin and Sec-Fetch-Site allow it: an absent Origin is fine (same-origin GETs
 * from the page need not send one), a present one must be `http://<its own Host>`; a browser saying
 * the request is cross-site is refused whatever else it says.
 */
export function originAllowed(
  origin: string | undefined,
  secFetchSite: string | undefined,
  host: string,
): boolean {
  if (secFetchSite !== undefined && secFetchSite.toLowerCase() === 'cross-site') return false;
  if (origin === undefined) return true;
  return origin.toLowerCase() === `http://${host.toLowerCase()}`;
}

export type PathCheck = { ok: true; path: string; query: string } | { ok: false; reason: string };

/** Percent-encodings of `/`, `\` and `.`: a proxy that decodes them would route differently. */
const ENCODED_SEPARATOR = /%(2f|5c|2e)/i;

/**
 * Splits a request target into path and query (query with its `?`) and refuses what could be routed
 * differently upstream than it reads here: no leading `/`, dot segments, backslashes, encoded
 * separators or dots, control characters.
 */
export function checkRequestPath(target: string): PathCheck {
  const q = target.indexOf('?');
  const path = q < 0 ? target : target.slice(0, q);
  const query = q < 0 ? '' : target.slice(q);
  if (!path.startsWith('/')) return { ok: false, reason: 'path must start with /' };
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f\\]/.test(target))
    return { ok: false, reason: 'path has a control character or \\' };
  if (ENCODED_SEPARATOR.test(path)) return { ok: false, reason: 'path has a percent-encoded / \\ or .' };
  for (const segment of path.split('/').slice(1)) {
    if (segment === '.' || segment === '..') return { ok: false, reason: 'path has a . or .. segment' };
  }
  return { ok: true, path, query };
}

/** Whether `path` (already checked) is one the console forwards to the apiserver. */
export function isApiPath(path: string): boolean {
  return (
    path === '/api' ||
    path === '/apis' ||
    path === '/version' ||
    path.startsWith('/api/') ||
    path.startsWith('/apis/')
  );
}

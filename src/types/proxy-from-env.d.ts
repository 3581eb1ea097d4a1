// Types for proxy-from-env 2.x, which ships none (see src/proxy-env.ts, its one user).
declare module 'proxy-from-env' {
  /** The proxy URL for `url` from *_PROXY / NO_PROXY in process.env, or '' for none. */
  export function getProxyForUrl(url: string | URL): string;
}

// The fleet console (issue 30): a local, read-only web UI over the hub, served by ConsoleServer
// and acting only as the viewer. The public surface of src/console/.
export { type BundleFile, type ConsoleBundle, consoleBundle } from './build.ts';
export { type IndexHtmlOptions, indexHtml } from './page.ts';
export {
  allowedHosts,
  CONSOLE_TOKEN_HEADER,
  CONSOLE_TOKEN_META,
  checkRequestPath,
  hostAllowed,
  isApiPath,
  isLoopbackAddress,
  originAllowed,
  SECURITY_HEADERS,
  tokenMatches,
} from './security.ts';
export { ConsoleServer, type ConsoleServerOptions, DEFAULT_MAX_CONCURRENT_UPSTREAM } from './server.ts';

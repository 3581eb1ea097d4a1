// The fleet console (src/console) served by the gateway under its aggregated API, so a hub user
// needs no extra Service or credential: `kubectl proxy`, then
// http://127.0.0.1:8001/apis/cluster.core.oam.dev/v1alpha1/console/. Only the static files are
// served here (index.html, app.js, app.css, built once per process by console/build.ts); the page's
// API requests go to the origin's root (/api, /apis), which behind `kubectl proxy` is the hub
// apiserver acting as the viewer. The gateway adds no rights and holds no viewer data.
//
// The hub apiserver authorizes these paths as resource `console` of cluster.core.oam.dev (`…/console/`
// is a list to its RequestInfo, `…/console/app.js` a get of `app.js`); tether grants get and list on
// it to every authenticated user (ClusterRole tether:console-viewer, apiservice.ts), and the gateway
// asks the same SubjectAccessReview itself (server.ts). Every answer carries the console's
// SECURITY_HEADERS (strict CSP); the index has no token meta and links its assets relatively.
// `…/console` without its slash gets the same page with its assets under `console/`, not a
// redirect: the hub's aggregator refuses to pass on an aggregated server's redirects (502; the fix
// for CVE-2022-3172), and a relative link resolves against the last slash either way.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { consoleBundle } from '../console/build.ts';
import { indexHtml } from '../console/page.ts';
import { SECURITY_HEADERS } from '../console/security.ts';
import type { AccessRequest } from './authorizer.ts';
import { gatewayGroup, gatewayVersion } from './types.ts';

/** Where the console lives under the gateway's API. */
export const consolePath = `/apis/${gatewayGroup}/${gatewayVersion}/console`;

export interface ConsoleRoute {
  /** index-bare: the index at `…/console` without its slash */
  file: 'index' | 'index-bare' | 'app.js' | 'app.css' | 'missing';
  /** what the hub apiserver's RequestInfo makes of the path, asked again by the gateway */
  access: AccessRequest;
}

/** The console file a request path names, or undefined when the path is not the console's. */
export function consoleRouteOf(path: string): ConsoleRoute | undefined {
  if (path === consolePath) return { file: 'index-bare', access: { verb: 'list', resource: 'console' } };
  if (!path.startsWith(`${consolePath}/`)) return undefined;
  const rest = path.slice(consolePath.length + 1);
  if (rest === '' || rest === 'index.html')
    return {
      file: 'index',
      access:
        rest === ''
          ? { verb: 'list', resource: 'console' }
          : { verb: 'get', resource: 'console', name: rest },
    };
  const name = rest.includes('/') ? rest.slice(0, rest.indexOf('/')) : rest;
  const file = rest === 'app.js' || rest === 'app.css' ? rest : 'missing';
  return { file, access: { verb: 'get', resource: 'console', name } };
}

const INDEX = Buffer.from(indexHtml(undefined, { assetBase: '' }), 'utf8');
const INDEX_BARE = Buffer.from(indexHtml(undefined, { assetBase: 'console/' }), 'utf8');

/** Answers a console request already authorized (only GET and HEAD reach here). */
export async function serveConsole(
  req: IncomingMessage,
  res: ServerResponse,
  file: ConsoleRoute['file'],
): Promise<void> {
  const head = req.method === 'HEAD';
  const send = (status: number, headers: Record<string, string | number>, body: Buffer | string): void => {
    res.writeHead(status, { ...SECURITY_HEADERS, ...headers });
    res.end(head ? undefined : body);
  };
  if (file === 'missing') {
    send(404, { 'content-type': 'text/plain' }, 'not a console file\n');
    return;
  }
  if (file === 'index' || file === 'index-bare') {
    const page = file === 'index' ? INDEX : INDEX_BARE;
    send(
      200,
      {
        'content-type': 'text/html; charset=utf-8',
        'content-length': page.length,
        'cache-control': 'no-cache',
      },
      page,
    );
    return;
  }
  if (file !== 'app.js' && file !== 'app.css') return;
  const bundle = await consoleBundle();
  const built = file === 'app.js' ? bundle.js : bundle.css;
  send(
    200,
    { 'content-type': built.contentType, 'content-length': built.body.length, 'cache-control': 'no-cache' },
    built.body,
  );
}

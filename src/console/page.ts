// The console's index.html: a fixed shell that loads /app.css and /app.js and carries the
// per-process token in a <meta> element, where only a page of the console's own origin can read it
// (not in a URL, a cookie or browser storage). No inline script or style: the Content-Security-
// Policy (security.ts) forbids both. The gateway serves the same page under its aggregated API
// (gateway/console.ts): there the assets are referenced relatively (the page lives below
// /apis/cluster.core.oam.dev/v1alpha1/console/) and there is no token (the hub authenticates).
import { CONSOLE_TOKEN_META } from './security.ts';

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

function escapeAttribute(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);
}

export interface IndexHtmlOptions {
  /**
   * what app.js and app.css are prefixed with: `/` for `tether console` (the page is the origin's
   * root); a relative prefix (``, `console/`) for a page served below a path
   */
  assetBase: '/' | '' | 'console/';
}

/**
 * index.html for a console whose token is `token`, or without a token (undefined: the page's API
 * requests are authenticated by whoever serves it, as behind `kubectl proxy`).
 */
export function indexHtml(token: string | undefined, opts: IndexHtmlOptions = { assetBase: '/' }): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    ...(token === undefined
      ? []
      : [`<meta name="${CONSOLE_TOKEN_META}" content="${escapeAttribute(token)}">`]),
    '<title>tether console</title>',
    `<link rel="stylesheet" href="${opts.assetBase}app.css">`,
    `<script type="module" src="${opts.assetBase}app.js"></script>`,
    '</head>',
    '<body><div id="app"></div></body>',
    '</html>',
    '',
  ].join('\n');
}

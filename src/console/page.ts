// The console's index.html: a fixed shell that loads /app.css and /app.js and carries the
// per-process token in a <meta> element, where only a page of the console's own origin can read it
// (not in a URL, a cookie or browser storage). No inline script or style: the Content-Security-
// Policy (security.ts) forbids both.
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

/** index.html for a console whose token is `token`. */
export function indexHtml(token: string): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta name="${CONSOLE_TOKEN_META}" content="${escapeAttribute(token)}">`,
    '<title>tether console</title>',
    '<link rel="stylesheet" href="/app.css">',
    '<script type="module" src="/app.js"></script>',
    '</head>',
    '<body><div id="app"></div></body>',
    '</html>',
    '',
  ].join('\n');
}

// The console's page and bundle: index.html carries the token in a <meta> only and nothing the
// Content-Security-Policy would block (no inline script or style); the bundle builds, is cached,
// and stays small.
import { describe, expect, it } from 'vitest';
import { consoleBundle } from '../../src/console/build.ts';
import { indexHtml } from '../../src/console/page.ts';

describe('index.html', () => {
  it('carries the token in its meta element and has no inline script or style', () => {
    const html = indexHtml('tok_EN-123');
    expect(html).toContain('<meta name="tether-console-token" content="tok_EN-123">');
    expect(html).toContain('<script type="module" src="/app.js"></script>');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
  });

  it('served by the gateway: no token meta, assets linked relatively', () => {
    const html = indexHtml(undefined, { assetBase: '' });
    expect(html).not.toContain('tether-console-token');
    expect(html).toContain('<script type="module" src="app.js"></script>');
    expect(html).toContain('<link rel="stylesheet" href="app.css">');
    expect(indexHtml(undefined, { assetBase: 'console/' })).toContain('src="console/app.js"');
  });

  it('escapes the token as an attribute value', () => {
    expect(indexHtml('"><script>')).toContain('content="&quot;&gt;&lt;script&gt;"');
  });
});

describe('the bundle', () => {
  it('builds once per process, app.js and app.css, and stays under 60 KB gzip', async () => {
    const bundle = await consoleBundle();
    expect(await consoleBundle()).toBe(bundle);
    expect(bundle.js.contentType).toMatch(/^text\/javascript/);
    expect(bundle.css.contentType).toMatch(/^text\/css/);
    expect(bundle.js.bytes).toBe(bundle.js.body.length);
    expect(bundle.js.gzipBytes).toBeLessThan(60 * 1024);
    expect(bundle.css.body.toString()).toContain('.uplot');
    // the page reads its token from the DOM and never keeps it anywhere else
    const js = bundle.js.body.toString();
    expect(js).toContain('tether-console-token');
    expect(js).not.toMatch(/localStorage|sessionStorage|document\.cookie/);
  }, 30_000);
});

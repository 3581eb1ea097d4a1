// tether's version (package.json) and the default image reference of `tether init` / `tether join`:
// the one `tether image build` tags, localhost/tether:<version>.
import { readFileSync } from 'node:fs';

/** The version in package.json (the image tags itself with it too). */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version?: string;
  };
  return pkg.version ?? '0.0.0';
}

export function defaultImage(): string {
  return `localhost/tether:${packageVersion()}`;
}

// Reading Kubernetes manifests from files for `tether work create -f`: a YAML or JSON file (one
// or more `---`-separated documents, `kind: List` expanded) or a directory searched recursively
// for .yaml / .yml / .json files in name order. Errors name the file and the document. Sizes and
// counts are capped: these files end up inside one ManifestWork object on the hub.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { Manifest } from '../../api/index.ts';
import { InvalidArgumentError } from '../../errors.ts';

/** Largest file read. */
export const manifestFileMaxBytes = 4 * 1024 * 1024;
/** Most manifests one call returns. */
export const manifestsMaxCount = 1000;
/** Deepest directory recursion. */
const maxDepth = 16;

const manifestExtensions = new Set(['.yaml', '.yml', '.json']);

/** Every manifest in `fileOrDir` (a file, or a directory walked recursively), in order. */
export function loadManifests(fileOrDir: string): Manifest[] {
  let stat: ReturnType<typeof statSync>;
  try {
    stat = statSync(fileOrDir);
  } catch (err) {
    throw new InvalidArgumentError(
      `${fileOrDir}: cannot read it (${(err as NodeJS.ErrnoException).code ?? err})`,
    );
  }
  const files = stat.isDirectory() ? manifestFiles(fileOrDir, 0) : [fileOrDir];
  if (stat.isDirectory() && files.length === 0) {
    throw new InvalidArgumentError(`${fileOrDir}: no .yaml, .yml or .json files in it`);
  }
  const manifests: Manifest[] = [];
  for (const file of files) {
    for (const m of parseManifestFile(file)) {
      if (manifests.length >= manifestsMaxCount) {
        throw new InvalidArgumentError(`${fileOrDir}: more than ${manifestsMaxCount} manifests`);
      }
      manifests.push(m);
    }
  }
  return manifests;
}

function manifestFiles(dir: string, depth: number): string[] {
  if (depth > maxDepth) throw new InvalidArgumentError(`${dir}: directories nested deeper than ${maxDepth}`);
  const out: string[] = [];
  const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...manifestFiles(path, depth + 1));
    else if (entry.isFile() && manifestExtensions.has(extname(entry.name).toLowerCase())) out.push(path);
  }
  return out;
}

/** The manifests in one file; `file` is only used in error messages when `text` is given. */
export function parseManifestFile(file: string, text?: string): Manifest[] {
  let source = text;
  if (source === undefined) {
    const size = statSync(file).size;
    if (size > manifestFileMaxBytes) {
      throw new InvalidArgumentError(
        `${file}: ${size} bytes is more than the ${manifestFileMaxBytes} accepted`,
      );
    }
    source = readFileSync(file, 'utf8');
  }
  const manifests: Manifest[] = [];
  // YAML 1.2 is a superset of JSON, so one parser serves both.
  const documents = parseAllDocuments(source, { prettyErrors: true });
  const list = Array.isArray(documents) ? documents : [documents];
  list.forEach((doc, index) => {
    const where = `${file}, document ${index + 1}`;
    const problem = doc.errors[0];
    if (problem) {
      const line = problem.linePos?.[0]?.line;
      const at = line ? ` (line ${line})` : '';
      throw new InvalidArgumentError(`${where}${at}: invalid YAML: ${problem.message.split('\n')[0]}`);
    }
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined) return; // empty document, e.g. a trailing ---
    for (const m of expandList(value, where)) manifests.push(m);
  });
  return manifests;
}

function expandList(value: unknown, where: string): Manifest[] {
  const manifest = asManifest(value, where);
  if (manifest.kind === 'List' && manifest.apiVersion === 'v1' && Array.isArray(manifest.items)) {
    return manifest.items.map((item, i) => asManifest(item, `${where}, item ${i + 1}`));
  }
  return [manifest];
}

function asManifest(value: unknown, where: string): Manifest {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(
      `${where}: expected a Kubernetes object, got ${Array.isArray(value) ? 'a list' : typeof value}`,
    );
  }
  const m = value as Manifest;
  if (typeof m.apiVersion !== 'string' || !m.apiVersion)
    throw new InvalidArgumentError(`${where}: apiVersion is missing`);
  if (typeof m.kind !== 'string' || !m.kind) throw new InvalidArgumentError(`${where}: kind is missing`);
  if (m.kind !== 'List' && typeof m.metadata?.name !== 'string') {
    throw new InvalidArgumentError(`${where}: ${m.kind} has no metadata.name`);
  }
  return m;
}

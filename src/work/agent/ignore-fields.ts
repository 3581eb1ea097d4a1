// Server-side apply `ignoreFields` (OCM semantics): when a manifest config lists ignore fields, the
// agent stamps the object with a hash of what it applies (annotation config-spec-hash) and skips
// the apply while the live object carries the same hash — so drift made on the managed cluster
// stays until the work itself changes. Fields with condition OnSpokePresent are in addition left
// out of every apply after the object exists (the managed cluster's value wins for good); fields
// with OnSpokeChange are applied again whenever the work changes. Fields are named by RFC 6901
// JSON pointers, by the JSONPath subset of jsonpath.ts, or by jq path expressions (jq.ts, run in a
// worker with a timeout). No state.
import { createHash } from 'node:crypto';
import { type IgnoreField, IgnoreFieldsCondition } from '../../api/index.ts';
import { deleteByJq } from './jq.ts';
import { evaluateJsonPath, parseJsonPath } from './jsonpath.ts';

/** Most ignore paths (pointers + paths) one manifest config may list. */
export const ignorePathsMax = 64;

export class IgnoreFieldError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IgnoreFieldError';
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Remove what an RFC 6901 pointer names from `root` (in place); a missing target is no error. */
export function removeByJsonPointer(root: unknown, pointer: string): void {
  if (pointer === '') throw new IgnoreFieldError('the empty JSON pointer names the whole object');
  if (!pointer.startsWith('/'))
    throw new IgnoreFieldError(`JSON pointer ${JSON.stringify(pointer)} must start with /`);
  const tokens = pointer
    .slice(1)
    .split('/')
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
  let parent: unknown = root;
  for (const token of tokens.slice(0, -1)) {
    if (Array.isArray(parent)) parent = /^\d+$/.test(token) ? parent[Number(token)] : undefined;
    else if (isRecord(parent)) parent = parent[token];
    else return;
  }
  const last = tokens[tokens.length - 1] ?? '';
  if (Array.isArray(parent)) {
    if (/^\d+$/.test(last) && Number(last) < parent.length) parent.splice(Number(last), 1);
  } else if (isRecord(parent)) {
    delete parent[last];
  }
}

/** Remove the field a JSONPath such as `.spec.replicas` or `.metadata.annotations['a/b']` names (in place). */
export function removeByJsonPath(root: unknown, path: string): void {
  let segments: ReturnType<typeof parseJsonPath>;
  try {
    segments = parseJsonPath(path);
  } catch (err) {
    throw new IgnoreFieldError((err as Error).message);
  }
  const last = segments[segments.length - 1];
  if (last?.type !== 'field') {
    throw new IgnoreFieldError(`JSONPath ${JSON.stringify(path)} must end in a field name`);
  }
  for (const parent of evaluateJsonPath(root, segments.slice(0, -1))) {
    if (isRecord(parent)) delete parent[last.name];
  }
}

/** `obj` without the fields the given ignore fields name (a copy). */
export async function withoutFields<T>(obj: T, fields: readonly IgnoreField[]): Promise<T> {
  const copy = structuredClone(obj);
  const count = fields.reduce(
    (n, f) =>
      n + (f.jsonPointers?.length ?? 0) + (f.jsonPaths?.length ?? 0) + (f.jqPathExpressions?.length ?? 0),
    0,
  );
  if (count > ignorePathsMax) throw new IgnoreFieldError(`more than ${ignorePathsMax} ignore paths`);
  for (const field of fields) {
    for (const pointer of field.jsonPointers ?? []) removeByJsonPointer(copy, pointer);
    for (const path of field.jsonPaths ?? []) removeByJsonPath(copy, path);
  }
  const jq = fields.flatMap((f) => f.jqPathExpressions ?? []);
  if (jq.length === 0) return copy;
  try {
    return await deleteByJq(copy, jq);
  } catch (err) {
    throw new IgnoreFieldError(`jq: ${(err as Error).message}`);
  }
}

/** The fields dropped from applies once the object exists. */
export function onSpokePresent(fields: readonly IgnoreField[]): IgnoreField[] {
  return fields.filter(
    (f) => (f.condition ?? IgnoreFieldsCondition.OnSpokePresent) === IgnoreFieldsCondition.OnSpokePresent,
  );
}

/** JSON with sorted keys, so the hash does not depend on key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isRecord(value)) {
    return `{${Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The config-spec-hash of what is applied. */
export function configSpecHash(obj: unknown): string {
  return createHash('sha256').update(canonical(obj)).digest('hex').slice(0, 32);
}

// The subset of Kubernetes JSONPath that status feedback rules use: `.status.readyReplicas`,
// `.spec.template.metadata.labels['app.kubernetes.io/name']`, `.items[0]`, `.items[*].name` and
// the filter OCM's well-known rules need, `.status.conditions[?(@.type=="Ready")].status`.
// Paths come from ManifestWorks (a hub user writes them), so their length and depth are capped.
// Missing keys yield no match rather than an error, like client-go's AllowMissingKeys(true).

/** Longest path accepted. */
export const jsonPathMaxLength = 512;
/** Most segments in one path. */
export const jsonPathMaxSegments = 32;

type Literal = string | number | boolean | null;

type Segment =
  | { type: 'field'; name: string }
  | { type: 'index'; index: number }
  | { type: 'wildcard' }
  | { type: 'filter'; path: string[]; op: '==' | '!='; value: Literal };

export class JsonPathError extends Error {
  constructor(path: string, problem: string) {
    super(`invalid JSONPath ${JSON.stringify(path)}: ${problem}`);
    this.name = 'JsonPathError';
  }
}

const identifier = /^[A-Za-z_$][\w$-]*/;

/** Parse a path such as `.status.conditions[?(@.type=="Ready")].status` (surrounding `{}` allowed). */
export function parseJsonPath(input: string): Segment[] {
  let path = input.trim();
  if (path.length > jsonPathMaxLength)
    throw new JsonPathError(input.slice(0, 40), `longer than ${jsonPathMaxLength}`);
  if (path.startsWith('{') && path.endsWith('}')) path = path.slice(1, -1).trim();
  if (path.startsWith('$')) path = path.slice(1);
  const fail = (problem: string) => new JsonPathError(input, problem);
  const segments: Segment[] = [];
  let i = 0;
  while (i < path.length) {
    if (segments.length >= jsonPathMaxSegments) throw fail(`more than ${jsonPathMaxSegments} segments`);
    const rest = path.slice(i);
    if (rest.startsWith('..')) throw fail('recursive descent (..) is not supported');
    if (rest[0] === '.') {
      const m = identifier.exec(rest.slice(1));
      if (rest[1] === '*') {
        segments.push({ type: 'wildcard' });
        i += 2;
      } else if (m) {
        segments.push({ type: 'field', name: m[0] });
        i += 1 + m[0].length;
      } else {
        throw fail(`expected a field name at offset ${i + 1}`);
      }
      continue;
    }
    if (rest[0] === '[') {
      const close = findClose(rest);
      if (close < 0) throw fail(`unclosed [ at offset ${i}`);
      segments.push(parseBracket(rest.slice(1, close).trim(), fail));
      i += close + 1;
      continue;
    }
    throw fail(`unexpected ${JSON.stringify(rest[0])} at offset ${i}`);
  }
  if (segments.length === 0) throw fail('empty path');
  return segments;
}

/** Index of the `]` closing the bracket that starts `text`, skipping quoted strings. */
function findClose(text: string): number {
  let quote: string | undefined;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '[') depth++;
    else if (c === ']' && --depth === 0) return i;
  }
  return -1;
}

function parseBracket(body: string, fail: (problem: string) => Error): Segment {
  if (body === '*') return { type: 'wildcard' };
  if (/^-?\d+$/.test(body)) return { type: 'index', index: Number(body) };
  const quoted = parseQuoted(body);
  if (quoted !== undefined) return { type: 'field', name: quoted };
  const filter = /^\?\(\s*@((?:\.[A-Za-z_$][\w$-]*)+)\s*(==|!=)\s*(.+?)\s*\)$/.exec(body);
  if (filter) {
    const [, fieldPath = '', op, literal = ''] = filter;
    return {
      type: 'filter',
      path: fieldPath.slice(1).split('.'),
      op: op as '==' | '!=',
      value: parseLiteral(literal, fail),
    };
  }
  throw fail(`unsupported bracket expression [${body}]`);
}

function parseQuoted(text: string): string | undefined {
  if (text.length < 2) return undefined;
  const q = text[0];
  if ((q !== '"' && q !== "'") || text[text.length - 1] !== q) return undefined;
  return text.slice(1, -1).replace(/\\(.)/g, '$1');
}

function parseLiteral(text: string, fail: (problem: string) => Error): Literal {
  const quoted = parseQuoted(text);
  if (quoted !== undefined) return quoted;
  if (text === 'true') return true;
  if (text === 'false') return false;
  if (text === 'null') return null;
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  throw fail(`unsupported literal ${text}`);
}

/** Every value `segments` select in `root`; [] when a key along the way is missing. */
export function evaluateJsonPath(root: unknown, segments: readonly Segment[]): unknown[] {
  let current: unknown[] = [root];
  for (const segment of segments) {
    const next: unknown[] = [];
    for (const value of current) {
      switch (segment.type) {
        case 'field':
          if (isRecord(value) && Object.hasOwn(value, segment.name)) next.push(value[segment.name]);
          break;
        case 'index':
          if (Array.isArray(value)) {
            const at = segment.index < 0 ? value.length + segment.index : segment.index;
            if (at >= 0 && at < value.length) next.push(value[at]);
          }
          break;
        case 'wildcard':
          if (Array.isArray(value)) next.push(...value);
          else if (isRecord(value)) next.push(...Object.values(value));
          break;
        case 'filter':
          if (Array.isArray(value)) {
            for (const item of value) {
              const field = fieldAt(item, segment.path);
              const equal = field.found && field.value === segment.value;
              if (segment.op === '==' ? equal : field.found && !equal) next.push(item);
            }
          }
          break;
      }
    }
    current = next;
  }
  return current;
}

function fieldAt(value: unknown, path: readonly string[]): { found: boolean; value?: unknown } {
  let v = value;
  for (const key of path) {
    if (!isRecord(v) || !Object.hasOwn(v, key)) return { found: false };
    v = v[key];
  }
  return { found: true, value: v };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

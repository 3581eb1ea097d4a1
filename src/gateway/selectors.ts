// Label and field selectors for list and watch of ClusterGateways, with the apiserver's syntax:
// `a=b,c!=d,e in (x,y),f notin (z),g,!h` for labels; `metadata.name=x` / `metadata.name!=x` for
// fields (the only field ClusterGateways can be selected by).
import { InvalidArgumentError } from '../errors.ts';

export type Matcher = (labels: Record<string, string> | undefined, name: string) => boolean;

interface Requirement {
  key: string;
  op: 'eq' | 'neq' | 'in' | 'notin' | 'exists' | 'notexists';
  values: string[];
}

/** Splits at commas that are not inside parentheses. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(text.slice(start));
  return terms.map((t) => t.trim()).filter(Boolean);
}

const KEY = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;

function parseRequirement(term: string): Requirement {
  let m = /^(\S+?)\s*(==|!=|=)\s*(\S*)$/.exec(term);
  if (m) {
    const [, key, op, value] = m as unknown as [string, string, string, string];
    return { key, op: op === '!=' ? 'neq' : 'eq', values: [value] };
  }
  m = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
  if (m) {
    const [, key, op, list] = m as unknown as [string, string, 'in' | 'notin', string];
    return { key, op, values: list.split(',').map((v) => v.trim()) };
  }
  if (term.startsWith('!')) return { key: term.slice(1).trim(), op: 'notexists', values: [] };
  return { key: term, op: 'exists', values: [] };
}

/** Parses a label selector; throws InvalidArgumentError (→ 400) when it is malformed. */
export function parseLabelSelector(selector: string | null | undefined): Matcher {
  const requirements = splitTerms(selector ?? '').map(parseRequirement);
  for (const r of requirements) {
    if (!KEY.test(r.key)) throw new InvalidArgumentError(`invalid label selector key "${r.key}"`);
  }
  return (labels) =>
    requirements.every((r) => {
      const has = labels !== undefined && Object.hasOwn(labels, r.key);
      const value = has ? labels[r.key] : undefined;
      switch (r.op) {
        case 'eq':
          return value === r.values[0];
        case 'neq':
          return value !== r.values[0];
        case 'in':
          return value !== undefined && r.values.includes(value);
        case 'notin':
          return value === undefined || !r.values.includes(value);
        case 'exists':
          return has;
        case 'notexists':
          return !has;
      }
      return false;
    });
}

/** Parses a field selector on metadata.name; throws InvalidArgumentError for any other field. */
export function parseFieldSelector(selector: string | null | undefined): Matcher {
  const requirements = splitTerms(selector ?? '').map((term) => {
    const m = /^([a-z.]+)\s*(==|!=|=)\s*(.*)$/.exec(term);
    if (m?.[1] !== 'metadata.name') {
      throw new InvalidArgumentError(`field selector "${term}": only metadata.name is supported`);
    }
    return { negate: m[2] === '!=', value: m[3] as string };
  });
  return (_labels, name) => requirements.every((r) => (name === r.value) !== r.negate);
}

/** Both selectors of a request at once. */
export function selectorMatcher(query: URLSearchParams): Matcher {
  const labels = parseLabelSelector(query.get('labelSelector'));
  const fields = parseFieldSelector(query.get('fieldSelector'));
  return (l, name) => labels(l, name) && fields(l, name);
}

// Turns TypeScript manifest functions into Helm templates (used by charts.ts; no chart content here).
//
// Every value a user sets is passed into the function as a sentinel (a string or number no real
// manifest holds) and becomes a `{{ … }}` action in the YAML: the whole scalar (`toJson`, so any
// string stays one YAML scalar) or a `printf` of the literal parts around it. Values that change the
// *shape* of the output (an optional feature, an enum) are dimensions: the function renders once per
// combination ("variant"), the YAML lines of the variants are merged by longest common subsequence,
// and every run of lines only some variants have is wrapped in `{{- if … }}` with the shortest
// condition that selects exactly those variants; a line that differs between the options of an enum
// only by the option's own text prints the value instead. Each variant's own lines survive in order,
// so the template renders every variant exactly as the function does, by construction (for the
// enum, as long as the value is one of its options: the chart's values.schema.json says so).
import type { KubernetesObject } from '@kubernetes/client-node';
import { stringify } from 'yaml';

/** A value the user sets: `token` stands for it in the TypeScript objects, `expr` in the template. */
export interface Sentinel {
  token: string | number;
  /** a template operand, e.g. `.Values.image` or `(int .Values.replicas)` */
  expr: string;
  /** the whole scalar is `{{ expr }}` as is (expr already renders valid YAML) */
  raw?: boolean;
}

/** A value that changes the shape of the output; each option renders a variant. */
export interface Dimension {
  /** Helm condition per option (same order as the options the render function gets) */
  conditions: string[];
  /** condition that excludes one option, by option index (for a short `ne`/`not` form) */
  negations?: string[];
  /**
   * How each option appears in the YAML, and the action that prints it: a line that differs between
   * the options only by that text becomes one line with the action instead of one `if` per option.
   */
  value?: { texts: string[]; action: string };
}

export interface ChartObject {
  object: KubernetesObject;
  /** template file (without .yaml) */
  file: string;
}

export interface ChartFile {
  /** path inside the chart directory */
  path: string;
  content: string;
}

// ---------------------------------------------------------------------------------------------
// sentinels → template actions

export class Placeholders {
  private readonly byText = new Map<string, string>();
  private readonly actions = new Map<string, string>();
  private readonly sentinels: Sentinel[];

  constructor(sentinels: Sentinel[]) {
    this.sentinels = sentinels;
  }

  /** Replaces every sentinel-bearing leaf by a placeholder (same leaf, same placeholder). */
  replace(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((v) => this.replace(v));
    if (value && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.replace(v)]));
    if (typeof value === 'number') {
      const s = this.sentinels.find((x) => x.token === value);
      return s ? this.placeholder(`n:${value}`, `{{ ${s.expr} }}`) : value;
    }
    if (typeof value !== 'string') return value;
    const action = this.stringAction(value);
    return action ? this.placeholder(`s:${value}`, action) : value;
  }

  private stringAction(value: string): string | undefined {
    const tokens = this.sentinels
      .map((s) => ({ s, t: String(s.token) }))
      .filter(({ t }) => value.includes(t));
    if (tokens.length === 0) return undefined;
    const whole = tokens.find(({ t }) => t === value);
    if (whole) return whole.s.raw ? `{{ ${whole.s.expr} }}` : `{{ ${whole.s.expr} | toString | toJson }}`;
    // a string with values inside: printf of the literal parts and the values
    const pattern = new RegExp(
      tokens.map(({ t }) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'),
      'g',
    );
    let format = '';
    const operands: string[] = [];
    let last = 0;
    for (const m of value.matchAll(pattern)) {
      format += value.slice(last, m.index).replaceAll('%', '%%');
      format += '%v';
      operands.push(tokens.find(({ t }) => t === m[0])?.s.expr ?? '');
      last = m.index + m[0].length;
    }
    format += value.slice(last).replaceAll('%', '%%');
    return `{{ printf ${JSON.stringify(format)} ${operands.join(' ')} | toJson }}`;
  }

  private placeholder(key: string, action: string): string {
    let p = this.byText.get(key);
    if (!p) {
      p = `TETHERPLACEHOLDER${String(this.byText.size).padStart(4, '0')}X`;
      this.byText.set(key, p);
      this.actions.set(p, action);
    }
    return p;
  }

  /** Turns placeholders into their actions. */
  finish(text: string): string {
    return text.replace(/TETHERPLACEHOLDER\d{4}X/g, (p) => {
      const a = this.actions.get(p);
      if (!a) throw new Error(`unknown placeholder ${p}`);
      return a;
    });
  }

  /** Throws if a sentinel survived somewhere a placeholder could not reach (e.g. a map key). */
  check(text: string): void {
    for (const s of this.sentinels)
      if (typeof s.token === 'string' && text.includes(s.token))
        throw new Error(`sentinel ${s.token} left in the chart output`);
  }
}

// ---------------------------------------------------------------------------------------------
// variants → conditional lines

function combos(dims: Dimension[]): number[][] {
  let out: number[][] = [[]];
  for (const d of dims) out = out.flatMap((c) => d.conditions.map((_, i) => [...c, i]));
  return out;
}

/**
 * A condition true on every combo in `want` and false on every other combo in `context` (combos
 * outside `context` do not matter): the shortest conjunction if one does, else an `or` of them.
 */
function condition(dims: Dimension[], all: number[][], want: Set<number>, context: Set<number>): string {
  // a conjunction: per dimension the allowed options (all allowed = no constraint)
  const subsets = (n: number): number[][] => {
    const out: number[][] = [];
    for (let mask = 1; mask < 1 << n; mask++) out.push([...Array(n).keys()].filter((i) => mask & (1 << i)));
    return out;
  };
  let terms: number[][][] = [[]];
  for (const d of dims) terms = terms.flatMap((t) => subsets(d.conditions.length).map((s) => [...t, s]));
  const matches = (term: number[][]): number[] =>
    [...context].filter((c) => term.every((allowed, i) => allowed.includes(all[c]?.[i] ?? -1)));
  const constraints = (term: number[][]) =>
    term.filter((a, i) => a.length < (dims[i]?.conditions.length ?? 0)).length;
  const usable = terms
    .map((term) => ({ term, hits: matches(term) }))
    .filter(({ hits }) => hits.every((c) => want.has(c)))
    .sort((a, b) => constraints(a.term) - constraints(b.term));
  const exact = usable.find(({ hits }) => hits.length === want.size);
  const chosen: number[][][] = [];
  if (exact) chosen.push(exact.term);
  else {
    const left = new Set(want);
    while (left.size > 0) {
      const best = usable
        .map((u) => ({ ...u, gain: u.hits.filter((c) => left.has(c)).length }))
        .sort((a, b) => b.gain - a.gain)[0];
      if (!best || best.gain === 0) throw new Error('no condition selects these variants');
      chosen.push(best.term);
      for (const c of best.hits) left.delete(c);
    }
  }
  const render = (term: number[][]): string => {
    const parts = term.flatMap((allowed, i) => {
      const d = dims[i];
      if (!d || allowed.length === d.conditions.length) return [];
      if (allowed.length === 1) return [d.conditions[allowed[0] ?? 0] ?? ''];
      const missing = d.conditions.map((_, k) => k).filter((k) => !allowed.includes(k));
      if (missing.length === 1 && d.negations?.[missing[0] ?? 0]) return [d.negations[missing[0] ?? 0] ?? ''];
      return [`or ${allowed.map((k) => `(${d.conditions[k]})`).join(' ')}`];
    });
    if (parts.length === 0) return 'true';
    return parts.length === 1 ? (parts[0] ?? '') : `and ${parts.map((p) => `(${p})`).join(' ')}`;
  };
  return chosen.length === 1
    ? render(chosen[0] ?? [])
    : `or ${chosen.map((t) => `(${render(t)})`).join(' ')}`;
}

interface MergedLine {
  text: string;
  variants: Set<number>;
}

/** Merges the variants' line lists so that each variant's lines, filtered by membership, come back in order. */
function mergeLines(variants: Array<{ combo: number; lines: string[] }>): MergedLine[] {
  const [first, ...rest] = variants;
  if (!first) return [];
  let merged: MergedLine[] = first.lines.map((text) => ({ text, variants: new Set([first.combo]) }));
  for (const v of rest) {
    const a = merged.map((m) => m.text);
    const b = v.lines;
    const n = a.length;
    const m = b.length;
    const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
    for (let i = n - 1; i >= 0; i--)
      for (let j = m - 1; j >= 0; j--)
        (lcs[i] as number[])[j] =
          a[i] === b[j]
            ? (lcs[i + 1]?.[j + 1] ?? 0) + 1
            : Math.max(lcs[i + 1]?.[j] ?? 0, lcs[i]?.[j + 1] ?? 0);
    const out: MergedLine[] = [];
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      const mi = merged[i];
      if (i < n && j < m && mi && a[i] === b[j]) {
        mi.variants.add(v.combo);
        out.push(mi);
        i++;
        j++;
      } else if (i < n && mi && (j >= m || (lcs[i + 1]?.[j] ?? 0) >= (lcs[i]?.[j + 1] ?? 0))) {
        out.push(mi);
        i++;
      } else {
        out.push({ text: b[j] ?? '', variants: new Set([v.combo]) });
        j++;
      }
    }
    merged = out;
  }
  return merged;
}

const setKey = (s: Set<number>): string => [...s].sort((x, y) => x - y).join(',');

/** Consecutive lines the same variants have. */
interface Run {
  variants: Set<number>;
  lines: string[];
}

/**
 * Runs of one line per option of a dimension with a `value`, lines equal but for the option's
 * text, become one line printing the value (`type: {{ … }}` instead of an `if` per Service type).
 */
function collapseValues(dims: Dimension[], all: number[][], present: Set<number>, runs: Run[]): Run[] {
  const out: Run[] = [];
  for (let r = 0; r < runs.length; ) {
    let collapsed: Run | undefined;
    for (const [d, dim] of dims.entries()) {
      const texts = dim.value?.texts;
      if (!dim.value || !texts || r + texts.length > runs.length) continue;
      const window = runs.slice(r, r + texts.length);
      // which option each run is: exactly the present variants with that option
      const option = window.map((run) =>
        texts.findIndex(
          (_, j) => setKey(run.variants) === setKey(new Set([...present].filter((c) => all[c]?.[d] === j))),
        ),
      );
      if (
        window.some((run) => run.lines.length !== 1) ||
        new Set(option).size !== texts.length ||
        option.includes(-1)
      )
        continue;
      const line = (j: number): string => window[option.indexOf(j)]?.lines[0] ?? '';
      const first = line(0);
      const at = first.indexOf(texts[0] ?? '');
      if (at < 0) continue;
      const prefix = first.slice(0, at);
      const suffix = first.slice(at + (texts[0] ?? '').length);
      if (!texts.every((t, j) => line(j) === `${prefix}${t}${suffix}`)) continue;
      collapsed = { variants: present, lines: [`${prefix}${dim.value.action}${suffix}`] };
      r += texts.length;
      break;
    }
    if (collapsed) out.push(collapsed);
    else out.push(runs[r++] as Run);
  }
  return out;
}

function objectKey(o: KubernetesObject): string {
  return `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;
}

/**
 * Template files from `render(combo)` for every combination of `dims`: one file per `file` group,
 * objects in first-seen order, lines and objects only some variants have under `{{- if … }}`.
 */
export function templates(
  dims: Dimension[],
  render: (combo: number[]) => ChartObject[],
  placeholders: Placeholders,
  filePreamble: Record<string, string> = {},
): ChartFile[] {
  const all = combos(dims);
  const everything = new Set(all.map((_, i) => i));
  const byKey = new Map<string, { file: string; variants: Array<{ combo: number; lines: string[] }> }>();
  // the variant with every option last (for booleans: all features on) first, so the order
  // of objects and lines follows the fullest output
  const order = [...all.keys()].reverse();
  for (const c of order) {
    for (const { object, file } of render(all[c] ?? [])) {
      const key = objectKey(object);
      const yaml = stringify(placeholders.replace(object), { lineWidth: 0 });
      const entry = byKey.get(key) ?? { file, variants: [] };
      // a literal `{{` in a manifest (a CEL expression, say) must not start an action
      const lines = yaml.trimEnd().replaceAll('{{', '{{ "{{" }}').split('\n');
      entry.variants.push({ combo: c, lines });
      byKey.set(key, entry);
    }
  }
  const files = new Map<string, string[]>();
  for (const { file, variants } of byKey.values()) {
    const present = new Set(variants.map((v) => v.combo));
    const out: string[] = [];
    const objectCondition =
      setKey(present) === setKey(everything) ? undefined : condition(dims, all, present, everything);
    if (objectCondition) out.push(`{{- if ${objectCondition} }}`);
    out.push('---');
    const runs: Run[] = [];
    for (const line of mergeLines(variants)) {
      const last = runs.at(-1);
      if (last && setKey(last.variants) === setKey(line.variants)) last.lines.push(line.text);
      else runs.push({ variants: line.variants, lines: [line.text] });
    }
    for (const run of collapseValues(dims, all, present, runs)) {
      if (setKey(run.variants) === setKey(present)) out.push(...run.lines);
      else out.push(`{{- if ${condition(dims, all, run.variants, present)} }}`, ...run.lines, '{{- end }}');
    }
    if (objectCondition) out.push('{{- end }}');
    files.set(file, [...(files.get(file) ?? []), ...out]);
  }
  return [...files].map(([file, lines]) => {
    const body = placeholders.finish(`${lines.join('\n')}\n`);
    placeholders.check(body);
    return { path: `templates/${file}.yaml`, content: `${filePreamble[file] ?? ''}${body}` };
  });
}

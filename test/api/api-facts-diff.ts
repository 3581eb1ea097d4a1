// Compares the CRDs tether serves with OCM's published API as recorded in ocm-api-facts.json (a
// copy of ../shared/ocm/api-facts.json: facts taken from OCM's CRD manifests, see its `source` and
// `notation`). Flattens each tether schema into the facts' notation — one record per field path,
// `[]` for array items, `{}` for map values — and yields one difference per aspect that differs,
// so a failure prints one readable line per difference. Pure: no cluster, no I/O.

import type { CrdManifest, CrdManifestVersion, JsonSchema } from '../../src/api/index.ts';

/** One field as the facts record it (see `notation` in the facts file). */
export interface FactField {
  path: string;
  type: string;
  required: boolean;
  requiredChildren?: string[];
  [facet: string]: unknown;
}

export interface FactVersion {
  name: string;
  served: boolean;
  storage: boolean;
  deprecated: boolean;
  subresources: Record<string, unknown>;
  additionalPrinterColumns: Array<Record<string, unknown>>;
  rootRequired: string[];
  fields: FactField[];
}

/** The conversion block of a tether CRD, as on the wire. */
interface TetherConversion {
  strategy: string;
  webhook?: {
    clientConfig: { service?: Record<string, unknown> };
    conversionReviewVersions: string[];
  };
}

export interface FactConversion {
  strategy: string;
  service?: Record<string, unknown>;
  conversionReviewVersions?: string[];
}

export interface FactCrd {
  kind: string;
  crdName: string;
  group: string;
  listKind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  categories: string[];
  scope: string;
  conversion: FactConversion | null;
  versions: FactVersion[];
}

export interface ApiFacts {
  crds: FactCrd[];
  skipped: Array<{ kind: string; reason: string }>;
}

/** One way tether differs from OCM. `path` is a field path, or `(crd)` for the CRD itself. */
export interface Difference {
  kind: string;
  /** version name; '' for CRD-wide aspects */
  version: string;
  path: string;
  aspect: string;
  ocm: unknown;
  tether: unknown;
}

export const crdPath = '(crd)';

const show = (v: unknown): string => (v === undefined ? '(none)' : JSON.stringify(v));

/** `Kind version path aspect: OCM …, tether …` on one line. */
export function formatDifference(d: Difference): string {
  const where = [d.kind, d.version, d.path].filter((p) => p !== '').join(' ');
  return `${where} ${d.aspect}: OCM ${show(d.ocm)}, tether ${show(d.tether)}`;
}

// Facets compared as written (order matters: a pattern, a list-map key order, a default).
const exactFacets = [
  'type',
  'required',
  'default',
  'pattern',
  'format',
  'minLength',
  'maxLength',
  'minimum',
  'exclusiveMinimum',
  'maximum',
  'minItems',
  'maxItems',
  'nullable',
  'listType',
  'listMapKeys',
  'mapType',
  'intOrString',
  'preserveUnknownFields',
  'embeddedResource',
  'anyOf',
  'celValidations',
] as const;
// Facets whose order carries no meaning.
const setFacets = ['requiredChildren', 'enum'] as const;

/** A tether schema flattened into the facts' notation. */
export function flattenSchema(root: JsonSchema): FactField[] {
  const out: FactField[] = [];
  const visit = (node: JsonSchema, path: string, required: boolean) => {
    out.push(fieldOf(node, path, required));
    for (const [name, child] of Object.entries(node.properties ?? {})) {
      visit(child, path === '' ? name : `${path}.${name}`, node.required?.includes(name) ?? false);
    }
    if (node.items) visit(node.items, `${path}[]`, false);
    if (node.additionalProperties) visit(node.additionalProperties, `${path}{}`, false);
  };
  for (const [name, child] of Object.entries(root.properties ?? {})) {
    visit(child, name, root.required?.includes(name) ?? false);
  }
  return out;
}

function fieldOf(node: JsonSchema, path: string, required: boolean): FactField {
  const ext = node as Record<string, unknown>;
  const type = ext['x-kubernetes-int-or-string']
    ? 'int-or-string'
    : (node.type ?? (ext['x-kubernetes-preserve-unknown-fields'] ? 'any' : '(none)'));
  const facets: Record<string, unknown> = {
    requiredChildren: node.required,
    enum: node.enum,
    default: node.default,
    pattern: node.pattern,
    format: node.format,
    minLength: node.minLength,
    maxLength: node.maxLength,
    minimum: node.minimum,
    exclusiveMinimum: node.exclusiveMinimum,
    maximum: node.maximum,
    minItems: node.minItems,
    maxItems: node.maxItems,
    nullable: node.nullable,
    listType: ext['x-kubernetes-list-type'],
    listMapKeys: ext['x-kubernetes-list-map-keys'],
    mapType: ext['x-kubernetes-map-type'],
    intOrString: ext['x-kubernetes-int-or-string'],
    preserveUnknownFields: ext['x-kubernetes-preserve-unknown-fields'],
    embeddedResource: ext['x-kubernetes-embedded-resource'],
    anyOf: node.anyOf,
    celValidations: ext['x-kubernetes-validations'],
  };
  const field: FactField = { path, type, required };
  for (const [k, v] of Object.entries(facets)) if (v !== undefined) field[k] = v;
  return field;
}

/** JSON with object keys sorted, so key order (which YAML and Go structs do not fix) never differs. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

const same = (a: unknown, b: unknown) => canonical(a) === canonical(b);
const sorted = (v: unknown) => (Array.isArray(v) ? [...v].map(String).sort() : v);

function compareFields(kind: string, version: string, ocm: FactField[], ours: FactField[]): Difference[] {
  const diffs: Difference[] = [];
  const theirs = new Map(ocm.map((f) => [f.path, f]));
  const mine = new Map(ours.map((f) => [f.path, f]));
  for (const [path, f] of theirs) {
    const t = mine.get(path);
    if (!t) {
      diffs.push({ kind, version, path, aspect: 'field', ocm: f.type, tether: undefined });
      continue;
    }
    for (const facet of exactFacets) {
      if (!same(f[facet], t[facet])) {
        diffs.push({ kind, version, path, aspect: facet, ocm: f[facet], tether: t[facet] });
      }
    }
    for (const facet of setFacets) {
      if (!same(sorted(f[facet]), sorted(t[facet]))) {
        diffs.push({ kind, version, path, aspect: facet, ocm: f[facet], tether: t[facet] });
      }
    }
  }
  for (const [path, t] of mine) {
    if (!theirs.has(path))
      diffs.push({ kind, version, path, aspect: 'field', ocm: undefined, tether: t.type });
  }
  return diffs;
}

const withPriority = (c: Record<string, unknown>) => ({ priority: 0, ...c });

function compareVersion(kind: string, ocm: FactVersion, ours: CrdManifestVersion): Difference[] {
  const v = ocm.name;
  const crd = (aspect: string, a: unknown, b: unknown): Difference[] =>
    same(a, b) ? [] : [{ kind, version: v, path: crdPath, aspect, ocm: a, tether: b }];
  const root = ours.schema.openAPIV3Schema;
  return [
    ...crd('served', ocm.served, ours.served),
    ...crd('storage', ocm.storage, ours.storage),
    ...crd('deprecated', ocm.deprecated, (ours as { deprecated?: boolean }).deprecated ?? false),
    ...crd('subresources', ocm.subresources, ours.subresources ?? {}),
    ...crd(
      'printerColumns',
      ocm.additionalPrinterColumns.map(withPriority),
      (ours.additionalPrinterColumns ?? []).map((c) => withPriority({ ...c })),
    ),
    ...crd('rootRequired', [...ocm.rootRequired].sort(), [...(root.required ?? [])].sort()),
    ...compareFields(kind, v, ocm.fields, flattenSchema(root)),
  ];
}

/** Every difference between tether's CRDs and the facts, in a stable order. */
export function compareWithFacts(facts: ApiFacts, served: readonly CrdManifest[]): Difference[] {
  const diffs: Difference[] = [];
  const byKind = new Map(served.map((c) => [c.spec.names.kind, c]));
  for (const f of facts.crds) {
    const kind = f.kind;
    const ours = byKind.get(kind);
    if (!ours) {
      diffs.push({ kind, version: '', path: crdPath, aspect: 'served', ocm: true, tether: false });
      continue;
    }
    const crd = (aspect: string, a: unknown, b: unknown) => {
      if (!same(a, b)) diffs.push({ kind, version: '', path: crdPath, aspect, ocm: a, tether: b });
    };
    const { names } = ours.spec;
    const categories = (names as { categories?: string[] }).categories ?? [];
    crd('name', f.crdName, ours.metadata.name);
    crd('group', f.group, ours.spec.group);
    crd('scope', f.scope, ours.spec.scope);
    crd('plural', f.plural, names.plural);
    crd('singular', f.singular, names.singular);
    crd('listKind', f.listKind, names.listKind);
    crd('shortNames', [...f.shortNames].sort(), [...(names.shortNames ?? [])].sort());
    crd('categories', [...f.categories].sort(), [...categories].sort());
    const conversion = (ours.spec as { conversion?: TetherConversion }).conversion;
    crd('conversion', f.conversion?.strategy ?? 'None', conversion?.strategy ?? 'None');
    if (f.conversion && conversion?.webhook) {
      const service = conversion.webhook.clientConfig.service;
      crd(
        'conversion reviewVersions',
        f.conversion.conversionReviewVersions,
        conversion.webhook.conversionReviewVersions,
      );
      // The namespace is a template in OCM's manifest; name, port and path are fixed there.
      if (service) {
        crd(
          'conversion service',
          { ...f.conversion.service, namespace: undefined },
          { ...service, namespace: undefined },
        );
      }
    }
    const mine = new Map(ours.spec.versions.map((v) => [v.name, v]));
    for (const fv of f.versions) {
      const tv = mine.get(fv.name);
      if (!tv) crd(`version ${fv.name}`, 'served', undefined);
      else diffs.push(...compareVersion(kind, fv, tv));
    }
    const known = new Set(f.versions.map((v) => v.name));
    for (const tv of ours.spec.versions) {
      if (!known.has(tv.name)) crd(`version ${tv.name}`, undefined, 'served');
    }
  }
  const inFacts = new Set([...facts.crds.map((c) => c.kind), ...facts.skipped.map((s) => s.kind)]);
  for (const c of served) {
    if (!inFacts.has(c.spec.names.kind)) {
      diffs.push({
        kind: c.spec.names.kind,
        version: '',
        path: crdPath,
        aspect: 'unknown to OCM',
        ocm: undefined,
        tether: true,
      });
    }
  }
  for (const s of facts.skipped) {
    if (byKind.has(s.kind)) {
      diffs.push({
        kind: s.kind,
        version: '',
        path: crdPath,
        aspect: 'no facts',
        ocm: s.reason,
        tether: 'served',
      });
    }
  }
  return diffs;
}

/** An allow-list entry: which differences it covers, and why they are accepted. */
export interface Allowed {
  kind: string;
  /** version name, or omitted for any */
  version?: string;
  /** a field path, `(crd)`, a prefix ending in `*`, or `*` for any */
  path: string;
  /** an aspect (`field`, `maxLength`, `shortNames`, …) or `*` for any */
  aspect: string;
  why: string;
}

export function covers(a: Allowed, d: Difference): boolean {
  if (a.kind !== d.kind) return false;
  if (a.version !== undefined && a.version !== d.version) return false;
  if (a.aspect !== '*' && a.aspect !== d.aspect) return false;
  if (a.path.endsWith('*')) return d.path.startsWith(a.path.slice(0, -1));
  return a.path === d.path;
}

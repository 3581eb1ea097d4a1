// JSON with object keys sorted, for comparing what we want with what the apiserver returns: it
// hands custom resources' keys back in its own order, so a plain JSON.stringify comparison would
// see a difference and write again. Pure.

/** `v` as JSON text with every object's keys in sorted order (undefined as null). */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const keys = Object.keys(v)
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v ?? null);
}

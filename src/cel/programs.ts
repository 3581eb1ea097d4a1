// What every CEL user in tether shares (work condition rules, placement CEL selectors): the limits
// on an expression from the hub, a bounded cache of parsed programs per environment, and JSON values
// turned into the values the Go CEL library would see. The environments themselves (variables,
// functions) belong to their users.
import type { Environment } from '@marcbachmann/cel-js';

/** Longest expression accepted (OCM's CRDs set no limit). */
export const celExpressionMaxLength = 4096;
/** Most expressions one rule or selector may hold. */
export const celExpressionsMaxCount = 32;
/** Parsed programs kept per environment (least recently added goes first). */
const parsedCacheMax = 512;

export type CelProgram = ReturnType<Environment['parse']>;

/** A compile function for `environment`: bounded length, cached parses. */
export function celCompiler(environment: Environment): (expression: string) => CelProgram {
  const parsed = new Map<string, CelProgram>();
  return (expression) => {
    let program = parsed.get(expression);
    if (program) return program;
    if (expression.length > celExpressionMaxLength) {
      throw new Error(`expression longer than ${celExpressionMaxLength} characters`);
    }
    program = environment.parse(expression);
    if (parsed.size >= parsedCacheMax) parsed.delete(parsed.keys().next().value as string);
    parsed.set(expression, program);
    return program;
  };
}

/** JSON integers as CEL ints (bigint), so `object.spec.replicas + 1` type-checks as it does in Go. */
export function toCelValue(value: unknown): unknown {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (Array.isArray(value)) return value.map(toCelValue);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toCelValue(v)]));
  }
  return value;
}

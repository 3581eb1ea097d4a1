// resource.Quantity arithmetic for ManagedCluster.status.capacity/allocatable: parse the strings
// nodes report ("4", "500m", "16314660Ki", "1.5G", "1e3"), add them exactly, and print the sum the
// way apimachinery canonicalises it (so OCM's Go agent and this one report the same text).
// Values are held as bigint nano-units: every legal suffix and up to nine decimals stay exact.
import { InvalidArgumentError } from '../../errors.ts';

type QuantityFormat = 'BinarySI' | 'DecimalSI' | 'DecimalExponent';

export interface Quantity {
  /** value × 10^9 */
  nanos: bigint;
  format: QuantityFormat;
}

const NANO = 1_000_000_000n;

const binarySuffixes: Record<string, bigint> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};

/** Decimal SI suffixes by power of ten. */
const decimalSuffixes: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const suffixByExponent = new Map(Object.entries(decimalSuffixes).map(([suffix, exp]) => [exp, suffix]));

const QUANTITY = /^([+-]?)(\d*)(?:\.(\d*))?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

/** Parse a Kubernetes quantity; throws InvalidArgumentError for text apimachinery would reject. */
export function parseQuantity(text: string): Quantity {
  const m = QUANTITY.exec(text.trim());
  const [, sign = '', whole = '', fraction = '', suffix = ''] = m ?? [];
  if (!m || (whole === '' && fraction === '')) {
    throw new InvalidArgumentError(`"${text}" is not a Kubernetes quantity`);
  }
  // mantissa × 10^-digits, exactly
  const digits = fraction.length;
  let value = BigInt(`${whole || '0'}${fraction}`);
  let format: QuantityFormat = 'DecimalSI';
  let exponent = -digits;
  if (suffix in binarySuffixes) {
    format = 'BinarySI';
    value *= binarySuffixes[suffix]!;
  } else if (/^[eE]/.test(suffix)) {
    format = 'DecimalExponent';
    exponent += Number(suffix.slice(1));
  } else {
    exponent += decimalSuffixes[suffix] ?? 0;
  }
  // to nano-units; anything below a nano rounds up, as apimachinery does
  const shift = exponent + 9;
  let nanos: bigint;
  if (shift >= 0) nanos = value * 10n ** BigInt(shift);
  else {
    const div = 10n ** BigInt(-shift);
    nanos = value / div + (value % div === 0n ? 0n : 1n);
  }
  return { nanos: sign === '-' ? -nanos : nanos, format };
}

/** The canonical text of a quantity (apimachinery's Quantity.String()). */
export function formatQuantity(q: Quantity): string {
  if (q.nanos === 0n) return '0';
  const negative = q.nanos < 0n;
  const abs = negative ? -q.nanos : q.nanos;
  const text = q.format === 'BinarySI' ? formatBinary(abs) : formatDecimal(abs, q.format);
  return negative ? `-${text}` : text;
}

function formatBinary(nanos: bigint): string {
  // Whole numbers of at least 1Ki use the largest binary suffix dividing them; the rest prints decimal.
  if (nanos % NANO !== 0n || nanos < 1024n * NANO) return formatDecimal(nanos, 'DecimalSI');
  let value = nanos / NANO;
  let suffix = '';
  for (const [s, factor] of Object.entries(binarySuffixes)) {
    if ((nanos / NANO) % factor !== 0n) break;
    value = nanos / NANO / factor;
    suffix = s;
  }
  return `${value}${suffix}`;
}

function formatDecimal(nanos: bigint, format: QuantityFormat): string {
  let mantissa = nanos;
  let exponent = -9;
  while (mantissa % 1000n === 0n && exponent < 18) {
    mantissa /= 1000n;
    exponent += 3;
  }
  if (format === 'DecimalExponent') return exponent === 0 ? `${mantissa}` : `${mantissa}e${exponent}`;
  return `${mantissa}${suffixByExponent.get(exponent) ?? `e${exponent}`}`;
}

/**
 * The sum of every resource across the lists, keyed by resource name, as canonical quantity text.
 * A sum keeps the format of the first value seen for that resource (apimachinery's Add does).
 * Values that do not parse are skipped and reported through `onInvalid`.
 */
export function sumResourceLists(
  lists: ReadonlyArray<Record<string, string> | undefined>,
  onInvalid: (resource: string, value: string) => void = () => {},
): Record<string, string> {
  const sums = new Map<string, Quantity>();
  for (const list of lists) {
    for (const [resource, text] of Object.entries(list ?? {})) {
      let q: Quantity;
      try {
        q = parseQuantity(text);
      } catch {
        onInvalid(resource, text);
        continue;
      }
      const prev = sums.get(resource);
      sums.set(resource, prev ? { nanos: prev.nanos + q.nanos, format: prev.format } : q);
    }
  }
  return Object.fromEntries([...sums].map(([resource, q]) => [resource, formatQuantity(q)]));
}

// Parsers for command-line option values, each failing with a message that says what to fix.
// Light on purpose (commander and our errors only): every verb loads it, including the tunnel verbs
// that never load the Kubernetes client; `--kubeconfig` loading lives in kubeconfig-flag.ts.

import { InvalidArgumentError, Option } from 'commander';
import { InvalidArgumentError as TetherInvalidArgument } from '../errors.ts';

export function positiveInt(name: string, max: number): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0 || n > max) {
      throw new InvalidArgumentError(`${name} must be a whole number between 0 and ${max}, got "${value}"`);
    }
    return n;
  };
}

/** A period in whole seconds, 1 to `max`: a period of 0 would spin. */
export function periodSeconds(name: string, max: number): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1 || n > max) {
      throw new InvalidArgumentError(
        `${name} must be a whole number of seconds between 1 and ${max}, got "${value}"`,
      );
    }
    return n;
  };
}

const DURATION_UNITS: Record<string, number> = { h: 3600, m: 60, s: 1 };

/** Parses Go-style durations ("24h", "1h30m", "90s") into whole seconds (for use inside actions). */
export function parseDurationSeconds(name: string, value: string): number {
  const re = /(\d+)(h|m|s)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(value); m; m = re.exec(value)) {
    total += Number(m[1]) * (DURATION_UNITS[m[2] as string] ?? 0);
    matched = re.lastIndex;
  }
  if (matched !== value.length || value.length === 0 || total <= 0) {
    throw new TetherInvalidArgument(`${name} must be a duration like 24h, 90m or 1h30m, got "${value}"`);
  }
  return total;
}

/** Parses `--clusters c1,c2` into names (at least one). */
export function clusterList(value: string): string[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) throw new InvalidArgumentError('--clusters needs at least one cluster name');
  return names;
}

/** `--ops-bind-address`: where /healthz, /readyz and /metrics listen (0.0.0.0 in a pod, for probes). */
export function opsBindOption(): Option {
  return new Option('--ops-bind-address <ip>', 'address /healthz, /readyz and /metrics listen on')
    .env('TETHER_OPS_BIND_ADDRESS')
    .default('127.0.0.1');
}

/** An option that can also come from the environment variable `env` (TETHER_*). */
export function envOption(flags: string, description: string, env: string): Option {
  return new Option(flags, description).env(env);
}

/** Argument parser of a repeatable option: every occurrence is kept, in order. */
export const collect = (value: string, prev: string[] = []): string[] => [...prev, value];

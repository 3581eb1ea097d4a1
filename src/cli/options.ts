// Parsers for command-line option values, each failing with a message that says what to fix.
import { InvalidArgumentError } from 'commander';

export function positiveInt(name: string, max: number): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0 || n > max) {
      throw new InvalidArgumentError(`${name} must be a whole number between 0 and ${max}, got "${value}"`);
    }
    return n;
  };
}

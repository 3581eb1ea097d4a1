// Reading files named on the command line, with errors that say which flag to fix.
import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from '../errors.ts';

export function readFlagFile(flag: string, path: string | undefined): string {
  if (!path) throw new InvalidArgumentError(`${flag} is required`);
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new InvalidArgumentError(
      `${flag} ${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
    );
  }
}

export function readPemFlag(
  flag: string,
  path: string | undefined,
  kind: 'CERTIFICATE' | 'PRIVATE KEY',
): string {
  const pem = readFlagFile(flag, path);
  const ok =
    kind === 'CERTIFICATE'
      ? pem.includes('-----BEGIN CERTIFICATE-----')
      : /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem);
  if (!ok) throw new InvalidArgumentError(`${flag} ${path}: expected a PEM ${kind.toLowerCase()}`);
  return pem;
}

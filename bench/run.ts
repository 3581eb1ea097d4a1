// Benchmark dispatcher: `npm run bench -- <name> [--quick] [more flags]` runs the exported
// `run(opts)` of bench/<name>.ts. Helpers live in bench/lib/ and are not benchmarks. Benchmarks
// measure and report; they never fail on speed (exit code 0 unless the benchmark itself broke).
import { readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BenchOptions } from './lib/stats.ts';

const benchDir = dirname(fileURLToPath(import.meta.url));

function available(): string[] {
  return readdirSync(benchDir)
    .filter((f) => f.endsWith('.ts') && f !== 'run.ts')
    .map((f) => basename(f, '.ts'))
    .sort();
}

function usage(prefix: string): void {
  const names = available();
  console.error(
    `${prefix}usage: npm run bench -- <name> [--quick] [flags]\navailable benchmarks: ${names.join(', ') || '(none)'}`,
  );
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const name = args.find((a) => !a.startsWith('-'));
  if (!name) {
    usage('');
    process.exitCode = 2;
    return;
  }
  if (!available().includes(name)) {
    usage(`unknown benchmark "${name}"\n`);
    process.exitCode = 2;
    return;
  }
  const mod = (await import(pathToFileURL(join(benchDir, `${name}.ts`)).href)) as {
    run?: (opts: BenchOptions) => Promise<void>;
  };
  if (typeof mod.run !== 'function') {
    usage(`bench/${name}.ts exports no run(opts)\n`);
    process.exitCode = 2;
    return;
  }
  const flags = args.filter((a) => a !== name);
  await mod.run({ quick: flags.includes('--quick'), args: flags });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});

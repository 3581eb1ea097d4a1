// `npm test`'s runner: every test, in one command, in two vitest processes at once. Vitest runs a
// run's sequential projects one after another, and the e2e files that share one control plane must
// run one at a time — yet they spend most of their time waiting on real processes. So lane 1 runs
// those (`e2e`) while lane 2 runs `unit` and `integration` side by side and then the files that
// start environments of their own (`e2e-env`); see vitest.config.ts. Each lane's lines are passed
// through whole as they come; at the end the lanes' figures are merged into one summary
// (test/suite-summary.ts) ending in the line CI reads, "tests: N passed, N failed".
// With arguments (`npm test -- test/e2e/up.test.ts -t joins`) it runs one plain vitest with them.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { emptySummary, formatSummary, mergeSummaries, type SuiteSummary } from './suite-summary.ts';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const vitestEntry = join(root, 'node_modules', 'vitest', 'vitest.mjs');

interface Lane {
  name: string;
  projects: string[];
}

const lanes: Lane[] = [
  { name: 'shared control plane', projects: ['e2e'] },
  { name: 'unit, integration, own environments', projects: ['unit', 'integration', 'e2e-env'] },
];

function vitest(args: string[], env: NodeJS.ProcessEnv, piped: boolean): ChildProcess {
  return spawn(process.execPath, [vitestEntry, 'run', ...args], {
    cwd: root,
    env,
    stdio: piped ? ['ignore', 'pipe', 'pipe'] : 'inherit',
  });
}

function exitCode(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/** Passes a child's output on line by line, so the two lanes interleave only between lines. */
function passLines(from: NodeJS.ReadableStream | null, to: NodeJS.WritableStream): void {
  if (!from) return;
  createInterface({ input: from, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => {
    to.write(`${line}\n`);
  });
}

async function runLanes(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'tether-suite-'));
  const children: ChildProcess[] = [];
  const forward = (signal: NodeJS.Signals) => {
    for (const c of children) c.kill(signal);
  };
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  try {
    const started = Date.now();
    const runs = lanes.map((lane, i) => {
      const summaryPath = join(dir, `lane-${i}.json`);
      const env: NodeJS.ProcessEnv = { ...process.env, TETHER_TEST_SUMMARY: summaryPath };
      if (process.stdout.isTTY && env.NO_COLOR === undefined) env.FORCE_COLOR ??= '1';
      const child = vitest(lanes[i]?.projects.flatMap((p) => ['--project', p]) ?? [], env, true);
      children.push(child);
      passLines(child.stdout, process.stdout);
      passLines(child.stderr, process.stderr);
      return exitCode(child).then((code) => ({ lane, code, summaryPath }));
    });
    const results = await Promise.all(runs);
    const total: SuiteSummary = emptySummary();
    const problems: string[] = [];
    for (const { lane, code, summaryPath } of results) {
      if (existsSync(summaryPath)) {
        mergeSummaries(total, JSON.parse(readFileSync(summaryPath, 'utf8')) as SuiteSummary);
      } else {
        problems.push(`lane "${lane.name}" ended (exit code ${code}) before reporting any result`);
        total.failed++;
      }
      if (code !== 0 && existsSync(summaryPath))
        problems.push(`lane "${lane.name}" exited with code ${code}`);
    }
    process.stdout.write(
      formatSummary(total).replace(
        /\ntests: /,
        `suite wall ${((Date.now() - started) / 1000).toFixed(1)} s\n\ntests: `,
      ),
    );
    for (const p of problems) process.stderr.write(`${p}\n`);
    return problems.length > 0 || total.failed > 0 ? 1 : 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const args = process.argv.slice(2);
const code = args.length > 0 ? await exitCode(vitest(args, process.env, false)) : await runLanes();
process.exit(code);

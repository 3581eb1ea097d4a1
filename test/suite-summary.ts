// The suite's closing figures, shared by the reporter (one vitest process) and test/suite.ts (the
// lanes of `npm test` merged): per project its tests, files and wall time, the slowest files, and
// the plain "tests: N passed, N failed" line that CI and scripts read.

export interface ProjectTime {
  files: number;
  tests: number;
  /** Wall clock (ms since the epoch) when the project's first file started; comparable across lanes. */
  start: number;
  end: number;
}

export interface SuiteSummary {
  projects: Record<string, ProjectTime>;
  /** "<project> <file>" → ms from the file's start to its end. */
  files: Record<string, number>;
  passed: number;
  failed: number;
  skipped: number;
}

/** How many of the slowest files are listed. */
const SLOWEST_SHOWN = 10;

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** Adds one lane's figures into the total (projects do not span lanes; if one did, its span widens). */
export function mergeSummaries(into: SuiteSummary, from: SuiteSummary): SuiteSummary {
  for (const [name, p] of Object.entries(from.projects)) {
    const q = into.projects[name];
    into.projects[name] = q
      ? {
          files: q.files + p.files,
          tests: q.tests + p.tests,
          start: Math.min(q.start, p.start),
          end: Math.max(q.end, p.end),
        }
      : { ...p };
  }
  Object.assign(into.files, from.files);
  into.passed += from.passed;
  into.failed += from.failed;
  into.skipped += from.skipped;
  return into;
}

export function emptySummary(): SuiteSummary {
  return { projects: {}, files: {}, passed: 0, failed: 0, skipped: 0 };
}

/** The closing block: per-project lines, the slowest files, then the one line scripts read. */
export function formatSummary(s: SuiteSummary): string {
  const lines = Object.entries(s.projects)
    .sort((a, b) => a[1].start - b[1].start)
    .map(([name, p]) => `${name}: ${p.tests} tests in ${p.files} files, wall ${seconds(p.end - p.start)}`);
  const slowest = Object.entries(s.files)
    .sort((a, b) => b[1] - a[1])
    .slice(0, SLOWEST_SHOWN)
    .map(([file, ms]) => `  ${seconds(ms).padStart(8)}  ${file}`);
  const head = lines.length > 0 ? `\n${lines.join('\n')}\nslowest files:\n${slowest.join('\n')}\n` : '';
  const tail = s.skipped > 0 ? `, ${s.skipped} skipped` : '';
  return `${head}\ntests: ${s.passed} passed, ${s.failed} failed${tail}\n`;
}

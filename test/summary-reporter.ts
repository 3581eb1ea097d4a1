// Prints one plain closing line, "tests: N passed, N failed", after vitest's own summary, so CI and
// scripts can read the outcome without parsing vitest's formatting. Before it, per project (unit,
// integration, e2e): its tests, files and wall time (first file started to last file ended), and the
// slowest files of the run — where the suite's time goes, measured on every run.
import type { Reporter, TestModule } from 'vitest/node';

interface ProjectTime {
  files: number;
  tests: number;
  start: number;
  end: number;
}

/** How many of the slowest files are listed. */
const SLOWEST_SHOWN = 10;

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

export default class SummaryReporter implements Reporter {
  private readonly started = new Map<string, number>();
  private readonly fileMs = new Map<string, number>();
  private readonly projects = new Map<string, ProjectTime>();

  onTestModuleStart(mod: TestModule): void {
    this.started.set(mod.moduleId, performance.now());
  }

  onTestModuleEnd(mod: TestModule): void {
    const end = performance.now();
    const start = this.started.get(mod.moduleId) ?? end;
    this.fileMs.set(`${mod.project.name} ${mod.relativeModuleId}`, end - start);
    const p = this.projects.get(mod.project.name) ?? { files: 0, tests: 0, start, end };
    p.files++;
    p.tests += [...mod.children.allTests()].length;
    p.start = Math.min(p.start, start);
    p.end = Math.max(p.end, end);
    this.projects.set(mod.project.name, p);
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const mod of testModules) {
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      if (mod.state() === 'failed' && [...mod.children.allTests()].length === 0) failed++;
    }
    const lines = [...this.projects].map(
      ([name, p]) => `${name}: ${p.tests} tests in ${p.files} files, wall ${seconds(p.end - p.start)}`,
    );
    const slowest = [...this.fileMs]
      .sort((a, b) => b[1] - a[1])
      .slice(0, SLOWEST_SHOWN)
      .map(([file, ms]) => `  ${seconds(ms).padStart(8)}  ${file}`);
    if (lines.length > 0)
      process.stdout.write(`\n${lines.join('\n')}\nslowest files:\n${slowest.join('\n')}\n`);
    const tail = skipped > 0 ? `, ${skipped} skipped` : '';
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed${tail}\n`);
  }
}

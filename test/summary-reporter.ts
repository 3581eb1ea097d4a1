// Prints one plain closing line, "tests: N passed, N failed", after vitest's own summary, so CI and
// scripts can read the outcome without parsing vitest's formatting. Before it, per project (unit,
// integration, e2e, e2e-env): its tests, files and wall time (first file started to last file
// ended), and the slowest files of the run — where the suite's time goes, measured on every run.
// Under `npm test` (test/suite.ts, two vitest processes at once) each process writes its figures to
// the file named by TETHER_TEST_SUMMARY instead, and the runner prints them once for the whole suite.
import { writeFileSync } from 'node:fs';
import type { Reporter, TestModule } from 'vitest/node';
import { formatSummary, type SuiteSummary } from './suite-summary.ts';

export default class SummaryReporter implements Reporter {
  private readonly started = new Map<string, number>();
  private readonly summary: SuiteSummary = { projects: {}, files: {}, passed: 0, failed: 0, skipped: 0 };

  onTestModuleStart(mod: TestModule): void {
    this.started.set(mod.moduleId, Date.now());
  }

  onTestModuleEnd(mod: TestModule): void {
    const end = Date.now();
    const start = this.started.get(mod.moduleId) ?? end;
    this.summary.files[`${mod.project.name} ${mod.relativeModuleId}`] = end - start;
    const p = this.summary.projects[mod.project.name] ?? { files: 0, tests: 0, start, end };
    p.files++;
    p.tests += [...mod.children.allTests()].length;
    p.start = Math.min(p.start, start);
    p.end = Math.max(p.end, end);
    this.summary.projects[mod.project.name] = p;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const s = this.summary;
    for (const mod of testModules) {
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') s.passed++;
        else if (state === 'failed') s.failed++;
        else s.skipped++;
      }
      if (mod.state() === 'failed' && [...mod.children.allTests()].length === 0) s.failed++;
    }
    const out = process.env.TETHER_TEST_SUMMARY;
    if (out) writeFileSync(out, JSON.stringify(s));
    else process.stdout.write(formatSummary(s));
  }
}

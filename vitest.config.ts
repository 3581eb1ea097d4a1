import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Five projects (the fifth, `ocm`, is `npm run test:ocm` only). `npm test` (test/suite.ts) runs them in two vitest processes at once, because
// vitest runs a run's sequential projects one after another and most e2e time is spent waiting on
// real processes, not on the CPU:
// - lane 1: `e2e`, the files that share one hub + cluster1 (test/e2e/global-setup.ts), one at a time;
// - lane 2: `unit` and `integration` side by side, then `e2e-env`, the files that start environments
//   of their own (real nodes, `tether up`, in-cluster installs, helm), one at a time.

/** e2e files that start (and test) an environment of their own instead of the shared one. */
export const ownEnvironmentFiles = [
  'test/e2e/in-cluster.test.ts',
  'test/e2e/addon-real-node.test.ts',
  'test/e2e/up.test.ts',
  'test/e2e/up-supervisor.test.ts',
  'test/e2e/helm.test.ts',
  'test/e2e/real-node*.test.ts',
];

// unit and integration share a group, so they share one worker count; on 2 cores vitest's default
// (cores - 1) would run them one file at a time although integration files mostly wait on sockets.
const sideBySide = Math.max(2, availableParallelism() - 1);

export default defineConfig({
  test: {
    reporters: ['default', './test/summary-reporter.ts'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/e2e/**', 'test/integration/**', 'test/ocm/**'],
          testTimeout: 20_000,
          maxWorkers: sideBySide,
        },
      },
      {
        // Real processes (squid, proxy-server, proxy-agent) but no Kubernetes control plane.
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          maxWorkers: sideBySide,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          exclude: ownEnvironmentFiles,
          globalSetup: ['test/e2e/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // One control plane is shared; files run one at a time so they do not see each other's objects.
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'e2e-env',
          include: ownEnvironmentFiles,
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // Real nodes share the host's iptables, cgroups and CNI state; one environment at a time.
          fileParallelism: false,
        },
      },
      {
        // `npm run test:ocm`, not part of `npm test`: OCM's own binaries (clusteradm, its Go agents
        // and hub controllers) against tether, and tether against them (test/ocm/global-setup.ts).
        test: {
          name: 'ocm',
          include: ['test/ocm/**/*.test.ts'],
          globalSetup: ['test/ocm/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
});

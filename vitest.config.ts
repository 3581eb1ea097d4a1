import { defineConfig } from 'vitest/config';

// Two projects: `unit` (pure logic, fast) and `e2e` (real etcd / kube-apiserver /
// kube-controller-manager started once per run by test/e2e/global-setup.ts and shared).
export default defineConfig({
  test: {
    reporters: ['default', './test/summary-reporter.ts'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/e2e/**', 'test/integration/**'],
          testTimeout: 20_000,
        },
      },
      {
        // Real processes (squid, proxy-server, proxy-agent) but no Kubernetes control plane.
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/e2e/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // Control planes are shared; files run one at a time so they do not starve each other on 2 cores.
          fileParallelism: false,
        },
      },
    ],
  },
});

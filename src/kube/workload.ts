// The shape every tether Deployment shares: the tether image with a verb as its arguments, a
// non-root read-only container without capabilities, probes on the ops port's /healthz and
// /readyz, and an emptyDir for /tmp. Pure data, below every component that runs tether as a pod
// (the install's hub and agent Deployments, the built-in add-ons' agents); they say what runs where.
import type { KubernetesObject } from '@kubernetes/client-node';

/** The labels every tether workload carries (Kubernetes' recommended app labels). */
export const componentLabel = 'app.kubernetes.io/component';
export const partOfLabel = 'app.kubernetes.io/part-of';
export const partOf = 'tether';

export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';
export const pullPolicies: readonly PullPolicy[] = ['Always', 'IfNotPresent', 'Never'];

export interface ImageOptions {
  /** e.g. localhost/tether:0.1.0 */
  image: string;
  imagePullPolicy: PullPolicy;
}

export interface SecretMount {
  /** Secret or ConfigMap name */
  name: string;
  kind: 'Secret' | 'ConfigMap';
  mountPath: string;
  /** only these keys (default: all) */
  items?: string[];
}

export interface WorkloadSpec extends ImageOptions {
  name: string;
  namespace: string;
  serviceAccount: string;
  replicas: number;
  /** the tether verb and its flags */
  args: string[];
  opsPort: number;
  ports?: Array<{ name: string; containerPort: number }>;
  mounts?: SecretMount[];
  env?: Array<Record<string, unknown>>;
  /** seconds a stopping pod gets to drain (default 30) */
  terminationGracePeriodSeconds?: number;
  /** Recreate for a singleton whose identity must not run twice (default RollingUpdate, one extra pod) */
  strategy?: 'RollingUpdate' | 'Recreate';
}

export function labels(component: string): Record<string, string> {
  return { app: component, [componentLabel]: component, [partOfLabel]: partOf };
}

export function meta(
  name: string,
  namespace: string | undefined,
  component: string,
): { name: string; namespace?: string; labels: Record<string, string> } {
  return { name, ...(namespace ? { namespace } : {}), labels: labels(component) };
}

/** The pod's own name as TETHER_POD_NAME (a replica's id). */
export const podNameEnv = {
  name: 'TETHER_POD_NAME',
  valueFrom: { fieldRef: { fieldPath: 'metadata.name' } },
};

export function deployment(w: WorkloadSpec): KubernetesObject {
  const volumes = [
    { name: 'tmp', emptyDir: {} },
    ...(w.mounts ?? []).map((m, i) => ({
      name: `m${i}`,
      ...(m.kind === 'Secret'
        ? {
            secret: {
              secretName: m.name,
              ...(m.items ? { items: m.items.map((k) => ({ key: k, path: k })) } : {}),
            },
          }
        : {
            configMap: {
              name: m.name,
              ...(m.items ? { items: m.items.map((k) => ({ key: k, path: k })) } : {}),
            },
          }),
    })),
  ];
  const probe = (path: string, periodSeconds: number, failureThreshold: number) => ({
    httpGet: { path, port: 'ops' },
    periodSeconds,
    failureThreshold,
    timeoutSeconds: 2,
  });
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(w.name, w.namespace, w.name),
    spec: {
      replicas: w.replicas,
      selector: { matchLabels: { app: w.name } },
      strategy:
        w.strategy === 'Recreate'
          ? { type: 'Recreate' }
          : { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels: labels(w.name) },
        spec: {
          serviceAccountName: w.serviceAccount,
          terminationGracePeriodSeconds: w.terminationGracePeriodSeconds ?? 30,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 65532,
            runAsGroup: 65532,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'tether',
              image: w.image,
              imagePullPolicy: w.imagePullPolicy,
              args: w.args,
              env: [podNameEnv, ...(w.env ?? [])],
              ports: [{ name: 'ops', containerPort: w.opsPort }, ...(w.ports ?? [])],
              livenessProbe: probe('/healthz', 10, 6),
              readinessProbe: probe('/readyz', 2, 3),
              resources: { requests: { cpu: '20m', memory: '96Mi' } },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
              },
              volumeMounts: [
                { name: 'tmp', mountPath: '/tmp' },
                ...(w.mounts ?? []).map((m, i) => ({
                  name: `m${i}`,
                  mountPath: m.mountPath,
                  readOnly: true,
                })),
              ],
            },
          ],
          volumes,
        },
      },
    },
  } as KubernetesObject;
}

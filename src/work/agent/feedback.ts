// Status feedback: the values a ManifestWork's `feedbackRules` ask to read back from an applied
// object into `status.resourceStatus.manifests[].statusFeedback.values`. WellKnownStatus maps a
// few built-in kinds to fixed paths (OCM's names); JSONPaths evaluates the user's paths. Values
// come from objects on the managed cluster, so their sizes are capped before they reach the hub.
import {
  type FeedbackRule,
  FeedbackType,
  type FeedbackValue,
  type FieldValue,
  FieldValueType,
  feedbackJsonRawMaxLength,
} from '../../api/index.ts';
import type { KubeObject } from '../../kube/index.ts';
import { evaluateJsonPath, parseJsonPath } from './jsonpath.ts';

/** Longest String value reported; longer ones are an error (the CRD has no limit of its own). */
export const feedbackStringMaxLength = 4096;
/** Most values one manifest reports. */
export const feedbackMaxValues = 64;

/** A value absent from the live object is left out of the feedback, as OCM does (never reported as 0). */
interface WellKnownPath {
  name: string;
  path: string;
}

const deploymentPaths: WellKnownPath[] = [
  { name: 'ReadyReplicas', path: '.status.readyReplicas' },
  { name: 'Replicas', path: '.status.replicas' },
  { name: 'AvailableReplicas', path: '.status.availableReplicas' },
];

const wellKnownPaths: Record<string, WellKnownPath[]> = {
  'apps/v1/Deployment': deploymentPaths,
  'batch/v1/Job': [
    { name: 'JobComplete', path: '.status.conditions[?(@.type=="Complete")].status' },
    { name: 'JobSucceeded', path: '.status.succeeded' },
  ],
  'v1/Pod': [
    { name: 'PodReady', path: '.status.conditions[?(@.type=="Ready")].status' },
    { name: 'PodPhase', path: '.status.phase' },
  ],
  'apps/v1/DaemonSet': [
    { name: 'NumberReady', path: '.status.numberReady' },
    { name: 'DesiredNumberScheduled', path: '.status.desiredNumberScheduled' },
    { name: 'NumberAvailable', path: '.status.numberAvailable' },
  ],
};

export interface FeedbackResult {
  values: FeedbackValue[];
  /** one message per rule or path that could not be evaluated */
  errors: string[];
}

/** Evaluate `rules` against `obj` (the live object on the managed cluster). */
export function readFeedback(obj: KubeObject, rules: readonly FeedbackRule[]): FeedbackResult {
  const values: FeedbackValue[] = [];
  const errors: string[] = [];
  const add = (value: FeedbackValue) => {
    if (values.some((v) => v.name === value.name)) return; // the CRD keys values by name
    if (values.length >= feedbackMaxValues) {
      errors.push(`more than ${feedbackMaxValues} feedback values: ${value.name} and later ones dropped`);
      return;
    }
    values.push(value);
  };
  const version = (obj.apiVersion ?? '').split('/').pop() ?? '';
  for (const rule of rules) {
    if (rule.type === FeedbackType.WellKnownStatus) {
      const paths = wellKnownPaths[`${obj.apiVersion}/${obj.kind}`];
      if (!paths) {
        errors.push(
          `cannot find the wellknown statuses for resource with gvk ${obj.apiVersion}, Kind=${obj.kind}`,
        );
        continue;
      }
      for (const p of paths) {
        const value = evaluate(obj, p.name, p.path, errors);
        if (value) add(value);
      }
    } else if (rule.type === FeedbackType.JSONPaths) {
      for (const p of rule.jsonPaths ?? []) {
        if (p.version && p.version !== version) {
          errors.push(`version set in the path ${p.name} is not matched for the related resource`);
          continue;
        }
        const value = evaluate(obj, p.name, p.path, errors);
        if (value) add(value);
      }
    } else {
      errors.push(`unknown feedback rule type ${String(rule.type)}`);
    }
  }
  return { values, errors };
}

function evaluate(obj: KubeObject, name: string, path: string, errors: string[]): FeedbackValue | undefined {
  let results: unknown[];
  try {
    results = evaluateJsonPath(obj, parseJsonPath(path));
  } catch (err) {
    errors.push(`failed to parse json path ${path} of ${name}: ${(err as Error).message}`);
    return undefined;
  }
  if (results.length === 0) return undefined;
  const value = results.length === 1 ? results[0] : results;
  if (value === null || value === undefined) return undefined;
  const fieldValue = toFieldValue(name, value, errors);
  return fieldValue ? { name, fieldValue } : undefined;
}

function toFieldValue(name: string, value: unknown, errors: string[]): FieldValue | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value)) {
    return { type: FieldValueType.Integer, integer: value };
  }
  if (typeof value === 'boolean') return { type: FieldValueType.Boolean, boolean: value };
  if (typeof value === 'string') {
    if (value.length > feedbackStringMaxLength) {
      errors.push(`the value for ${name} is longer than the maximum length ${feedbackStringMaxLength}`);
      return undefined;
    }
    return { type: FieldValueType.String, string: value };
  }
  const jsonRaw = JSON.stringify(value);
  if (jsonRaw.length > feedbackJsonRawMaxLength) {
    errors.push(
      `the length of returned json raw string for name ${name} is larger than the maximum length ${feedbackJsonRawMaxLength}`,
    );
    return undefined;
  }
  return { type: FieldValueType.JsonRaw, jsonRaw };
}

// Which entries of a ManagedClusterAddOn's status.registrations the agent can act on. The hub
// writes them (v1alpha1: a signerName and a subject); a hub whose add-on API has no conversion
// webhook hands v1beta1-shaped entries (`type: kubeClient` / `customSigner`) to a v1alpha1 reader,
// and a hand-written status may hold anything. Entries in the v1beta1 shape are converted as the
// webhook would; anything else is a problem the agent reports on the add-on (ClusterCertificateRotated
// False, reason InvalidRegistration, naming the entry) instead of failing on it again and again.
// Pure functions.

import { type JsonObject, registrationToV1alpha1 } from '../../../addon/conversion.ts';
import type { RegistrationConfig } from '../../../api/addon.ts';
import type { ConditionUpdate } from '../../../kube/index.ts';
import { ClusterCertificateRotatedCondition } from '../certificate-reporting.ts';

/** A CSR signerName: `<domain>/<path>` (Kubernetes' own check, in short). */
const SIGNER_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const MAX_SIGNER_NAME = 571; // a DNS subdomain, '/', a path segment

export type RegistrationCheck = { registration: RegistrationConfig } | { problem: string };

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function subjectOf(raw: JsonObject): RegistrationConfig['subject'] | { problem: string } {
  const subject = raw['subject'];
  if (subject === undefined) return undefined;
  if (!isObject(subject)) return { problem: 'subject is not an object' };
  const strings = (v: unknown) =>
    v === undefined || (Array.isArray(v) && v.every((x) => typeof x === 'string'));
  if (subject['user'] !== undefined && typeof subject['user'] !== 'string')
    return { problem: 'subject.user is not a string' };
  if (!strings(subject['groups'])) return { problem: 'subject.groups is not a list of strings' };
  if (!strings(subject['organizationUnit']))
    return { problem: 'subject.organizationUnit is not a list of strings' };
  return subject as RegistrationConfig['subject'];
}

/** Entry `index` of status.registrations, usable or with the reason it is not. */
export function checkRegistration(raw: unknown, index: number): RegistrationCheck {
  const where = `status.registrations[${index}]`;
  if (!isObject(raw)) return { problem: `${where} is not an object` };
  let entry: JsonObject = raw;
  if (entry['signerName'] === undefined && (raw['type'] === 'kubeClient' || raw['type'] === 'customSigner')) {
    // v1beta1's shape, read without the hub's conversion webhook
    entry = registrationToV1alpha1(raw);
  }
  const signerName = entry['signerName'];
  if (typeof signerName !== 'string' || signerName === '')
    return {
      problem: `${where} has no signerName (${JSON.stringify(raw).slice(0, 200)}); a v1beta1 registration needs type kubeClient or customSigner`,
    };
  if (signerName.length > MAX_SIGNER_NAME || !SIGNER_NAME.test(signerName))
    return {
      problem: `${where}.signerName ${JSON.stringify(signerName.slice(0, 100))} is not <domain>/<name>`,
    };
  const subject = subjectOf(entry);
  if (subject && 'problem' in subject) return { problem: `${where}.${subject.problem}` };
  return { registration: { signerName, ...(subject ? { subject } : {}) } };
}

/** The usable registrations of a status, and the problems of the others. */
export function checkRegistrations(raw: unknown): {
  registrations: RegistrationConfig[];
  problems: string[];
} {
  const registrations: RegistrationConfig[] = [];
  const problems: string[] = [];
  if (raw === undefined) return { registrations, problems };
  if (!Array.isArray(raw)) return { registrations, problems: ['status.registrations is not a list'] };
  raw.forEach((entry, i) => {
    const check = checkRegistration(entry, i);
    if ('problem' in check) problems.push(check.problem);
    else registrations.push(check.registration);
  });
  return { registrations, problems };
}

export const invalidRegistrationReason = 'InvalidRegistration';

/** The condition the agent writes on an add-on with unusable registrations. */
export function invalidRegistrationCondition(problems: string[]): ConditionUpdate {
  return {
    type: ClusterCertificateRotatedCondition,
    status: 'False',
    reason: invalidRegistrationReason,
    message: `no credential for: ${problems.join('; ')}`.slice(0, 1000),
  };
}

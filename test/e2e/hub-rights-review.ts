// What a hub identity may actually do, asked of the hub itself: a SelfSubjectRulesReview created by
// the admin while impersonating the identity (user and every group), normalized into one string per
// right (`<verb> <group>/<resource>`, ` [<name>]` when limited to a name; `<verb> <url>` for
// non-resource URLs), and the comparison with the rights hub-rights.ts lists for a namespace.
// SelfSubjectRulesReview takes only a namespace: rules from ClusterRoleBindings appear in each.
import '../../src/kube/dispatcher.ts';
import { HttpMethod, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { request } from 'undici';
import { baseline, type Grant, type HubSubject, type IdentityRights } from './hub-rights.ts';

interface ResourceRule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
}

interface NonResourceRule {
  verbs: string[];
  nonResourceURLs?: string[];
}

export interface RulesReview {
  rights: Set<string>;
  incomplete: boolean;
  evaluationError?: string;
}

function right(verb: string, group: string, resource: string, name?: string): string {
  return `${verb} ${group || 'core'}/${resource}${name === undefined ? '' : ` [${name}]`}`;
}

/** Every right `rules` grant, one string each (a rule with names grants each name on its own). */
export function expandRules(
  rules: readonly ResourceRule[],
  nonResource: readonly NonResourceRule[],
): Set<string> {
  const out = new Set<string>();
  for (const r of rules)
    for (const verb of r.verbs)
      for (const group of r.apiGroups ?? [])
        for (const resource of r.resources ?? []) {
          if (!r.resourceNames?.length) out.add(right(verb, group, resource));
          for (const name of r.resourceNames ?? []) out.add(right(verb, group, resource, name));
        }
  for (const r of nonResource)
    for (const verb of r.verbs) for (const url of r.nonResourceURLs ?? []) out.add(`${verb} ${url}`);
  return out;
}

/** The rights of `grants`, with `<cluster>` in names replaced by `cluster`. */
export function expandGrants(grants: readonly Grant[], cluster: string): Set<string> {
  return expandRules(
    grants.map((g) => ({
      verbs: g.verbs,
      apiGroups: [g.group],
      resources: g.resources,
      ...(g.names ? { resourceNames: g.names.map((n) => n.replaceAll('<cluster>', cluster)) } : {}),
    })),
    [],
  );
}

const urlRules = (urls: string[][]): NonResourceRule[] =>
  urls.map(([verb = '', list = '']) => ({ verbs: [verb], nonResourceURLs: list.split(' ') }));

/** What every authenticated user holds (and, for a ServiceAccount, what every ServiceAccount does). */
export function baselineRights(serviceAccount: boolean): Set<string> {
  const parts = serviceAccount
    ? [baseline.authenticated, baseline.serviceAccounts]
    : [baseline.authenticated];
  return new Set(
    parts.flatMap((p) => [...expandGrants(p.resources, ''), ...expandRules([], urlRules(p.urls))]),
  );
}

/** Whether `subject` is a ServiceAccount (it then carries the ServiceAccounts' baseline too). */
export const isServiceAccount = (subject: HubSubject): boolean =>
  subject.groups.includes('system:serviceaccounts');

/** The rights `identity` lists for `namespace`; `ownCluster` is the identity's cluster (its namespace). */
export function expectedRights(identity: IdentityRights, namespace: string, ownCluster: string): Set<string> {
  return expandGrants(
    [
      ...identity.everywhere,
      ...(identity.perCluster && namespace === ownCluster ? (identity.ownClusterNamespace ?? []) : []),
      ...(identity.inNamespace?.[namespace] ?? []),
    ],
    ownCluster,
  );
}

/** A SelfSubjectRulesReview in `namespace` as `subject`, asked with the admin's `kc`. */
export async function rulesReview(
  kc: KubeConfig,
  subject: HubSubject,
  namespace: string,
): Promise<RulesReview> {
  const server = kc.getCurrentCluster()?.server.replace(/\/+$/, '');
  if (!server) throw new Error('kubeconfig has no current cluster');
  const ctx = new RequestContext(
    `${server}/apis/authorization.k8s.io/v1/selfsubjectrulesreviews`,
    HttpMethod.POST,
  );
  await kc.applySecurityAuthentication(ctx);
  // one header line per group: a joined "a, b" would be one group named "a, b"
  const headers = [
    ...Object.entries(ctx.getHeaders()).flat(),
    'content-type',
    'application/json',
    'impersonate-user',
    subject.user,
    ...subject.groups.flatMap((g) => ['impersonate-group', g]),
  ];
  const response = await request(ctx.getUrl(), {
    method: 'POST',
    headers,
    body: JSON.stringify({
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectRulesReview',
      spec: { namespace },
    }),
    dispatcher: ctx.getDispatcher(),
  });
  const text = await response.body.text();
  if (response.statusCode !== 201)
    throw new Error(
      `SelfSubjectRulesReview as ${subject.user} in ${namespace}: ${response.statusCode} ${text}`,
    );
  const status = (
    JSON.parse(text) as {
      status?: {
        resourceRules?: ResourceRule[];
        nonResourceRules?: NonResourceRule[];
        incomplete?: boolean;
        evaluationError?: string;
      };
    }
  ).status;
  return {
    rights: expandRules(status?.resourceRules ?? [], status?.nonResourceRules ?? []),
    incomplete: status?.incomplete === true,
    ...(status?.evaluationError ? { evaluationError: status.evaluationError } : {}),
  };
}

/** One finding: `subject` holds a right its list does not name, or lacks one it names, in `where`. */
export interface RightsProblem {
  subject: string;
  kind: 'holds' | 'lacks';
  right: string;
  where: string;
}

/** The rights held but not listed, and listed but not held. */
export function rightsProblems(
  subject: string,
  where: string,
  held: ReadonlySet<string>,
  listed: ReadonlySet<string>,
): RightsProblem[] {
  return [
    ...[...held]
      .filter((r) => !listed.has(r))
      .map((right) => ({ subject, kind: 'holds' as const, right, where })),
    ...[...listed]
      .filter((r) => !held.has(r))
      .map((right) => ({ subject, kind: 'lacks' as const, right, where })),
  ];
}

/** One line per subject and right, naming every namespace it was found in. */
export function describeProblems(problems: readonly RightsProblem[]): string[] {
  const lines = new Map<string, string[]>();
  for (const p of problems) {
    const what = p.kind === 'holds' ? 'which its list does not name' : 'which its list names';
    const key = `${p.subject} ${p.kind} "${p.right}", ${what}, in`;
    lines.set(key, [...(lines.get(key) ?? []), p.where]);
  }
  return [...lines].map(([key, where]) => `${key}: ${where.join('; ')}`).sort();
}

// The add-on configuration policies' shape (src/addon/hub/config/admission.ts): what they match and
// which verb they ask for. Their behaviour on a real apiserver: test/e2e/addon-config-admission.test.ts.
import { describe, expect, it } from 'vitest';
import {
  addonConfigAdmissionObjects,
  addonConfigAdmissionPolicyNames,
} from '../../src/addon/hub/config/admission.ts';

interface PolicySpec {
  failurePolicy: string;
  matchConstraints: {
    matchPolicy: string;
    resourceRules: {
      apiGroups: string[];
      apiVersions: string[];
      operations: string[];
      resources: string[];
    }[];
  };
  validations: { expression: string; messageExpression: string; reason: string }[];
}

const policies = addonConfigAdmissionObjects().filter((o) => o.kind === 'ValidatingAdmissionPolicy');

describe('add-on configuration admission policies', () => {
  it('one policy and one Deny binding per guarded kind, named as listed', () => {
    expect(policies.map((p) => p.metadata?.name)).toEqual(addonConfigAdmissionPolicyNames());
    const bindings = addonConfigAdmissionObjects().filter(
      (o) => o.kind === 'ValidatingAdmissionPolicyBinding',
    );
    expect(bindings.map((b) => (b as { spec?: { policyName?: string } }).spec?.policyName)).toEqual(
      addonConfigAdmissionPolicyNames(),
    );
  });

  it('match writes of the three kinds at v1alpha1 (v1beta1 converted), never a subresource, and fail closed', () => {
    const matched = policies.map((p) => {
      const spec = (p as unknown as { spec: PolicySpec }).spec;
      expect(spec.failurePolicy).toBe('Fail');
      expect(spec.matchConstraints.matchPolicy).toBe('Equivalent');
      const [rule, ...more] = spec.matchConstraints.resourceRules;
      expect(more).toEqual([]);
      expect(rule?.apiGroups).toEqual(['addon.open-cluster-management.io']);
      expect(rule?.apiVersions).toEqual(['v1alpha1']);
      expect(rule?.operations).toEqual(['CREATE', 'UPDATE']);
      return rule?.resources;
    });
    expect(matched).toEqual([
      ['addondeploymentconfigs'],
      ['managedclusteraddons'],
      ['clustermanagementaddons'],
    ]);
  });

  it('ask for configure on the written object and say so', () => {
    for (const p of policies) {
      const [v] = (p as unknown as { spec: PolicySpec }).spec.validations;
      expect(v?.expression).toContain(".check('configure').allowed()");
      expect(v?.expression).toContain('.name(object.metadata.name)');
      expect(v?.messageExpression).toContain('needs configure on');
      expect(v?.reason).toBe('Forbidden');
    }
  });
});

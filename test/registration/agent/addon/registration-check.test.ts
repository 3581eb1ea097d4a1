// Which status.registrations entries the addon registration agent acts on, and what it says about
// the others (registration-check.ts).
import { describe, expect, it } from 'vitest';
import {
  checkRegistration,
  checkRegistrations,
  invalidRegistrationCondition,
} from '../../../../src/registration/agent/addon/registration-check.ts';

describe('checkRegistration', () => {
  it('takes a v1alpha1 entry as it is', () => {
    expect(
      checkRegistration({ signerName: 'example.com/signer', subject: { user: 'u', groups: ['g'] } }, 0),
    ).toEqual({ registration: { signerName: 'example.com/signer', subject: { user: 'u', groups: ['g'] } } });
  });

  it('converts v1beta1-shaped entries as the conversion webhook would', () => {
    expect(checkRegistration({ type: 'kubeClient', kubeClient: { subject: { user: 'u' } } }, 0)).toEqual({
      registration: { signerName: 'kubernetes.io/kube-apiserver-client', subject: { user: 'u' } },
    });
    expect(
      checkRegistration(
        {
          type: 'customSigner',
          customSigner: { signerName: 'example.com/s', subject: { organizationUnits: ['ou'] } },
        },
        1,
      ),
    ).toEqual({ registration: { signerName: 'example.com/s', subject: { organizationUnit: ['ou'] } } });
  });

  it('names the entry and the problem for anything else', () => {
    expect(checkRegistration({}, 2)).toEqual({
      problem: expect.stringContaining('status.registrations[2] has no signerName ({})'),
    });
    expect(checkRegistration({ subject: { user: 'u' } }, 0)).toEqual({
      problem: expect.stringContaining('has no signerName'),
    });
    expect(checkRegistration('x', 0)).toEqual({ problem: 'status.registrations[0] is not an object' });
    expect(checkRegistration({ signerName: 'no-slash' }, 0)).toEqual({
      problem: 'status.registrations[0].signerName "no-slash" is not <domain>/<name>',
    });
    expect(checkRegistration({ type: 'customSigner', customSigner: {} }, 0)).toEqual({
      problem: expect.stringContaining('has no signerName'),
    });
    expect(checkRegistration({ signerName: 'a.b/c', subject: { groups: 'g' } }, 3)).toEqual({
      problem: 'status.registrations[3].subject.groups is not a list of strings',
    });
    expect(checkRegistration({ signerName: 'a.b/c', subject: { user: 7 } }, 0)).toEqual({
      problem: 'status.registrations[0].subject.user is not a string',
    });
  });
});

describe('checkRegistrations', () => {
  it('keeps the usable entries and lists the problems of the others', () => {
    const r = checkRegistrations([{ signerName: 'a.b/c' }, {}, { type: 'kubeClient' }]);
    expect(r.registrations.map((x) => x.signerName)).toEqual([
      'a.b/c',
      'kubernetes.io/kube-apiserver-client',
    ]);
    expect(r.problems).toHaveLength(1);
    expect(checkRegistrations(undefined)).toEqual({ registrations: [], problems: [] });
    expect(checkRegistrations({})).toEqual({
      registrations: [],
      problems: ['status.registrations is not a list'],
    });
  });

  it('reports them as ClusterCertificateRotated False, reason InvalidRegistration', () => {
    expect(invalidRegistrationCondition(['p1', 'p2'])).toEqual({
      type: 'ClusterCertificateRotated',
      status: 'False',
      reason: 'InvalidRegistration',
      message: 'no credential for: p1; p2',
    });
  });
});

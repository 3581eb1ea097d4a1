// When to renew the agent's hub client certificate. OCM's agent asks for a new certificate once
// 20–25% (jittered, so a fleet does not renew in lock step) of the certificate's lifetime remains.
// The renewal CSR is made with the current hub credential; the old certificate keeps serving every
// request until the new one is stored, so nothing in flight is dropped.

/** Fraction of the lifetime left at which OCM's agent renews: 20% plus up to 5% jitter. */
export function jitteredRotationFraction(random: () => number = Math.random): number {
  return 0.2 + 0.05 * random();
}

/**
 * The moment to renew a certificate valid from notBefore to notAfter, with `remainingFraction` of
 * its lifetime left (0 < fraction < 1). A short certificate (minutes, in tests) rotates just as a
 * year-long one does, only sooner.
 */
export function rotationTime(notBefore: Date, notAfter: Date, remainingFraction: number): Date {
  const lifetime = Math.max(0, notAfter.getTime() - notBefore.getTime());
  return new Date(notAfter.getTime() - lifetime * remainingFraction);
}

/** setTimeout cannot wait longer than this (about 24.8 days); longer waits are re-armed. */
export const maxTimerMs = 2 ** 31 - 1;

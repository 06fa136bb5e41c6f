// Retries and renewals spread in time (docs/design.md, Kubernetes): a fleet whose API server comes
// back must not retry in the same second, nor renew its tokens in step after a rollout. Math.random
// is enough: V8 seeds it per process, and nothing here is a secret.

/** `ms` moved by up to ±`spread` of itself, at random. */
export function jittered(ms: number, spread: number, random: () => number = Math.random): number {
  return Math.max(0, Math.round(ms * (1 + spread * (2 * random() - 1))));
}

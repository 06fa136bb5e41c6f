// Service-account tokens shaped as the API server issues them (a JWT whose private claims name the
// account and what the token is bound to: Kubernetes' pkg/serviceaccount/claims.go), unsigned: the
// agent reads their claims only, and the recorded API server of these tests checks nothing.

export interface FakeToken {
  namespace?: string;
  serviceAccount?: { name: string; uid: string };
  pod?: { name: string; uid: string };
  node?: { name: string; uid: string };
  issuedAt?: number;
  expiresAt?: number;
  issuer?: string;
}

export const SERVICE_ACCOUNT = { name: 'linkerd-cni', uid: 'sa-uid-1' };
export const NODE_1 = { name: 'node-1', uid: 'node-uid-1' };

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

export function fakeToken(t: FakeToken = {}): string {
  const now = Math.floor(Date.now() / 1000);
  const iat = t.issuedAt ?? now;
  const payload = {
    aud: ['https://kubernetes.default.svc'],
    exp: t.expiresAt ?? iat + 3600,
    iat,
    nbf: iat,
    iss: t.issuer ?? 'https://kubernetes.default.svc',
    jti: `jti-${Math.random().toString(16).slice(2)}`,
    'kubernetes.io': {
      namespace: t.namespace ?? 'linkerd-cni',
      serviceaccount: t.serviceAccount ?? SERVICE_ACCOUNT,
      ...(t.pod === undefined ? {} : { pod: t.pod }),
      ...(t.node === undefined ? {} : { node: t.node }),
    },
    sub: `system:serviceaccount:${t.namespace ?? 'linkerd-cni'}:${(t.serviceAccount ?? SERVICE_ACCOUNT).name}`,
  };
  return `${b64({ alg: 'RS256', kid: 'test' })}.${b64(payload)}.c2lnbmF0dXJl`;
}

/** The projected token of the DaemonSet's pod on node-1, bound to the pod and naming its node. */
export function podToken(t: FakeToken = {}): string {
  return fakeToken({ pod: { name: 'linkerd-cni-x7k2p', uid: 'pod-uid-1' }, node: NODE_1, ...t });
}

/** A token bound to node-1 itself, as the TokenRequest API issues it. */
export function nodeToken(t: FakeToken = {}): string {
  return fakeToken({ node: NODE_1, expiresAt: Math.floor(Date.now() / 1000) + 86_400, ...t });
}

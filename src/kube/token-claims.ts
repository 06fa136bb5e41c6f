// What a service-account token says about itself, read without the API server (docs/design.md,
// The node's credential). A bound token is a JWT whose private claims name the service account and
// the object it is bound to (Kubernetes' pkg/serviceaccount/claims.go): a token from the kubelet's
// projected volume is bound to the pod, and (Kubernetes >= 1.30) also names the pod's node; a token
// from the TokenRequest API may be bound to the Node itself, and then lives as long as that Node and
// the account do, whatever happens to the pod that asked for it. Pure: the signature is the API
// server's to check; these claims only tell the agent which of its tokens to put where.

/** A bound object as the token names it. */
export interface BoundRef {
  name: string;
  uid: string;
}

export interface TokenClaims {
  issuer: string;
  /** Seconds since the epoch. */
  issuedAt: number;
  expiresAt: number;
  namespace: string;
  serviceAccount: BoundRef;
  /** The pod a projected token is bound to. */
  pod: BoundRef | undefined;
  /** The node: the one a node-bound token is bound to, or the pod's node in a pod-bound token. */
  node: BoundRef | undefined;
}

function ref(value: unknown): BoundRef | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { name, uid } = value as Record<string, unknown>;
  return typeof name === 'string' && typeof uid === 'string' ? { name, uid } : undefined;
}

/** The claims of a service-account JWT, or undefined when it is not one (a legacy secret token has no bound claims). */
export function tokenClaims(token: string): TokenClaims | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  let payload: Record<string, unknown>;
  try {
    payload = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const k8s = payload['kubernetes.io'] as Record<string, unknown> | undefined;
  const { iss, iat, exp } = payload;
  if (typeof k8s !== 'object' || k8s === null || typeof iss !== 'string' || typeof iat !== 'number' || typeof exp !== 'number') return undefined;
  const serviceAccount = ref(k8s.serviceaccount);
  if (typeof k8s.namespace !== 'string' || serviceAccount === undefined) return undefined;
  return { issuer: iss, issuedAt: iat, expiresAt: exp, namespace: k8s.namespace, serviceAccount, pod: ref(k8s.pod), node: ref(k8s.node) };
}

/**
 * True when `candidate` is a token bound to this node for this pod's account: the same issuer,
 * account (by uid, so a re-created account's tokens never pass) and node (by uid, when the pod's token
 * names it: a Node deleted and registered again is a new object, and its old tokens are refused).
 */
export function boundToThisNode(candidate: TokenClaims, podToken: TokenClaims, nodeName: string): boolean {
  return (
    candidate.pod === undefined &&
    candidate.node !== undefined &&
    candidate.node.name === nodeName &&
    (podToken.node === undefined || podToken.node.uid === candidate.node.uid) &&
    candidate.issuer === podToken.issuer &&
    candidate.namespace === podToken.namespace &&
    candidate.serviceAccount.name === podToken.serviceAccount.name &&
    candidate.serviceAccount.uid === podToken.serviceAccount.uid
  );
}

/** When a token is due to be replaced: half its life (seconds since the epoch). */
export function renewalDue(claims: TokenClaims): number {
  return claims.issuedAt + (claims.expiresAt - claims.issuedAt) / 2;
}

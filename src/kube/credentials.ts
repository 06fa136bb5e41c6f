// The agent's two credentials (docs/design.md, The node's credential). The pod's own token, projected
// by the kubelet, dies with the pod: a forced delete, a rollout without surge, or a DaemonSet that no
// longer targets the node ends it at once. The chained plugin reads the kubeconfig in net.d on every
// pod ADD, and a stop must still ask its question after the pod object is gone, so both use a token
// bound to the Node instead (TokenRequest with boundObjectRef kind Node, node-token-renewal.ts): it
// dies with the Node or the service account, never with a pod. Until the agent holds one (first
// start, or the API server refuses it), the kubeconfig carries the pod's token, as linkerd's
// installer writes it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { errnoCode } from '../fs/errno.js';
import { boundToThisNode, tokenClaims, type TokenClaims } from './token-claims.js';

// A node token closer than this to its expiry is not used: the kubeconfig goes back to the pod's
// token rather than hand the plugin one that dies within the minute.
const MIN_LIFE_S = 60;

export interface HeldToken {
  token: string;
  claims: TokenClaims;
}

export class Credentials {
  private node: HeldToken | undefined;

  constructor(
    private readonly serviceAccountDir: string,
    /** NODE_NAME; without it no token is bound to a node. */
    readonly nodeName: string | undefined,
    private readonly nowS: () => number = () => Date.now() / 1000,
  ) {}

  get podTokenFile(): string {
    return path.join(this.serviceAccountDir, 'token');
  }

  /** The pod's projected token, re-read each time (the kubelet rotates it in place); undefined outside a pod. */
  podToken(): string | undefined {
    try {
      const token = readFileSync(this.podTokenFile, 'utf8').trim();
      return token === '' ? undefined : token;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return undefined;
      throw err;
    }
  }

  /** The pod token's claims, when it is a bound service-account token. */
  podClaims(): TokenClaims | undefined {
    const token = this.podToken();
    return token === undefined ? undefined : tokenClaims(token);
  }

  /** The node-bound token, while it has life left. */
  nodeToken(): HeldToken | undefined {
    if (this.node !== undefined && this.node.claims.expiresAt - this.nowS() < MIN_LIFE_S) this.node = undefined;
    return this.node;
  }

  /** The token the kubeconfig carries: the node's when held, else the pod's. */
  kubeconfigToken(): string | undefined {
    return this.nodeToken()?.token ?? this.podToken();
  }

  /**
   * Takes over a node token found on disk (the kubeconfig an earlier agent wrote), offline: only one
   * bound to this node, for this pod's service account, with life left. A rollout then rewrites
   * nothing, and the plugin's credential never changes under it. True when adopted.
   */
  adopt(token: string | undefined): boolean {
    if (token === undefined || this.nodeName === undefined || this.node !== undefined) return false;
    const claims = tokenClaims(token);
    const pod = this.podClaims();
    if (claims === undefined || pod === undefined || !boundToThisNode(claims, pod, this.nodeName)) return false;
    if (claims.expiresAt - this.nowS() < MIN_LIFE_S) return false;
    this.node = { token, claims };
    return true;
  }

  /** A token the API server just issued for this node. */
  hold(token: string): HeldToken | undefined {
    const claims = tokenClaims(token);
    if (claims === undefined) return undefined;
    this.node = { token, claims };
    return this.node;
  }
}

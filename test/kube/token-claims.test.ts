// The claims a service-account token carries, and which token the kubeconfig may carry on
// (src/kube/token-claims.ts, src/kube/credentials.ts): pure, and the Credentials on real files.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Credentials } from '../../src/kube/credentials.js';
import { boundToThisNode, renewalDue, tokenClaims } from '../../src/kube/token-claims.js';
import { tempDir } from '../helpers/tmp.js';
import { fakeToken, NODE_1, nodeToken, podToken, SERVICE_ACCOUNT } from '../helpers/tokens.js';

describe('token claims', () => {
  it('reads the bound objects of a pod-bound and a node-bound token', () => {
    const pod = tokenClaims(podToken())!;
    expect(pod.pod).toEqual({ name: 'linkerd-cni-x7k2p', uid: 'pod-uid-1' });
    expect(pod.node).toEqual(NODE_1);
    expect(pod.serviceAccount).toEqual(SERVICE_ACCOUNT);
    const node = tokenClaims(nodeToken())!;
    expect(node.pod).toBeUndefined();
    expect(node.node).toEqual(NODE_1);
  });

  it.each([
    ['a legacy secret token (no bound claims)', `${Buffer.from('{}').toString('base64url')}.${Buffer.from(JSON.stringify({ iss: 'kubernetes/serviceaccount', sub: 'x' })).toString('base64url')}.sig`],
    ['not a JWT', 'token-1'],
    ['a payload that is not JSON', 'a.!!!.c'],
    ['claims of the wrong types', `a.${Buffer.from(JSON.stringify({ iss: 1, iat: 'x', exp: 2, 'kubernetes.io': { namespace: 'n', serviceaccount: { name: 'a', uid: 'b' } } })).toString('base64url')}.c`],
    ['an empty string', ''],
  ])('is undefined for %s', (_, token) => {
    expect(tokenClaims(token)).toBeUndefined();
  });

  it('a node token counts only for this node, this account (by uid) and this issuer', () => {
    const pod = tokenClaims(podToken())!;
    const fits = (t: string, node = 'node-1') => boundToThisNode(tokenClaims(t)!, pod, node);
    expect(fits(nodeToken())).toBe(true);
    expect(fits(nodeToken(), 'node-2')).toBe(false);
    expect(fits(nodeToken({ node: { name: 'node-1', uid: 'registered-again' } }))).toBe(false);
    expect(fits(nodeToken({ serviceAccount: { name: 'linkerd-cni', uid: 'created-again' } }))).toBe(false);
    expect(fits(nodeToken({ serviceAccount: { name: 'other', uid: SERVICE_ACCOUNT.uid } }))).toBe(false);
    expect(fits(nodeToken({ namespace: 'elsewhere' }))).toBe(false);
    expect(fits(nodeToken({ issuer: 'https://other-cluster' }))).toBe(false);
    // A pod's token (bound to a pod, naming this node) is no node token.
    expect(fits(podToken())).toBe(false);
  });

  it('is due for renewal at half its life', () => {
    expect(renewalDue(tokenClaims(fakeToken({ issuedAt: 1000, expiresAt: 87_400 }))!)).toBe(44_200);
  });
});

describe('Credentials: which token the kubeconfig carries', () => {
  const dirWith = (token: string | undefined) => {
    const dir = tempDir();
    if (token !== undefined) writeFileSync(path.join(dir, 'token'), `${token}\n`);
    return dir;
  };

  it("carries the pod's token until a node token is held, then the node's", () => {
    const pod = podToken();
    const credentials = new Credentials(dirWith(pod), 'node-1');
    expect(credentials.kubeconfigToken()).toBe(pod);
    const node = nodeToken();
    expect(credentials.hold(node)).toBeDefined();
    expect(credentials.kubeconfigToken()).toBe(node);
  });

  it('adopts a node token left on disk only when it fits and has life left', () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[string | undefined, boolean]> = [
      [nodeToken(), true],
      [nodeToken({ expiresAt: now + 30 }), false],
      [nodeToken({ node: { name: 'node-2', uid: 'x' } }), false],
      [podToken(), false],
      ['linkerd-installer-token', false],
      [undefined, false],
    ];
    for (const [token, adopted] of cases) {
      const credentials = new Credentials(dirWith(podToken()), 'node-1');
      expect(credentials.adopt(token), String(token)).toBe(adopted);
      expect(credentials.nodeToken()?.token).toBe(adopted ? token : undefined);
    }
    // No NODE_NAME: no node token at all.
    expect(new Credentials(dirWith(podToken()), undefined).adopt(nodeToken())).toBe(false);
  });

  it('drops a held node token in its last minute: the pod token is carried instead', () => {
    let now = Date.now() / 1000;
    const credentials = new Credentials(dirWith(podToken()), 'node-1', () => now);
    const node = nodeToken({ expiresAt: Math.floor(now) + 3600 });
    credentials.hold(node);
    expect(credentials.kubeconfigToken()).toBe(node);
    now += 3590;
    expect(credentials.nodeToken()).toBeUndefined();
    expect(credentials.kubeconfigToken()).not.toBe(node);
  });

  it('outside a pod there is no token', () => {
    expect(new Credentials(dirWith(undefined), 'node-1').kubeconfigToken()).toBeUndefined();
  });
});

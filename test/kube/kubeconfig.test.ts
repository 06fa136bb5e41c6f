import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { quoted, renderKubeconfig, serverUrl } from '../../src/kube/kubeconfig.js';

describe('kubeconfig', () => {
  it('brackets IPv6 hosts', () => {
    expect(serverUrl('https', 'fd00::1', 443)).toBe('https://[fd00::1]:443');
    expect(serverUrl('https', '[fd00::1]', 443)).toBe('https://[fd00::1]:443');
    expect(serverUrl('https', '10.96.0.1', 6443)).toBe('https://10.96.0.1:6443');
  });

  it('is the whole document a YAML parser reads: CA, token, user, context', () => {
    const doc = parse(renderKubeconfig({ protocol: 'https', host: '10.96.0.1', port: 443, token: 'a"b: c', caData: 'Q0E=', skipTlsVerify: false }));
    expect(doc).toEqual({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'local', cluster: { server: 'https://10.96.0.1:443', 'certificate-authority-data': 'Q0E=' } }],
      users: [{ name: 'linkerd-cni', user: { token: 'a"b: c' } }],
      contexts: [{ name: 'linkerd-cni-context', context: { cluster: 'local', user: 'linkerd-cni' } }],
      'current-context': 'linkerd-cni-context',
    });
  });

  it('writes insecure-skip-tls-verify instead of the CA when asked', () => {
    const doc = parse(renderKubeconfig({ protocol: 'https', host: 'h', port: 1, token: 't', caData: 'Q0E=', skipTlsVerify: true }));
    expect(doc.clusters[0].cluster).toEqual({ server: 'https://h:1', 'insecure-skip-tls-verify': true });
  });

  it('keeps any token and host one scalar, exactly (property: parse(render(x)) gives x back)', () => {
    const text = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.string({ unit: 'binary' }), fc.constantFrom('#x', 'a: b', '- x', '\n', '"', "'", '\\', '\u2028', '\u0085', '{}', 'null', 'true', '0x1'));
    fc.assert(
      fc.property(text, text, text, (token, host, caData) => {
        const doc = parse(renderKubeconfig({ protocol: 'https', host, port: 443, token, caData, skipTlsVerify: false }));
        expect(doc.users[0].user.token).toBe(token);
        expect(doc.clusters[0].cluster['certificate-authority-data']).toBe(caData);
        expect(doc.clusters[0].cluster.server).toBe(serverUrl('https', host, 443));
      }),
      { numRuns: 2000 },
    );
  });

  it('quotes in printable ASCII only', () => {
    expect(quoted('é\n\u2028😀')).toBe('"\\u00e9\\n\\u2028\\ud83d\\ude00"');
  });
});

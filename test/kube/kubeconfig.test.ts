import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { renderKubeconfig, serverUrl } from '../../src/kube/kubeconfig.js';

describe('kubeconfig', () => {
  it('brackets IPv6 hosts', () => {
    expect(serverUrl('https', 'fd00::1', 443)).toBe('https://[fd00::1]:443');
    expect(serverUrl('https', '[fd00::1]', 443)).toBe('https://[fd00::1]:443');
    expect(serverUrl('https', '10.96.0.1', 6443)).toBe('https://10.96.0.1:6443');
  });

  it('embeds the CA and token', () => {
    const doc = parse(renderKubeconfig({ protocol: 'https', host: '10.96.0.1', port: 443, token: 'a"b: c', caData: 'Q0E=', skipTlsVerify: false }));
    expect(doc.clusters[0].cluster).toEqual({ server: 'https://10.96.0.1:443', 'certificate-authority-data': 'Q0E=' });
    expect(doc.users[0].user.token).toBe('a"b: c');
    expect(doc['current-context']).toBe(doc.contexts[0].name);
  });

  it('writes insecure-skip-tls-verify instead of the CA when asked', () => {
    const doc = parse(renderKubeconfig({ protocol: 'https', host: 'h', port: 1, token: 't', caData: 'Q0E=', skipTlsVerify: true }));
    expect(doc.clusters[0].cluster).toEqual({ server: 'https://h:1', 'insecure-skip-tls-verify': true });
  });
});

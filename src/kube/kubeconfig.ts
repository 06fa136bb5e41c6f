// The kubeconfig the chained plugin uses to reach the API server. Pure rendering.
import { stringify } from 'yaml';

export interface KubeconfigInput {
  protocol: string;
  host: string;
  port: number;
  token: string;
  /** Base64 of the CA bundle; ignored when skipTlsVerify. */
  caData?: string;
  skipTlsVerify: boolean;
}

/** `https://10.0.0.1:443`, `https://[fd00::1]:443`: an IPv6 literal needs brackets in a URL. */
export function serverUrl(protocol: string, host: string, port: number): string {
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `${protocol}://${bracketed}:${port}`;
}

export function renderKubeconfig(input: KubeconfigInput): string {
  const cluster: Record<string, unknown> = { server: serverUrl(input.protocol, input.host, input.port) };
  if (input.skipTlsVerify) cluster['insecure-skip-tls-verify'] = true;
  else if (input.caData !== undefined) cluster['certificate-authority-data'] = input.caData;
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'local', cluster }],
    users: [{ name: 'linkerd-cni', user: { token: input.token } }],
    contexts: [{ name: 'linkerd-cni-context', context: { cluster: 'local', user: 'linkerd-cni' } }],
    'current-context': 'linkerd-cni-context',
  };
  return `# Kubeconfig file for the chained CNI plugin, written by cni-chainer.\n${stringify(doc)}`;
}

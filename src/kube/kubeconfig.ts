// The kubeconfig the chained plugin uses to reach the API server. Pure rendering.
//
// A fixed document, written as YAML with every variable scalar a double-quoted string in JSON's
// syntax, escaped down to ASCII: YAML 1.2 double-quoted scalars take JSON's escapes (YAML 1.2 §5.7,
// "JSON compatibility"), so a token or host holding quotes, colons, `#` or newlines stays one scalar.
// A YAML library for this one template cost ~3.7 MiB of the agent's RSS; the tests parse the output
// with one (yaml), including for arbitrary strings.

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

/** A YAML double-quoted scalar holding exactly `value`, in printable ASCII. */
export function quoted(value: string): string {
  return JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function renderKubeconfig(input: KubeconfigInput): string {
  const trust = input.skipTlsVerify
    ? '      insecure-skip-tls-verify: true\n'
    : input.caData !== undefined
      ? `      certificate-authority-data: ${quoted(input.caData)}\n`
      : '';
  return (
    '# Kubeconfig file for the chained CNI plugin, written by cni-chainer.\n' +
    'apiVersion: v1\n' +
    'kind: Config\n' +
    'clusters:\n' +
    '  - name: local\n' +
    '    cluster:\n' +
    `      server: ${quoted(serverUrl(input.protocol, input.host, input.port))}\n` +
    trust +
    'users:\n' +
    '  - name: linkerd-cni\n' +
    '    user:\n' +
    `      token: ${quoted(input.token)}\n` +
    'contexts:\n' +
    '  - name: linkerd-cni-context\n' +
    '    context:\n' +
    '      cluster: local\n' +
    '      user: linkerd-cni\n' +
    'current-context: linkerd-cni-context\n'
  );
}

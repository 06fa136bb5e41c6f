// The control plane's keys, made with openssl in the cluster's scratch directory: a CA, the API
// server's serving certificate for 127.0.0.1 and the kubernetes Service's 10.96.0.1, and the service-account signing key.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Pki {
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  saKey: string;
  saPub: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

export function makePki(dir: string): Pki {
  const p = (name: string) => path.join(dir, name);
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=cni-chainer-test-ca'], dir);
  writeFileSync(p('server.ext'), 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n');
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=kube-apiserver'], dir);
  openssl(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'server.ext'], dir);
  openssl(['genrsa', '-out', 'sa.key', '2048'], dir);
  openssl(['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
  return { caCert: p('ca.crt'), caKey: p('ca.key'), serverCert: p('server.crt'), serverKey: p('server.key'), saKey: p('sa.key'), saPub: p('sa.pub') };
}

// The stand-in for linkerd-cni in the real-runtime suite: a CNI plugin that records every invocation
// (command and container id, one JSON line each) and, as a chained plugin must, returns prevResult.
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Invocation {
  cmd: string;
  id: string;
  t: number;
  /** `namespace/name` of the pod, from CNI_ARGS (the CRI runtime passes K8S_POD_*). */
  pod?: string;
  /** With `getOwnPod`: the API server's status for a GET of that pod with the plugin's kubeconfig. */
  api?: number | string;
}

/**
 * Writes the plugin as `<dir>/<type>`, logging to `log`. With `getOwnPod`, each ADD also GETs its
 * pod from the API server with the kubeconfig its config names (`kubernetes.kubeconfig`), as
 * linkerd-cni does, and fails (exit 1, a CNI error) unless that GET answers 200: the kubeconfig the
 * agent writes is proven by use, and a dead token fails the pod's sandbox as it would with linkerd.
 */
export function writeTestPlugin(dir: string, type: string, log: string, options: { getOwnPod?: boolean } = {}): string {
  const file = path.join(dir, type);
  writeFileSync(
    file,
    `#!${process.execPath}
const fs = require('fs');
const cmd = process.env.CNI_COMMAND;
let input = '';
try { input = fs.readFileSync(0, 'utf8'); } catch {}
const args = Object.fromEntries((process.env.CNI_ARGS || '').split(';').filter(Boolean).map((kv) => kv.split('=')));
const record = { cmd, id: process.env.CNI_CONTAINERID || '', t: Date.now() };
if (args.K8S_POD_NAME) record.pod = args.K8S_POD_NAMESPACE + '/' + args.K8S_POD_NAME;
const done = () => fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify(record) + '\\n');
if (cmd === 'VERSION') {
  done();
  process.stdout.write(JSON.stringify({ cniVersion: '1.0.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0'] }));
} else if (cmd === 'ADD') {
  const conf = JSON.parse(input);
  const reply = () => { done(); process.stdout.write(JSON.stringify({ ...(conf.prevResult || {}), cniVersion: conf.cniVersion })); };
  if (${options.getOwnPod === true} && record.pod) {
    // As linkerd-cni does: an ADD whose API call fails fails, and so does the pod's sandbox.
    getOwnPod(conf.kubernetes.kubeconfig, args).then((status) => {
      record.api = status;
      if (status === 200) return reply();
      done();
      process.stdout.write(JSON.stringify({ cniVersion: conf.cniVersion, code: 999, msg: 'linkerd-cni stand-in: the API server answered ' + status }));
      process.exitCode = 1;
    });
  } else {
    reply();
  }
} else {
  done();
}
// The kubeconfig's scalars, one line each: JSON strings (src/kube/kubeconfig.ts) or plain.
function getOwnPod(kubeconfig, args) {
  return new Promise((resolve) => {
    try {
      const text = fs.readFileSync(kubeconfig, 'utf8');
      // A JSON string (cni-chainer's kubeconfig) or a plain scalar (linkerd's installer's).
      const field = (key) => { const m = text.match(new RegExp('^\\\\s*' + key + ': (.*?)\\\\s*$', 'm')); return m ? (m[1].startsWith('"') ? JSON.parse(m[1]) : m[1]) : undefined; };
      const url = new URL('/api/v1/namespaces/' + args.K8S_POD_NAMESPACE + '/pods/' + args.K8S_POD_NAME, field('server'));
      const ca = field('certificate-authority-data');
      const req = require('https').get(url, { ca: ca && Buffer.from(ca, 'base64'), headers: { authorization: 'Bearer ' + field('token') }, timeout: 5000 }, (res) => { res.resume(); resolve(res.statusCode); });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (err) => resolve(String(err.message)));
    } catch (err) {
      resolve(String(err.message));
    }
  });
}
`,
  );
  chmodSync(file, 0o755);
  return file;
}

export function invocations(log: string): Invocation[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Invocation);
}

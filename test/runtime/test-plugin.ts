// The stand-in for linkerd-cni in the real-runtime suite: a CNI plugin that records every invocation
// (command and container id, one JSON line each) and, as a chained plugin must, returns prevResult.
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Invocation {
  cmd: string;
  id: string;
  t: number;
}

/** Writes the plugin as `<dir>/<type>`, logging to `log`. */
export function writeTestPlugin(dir: string, type: string, log: string): string {
  const file = path.join(dir, type);
  writeFileSync(
    file,
    `#!${process.execPath}
const fs = require('fs');
const cmd = process.env.CNI_COMMAND;
let input = '';
try { input = fs.readFileSync(0, 'utf8'); } catch {}
fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify({ cmd, id: process.env.CNI_CONTAINERID || '', t: Date.now() }) + '\\n');
if (cmd === 'VERSION') {
  process.stdout.write(JSON.stringify({ cniVersion: '1.0.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0'] }));
} else if (cmd === 'ADD') {
  const conf = JSON.parse(input);
  process.stdout.write(JSON.stringify({ ...(conf.prevResult || {}), cniVersion: conf.cniVersion }));
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

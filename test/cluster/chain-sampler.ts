// Samples, every `everyMs`, whether the config the runtime loads is chained, in a process of its own:
// the test's own loop blocks in kubectl calls, and a gap in the samples would hide a window.
import { spawn } from 'node:child_process';

export interface Samples {
  count: number;
  /** Milliseconds since the epoch of each sample that found the config unchained (or unreadable). */
  unchained: number[];
  /** The longest time between two samples, to show that no window could hide between them. */
  maxGapMs: number;
}

const SCRIPT = `
const fs = require('fs');
const [file, every, type] = process.argv.slice(1);
const chained = new RegExp('"type"\\\\s*:\\\\s*"' + type + '"');
const state = { count: 0, unchained: [], maxGapMs: 0 };
let last = Date.now();
setInterval(() => {
  const now = Date.now();
  state.maxGapMs = Math.max(state.maxGapMs, now - last);
  last = now;
  state.count++;
  let text = '';
  try { text = fs.readFileSync(file, 'utf8'); } catch {}
  if (!chained.test(text)) state.unchained.push(now);
}, Number(every));
process.on('SIGTERM', () => { process.stdout.write(JSON.stringify(state)); process.exit(0); });
process.stdout.write('sampling\\n');
`;

export interface Sampler {
  stop(): Promise<Samples>;
}

/** Starts sampling `file` for a plugin of type `type` (the chained one); resolves once it runs. */
export async function sampleChained(file: string, type: string, everyMs = 20): Promise<Sampler> {
  const child = spawn(process.execPath, ['-e', SCRIPT, file, String(everyMs), type], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the sampler exited (${code})`)));
  });
  return {
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      return JSON.parse(out.slice(out.indexOf('\n') + 1)) as Samples;
    },
  };
}

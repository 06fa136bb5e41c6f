// Samples a node's files every `everyMs` in a process of its own (the test's loop may block): whether
// the config is chained, and whether it names the plugin while the plugin's binary is missing, the
// state that fails every new pod.
import { spawn } from 'node:child_process';

export interface NodeSamples {
  count: number;
  /** Times (ms on the sampler's monotonic clock) of samples that found the config unchained or unreadable. */
  unchained: number[];
  /** Times of samples that found the config naming the plugin and the binary missing. */
  missingBinary: number[];
  /**
   * How many runs of unchained samples, and of samples naming a missing binary, there were: a run
   * starts at a sample in that state whose previous sample was not. Counted by the sampler, not from
   * the times, so a stall of the sampler (a loaded node delays its timer) is not a second window.
   */
  runs: { unchained: number; missingBinary: number };
  maxGapMs: number;
}

const SCRIPT = `
const fs = require('fs');
const [config, binary, type, every] = process.argv.slice(1);
const names = new RegExp('"type"\\\\s*:\\\\s*"' + type + '"');
const state = { count: 0, unchained: [], missingBinary: [], runs: { unchained: 0, missingBinary: 0 }, maxGapMs: 0 };
let previous = 'ok';
// The monotonic clock: this VM's wall clock is stepped (a 47 s step once read as a 47 s gap in sampling).
let last = Math.round(performance.now());
setInterval(() => {
  const now = Math.round(performance.now());
  state.maxGapMs = Math.max(state.maxGapMs, now - last);
  last = now;
  state.count++;
  let text = '';
  try { text = fs.readFileSync(config, 'utf8'); } catch {}
  const found = !names.test(text) ? 'unchained' : !fs.existsSync(binary) ? 'missingBinary' : 'ok';
  if (found !== 'ok') {
    state[found].push(now);
    if (previous !== found) state.runs[found]++;
  }
  previous = found;
}, Number(every));
process.on('SIGTERM', () => { process.stdout.write(JSON.stringify(state)); process.exit(0); });
process.stdout.write('sampling\\n');
`;

/** True when the samples found `state` (unchained, or naming a missing binary) in one run at most. */
export const oneWindow = (samples: NodeSamples, state: keyof NodeSamples['runs']) => samples.runs[state] <= 1;

export interface NodeSampler {
  /** The sampling process, for a test that stops it (SIGSTOP) as a loaded node would delay it. */
  pid: number;
  stop(): Promise<NodeSamples>;
}

export async function sampleNode(config: string, binary: string, type: string, everyMs = 20): Promise<NodeSampler> {
  const child = spawn(process.execPath, ['-e', SCRIPT, config, binary, type, String(everyMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the sampler exited (${code})`)));
  });
  return {
    pid: child.pid!,
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      return JSON.parse(out.slice(out.indexOf('\n') + 1)) as NodeSamples;
    },
  };
}

// The storm-pairs harness keeps working with more than two programs, and reports storms by their place
// after start (its numbers are not asserted here: timing goals live in the bench).
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/addon-path.js';
import { runProcess } from './helpers/run-node.js';

describe('npm run bench:pairs', () => {
  it('runs a third program beside the agent and the reference, compares each with B, and splits storms by their place after start', async () => {
    const agent = path.join(repoRoot, 'dist', 'cni-chainer.mjs');
    const args = ['--rounds', '2', '--per', '2', '--files', '30', '--c', agent];
    const result = await runProcess(process.execPath, [path.join(repoRoot, 'dist', 'bench', 'storm-pairs.js'), ...args]);
    expect(result.code, result.stderr).toBe(0);
    // Every round runs each program afresh, in an order that reverses every round.
    const turns = result.stderr.split('\n').filter((line) => line.startsWith('round '));
    expect(turns.map((line) => line.replace(/, \d+ storms.*/, ''))).toEqual(['round 1/2: A', 'round 1/2: B', 'round 1/2: C', 'round 2/2: C', 'round 2/2: B', 'round 2/2: A']);
    for (const label of ['A', 'B', 'C']) expect(result.stdout).toMatch(new RegExp(`^\\| ${label}: \\S+ \\| [\\d.]+ \\| [\\d.]+ \\|.* \\| 0 \\|$`, 'm'));
    for (const label of ['A', 'C']) expect(result.stdout).toMatch(new RegExp(`^\\| ${label} / B \\| [\\d.]+x \\| [\\d.]+x \\|`, 'm'));
    expect(result.stdout).not.toMatch(/^\| B \/ B/m);
    // Storm 1 and storm 2 of each program, the reference without ratios to itself.
    for (const place of [1, 2]) {
      for (const label of ['A', 'C']) expect(result.stdout).toMatch(new RegExp(`^\\| ${place} \\| ${label} \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+x \\| [\\d.]+x \\|$`, 'm'));
      expect(result.stdout).toMatch(new RegExp(`^\\| ${place} \\| B \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+ \\| [\\d.]+ \\| \\|$`, 'm'));
    }
  }, 120_000);
});

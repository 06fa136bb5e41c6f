// The benchmark keeps working (its numbers are not asserted here: timing goals live in the bench).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/addon-path.js';
import { runProcess } from './helpers/run-node.js';
import { tempDir } from './helpers/tmp.js';

describe('npm run bench', () => {
  it('runs both backends on a small storm and writes its table, JSON and SVG', async () => {
    const out = tempDir();
    const args = ['--files', '30', '--paced', '5', '--interval-ms', '2', '--rewrite-files', '5', '--rewrites', '2', '--idle-s', '0', '--out', out];
    const result = await runProcess(process.execPath, [path.join(repoRoot, 'dist', 'bench', 'bench.js'), ...args]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^\| native \| storm \| 30 \|/m);
    expect(result.stdout).toMatch(/^\| parcel \| paced \| 5 \|/m);
    expect(result.stdout).not.toContain('| NO |');
    const json = JSON.parse(readFileSync(path.join(out, 'bench.json'), 'utf8')) as { results: Array<{ backend: string; storm: { correct: boolean } }> };
    expect(json.results.map((r) => [r.backend, r.storm.correct])).toEqual([['native', true], ['parcel', true]]);
    expect(readFileSync(path.join(out, 'latency-cdf.svg'), 'utf8')).toContain('<polyline');
    expect(existsSync(path.join(out, 'latency-cdf-paced.svg'))).toBe(true);
  }, 120_000);
});

// `npm run fleet` keeps working on a small fleet: every scenario runs, against the real control plane
// it builds, and says what it measured (its figures are the bench's, not asserted here but for what
// must hold whatever the machine: every node untainted once, no node unchained by the rollout, the
// Events of a fight within the per-node bound).
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/addon-path.js';
import { runProcess } from './helpers/run-node.js';

describe('npm run fleet', () => {
  it('scales up, rolls out, fights and survives an outage with 6 agents, and writes its figures', async () => {
    const out = mkdtempSync(path.join(tmpdir(), 'cc-fleet-out-'));
    const result = await runProcess(process.execPath, [path.join(repoRoot, 'dist', 'bench', 'fleet', 'fleet.js'), '--nodes', '6', '--fight-s', '10', '--outage-s', '10', '--out', out]);
    expect(result.code, result.stderr).toBe(0);
    const file = readdirSync(out).find((f) => f.startsWith('fleet-6-'))!;
    const figures = JSON.parse(readFileSync(path.join(out, file), 'utf8')) as Record<string, Record<string, number>>;
    expect(figures['scale-up']!.nodes).toBe(6);
    expect(figures['scale-up']!.untaintedTwice).toBe(0);
    // Every agent untainted its node, with its own token: the audit log saw each node's PATCH.
    expect(figures['scale-up']!.agentRequestsPerNode).toBeGreaterThan(0);
    expect((figures['scale-up']!.agentRequests as unknown as Record<string, number>)['PATCH nodes']).toBe(6);
    expect(figures.rollout!.unchained).toBe(0);
    expect(figures.rollout!.untaintedAgain).toBe(0);
    expect(figures.rollout!.stillTainted).toBe(0);
    expect(figures.fight!.fightingNodes).toBe(1);
    expect(figures.fight!.newEventsMaxOneNode).toBeGreaterThan(0);
    expect(figures.fight!.newEventsMaxOneNode).toBeLessThanOrEqual(10);
    expect(figures.outage!.agentRequestsPerSecondFromRestart).toHaveLength(30);
    expect(result.stdout).toMatch(/## scale-up/);
  }, 600_000);
});

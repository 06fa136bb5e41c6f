// The README's first command must keep working: the demo runs end to end.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/addon-path.js';
import { runProcess } from '../../helpers/run-node.js';

describe('npm run demo', () => {
  it('chains, checks and cleans up a scratch node', async () => {
    const result = await runProcess(process.execPath, [path.join(repoRoot, 'dist', 'demo', 'demo.js')]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('→ 10-calico.conflist: calico → linkerd-cni');
    expect(result.stdout).toContain('→ 05-cilium.conflist-current: cilium-cni → linkerd-cni');
    expect(result.stdout).toContain('chained: the runtime loads 05-cilium.conflist');
    expect(result.stdout).toContain('NOT chained: the runtime loads 05-cilium.conflist');
    expect(result.stdout).toContain('agent exited with 0');
  });
});

// Which Event on the Node each reason not to be ready is (src/daemon/lifecycle/node-event-table.ts):
// chosen from the typed condition or status, never from the text /readyz prints, with a key and a note
// that stay the same while the cause does.
import { describe, expect, it } from 'vitest';
import { nodeEventOf } from '../../src/daemon/lifecycle/node-event-table.js';
import type { ConditionKey, ConfigStatus } from '../../src/daemon/shared/readiness.js';

const condition = (key: ConditionKey, reason = 'why') => ({ kind: 'condition' as const, key, reason });
const config = (status: ConfigStatus, detail?: string, name = '10-calico.conflist') => ({ kind: 'config' as const, name, status, detail });

describe('the Node Event of a reason not to be ready', () => {
  it.each<[string, ReturnType<typeof condition> | ReturnType<typeof config>, string | undefined]>([
    ['starting or stopping', condition('lifecycle', 'starting'), undefined],
    ['standing by for a newer instance (a hand-over)', condition('standby', 'instance 1f2e has taken over this node'), undefined],
    ['the owner file cannot be written', condition('owner', 'cannot write the owner file: EROFS'), 'Unchained'],
    ['net.d gone', condition('net-dir'), 'Unchained'],
    ['net.d cannot be listed', condition('scan'), 'Unchained'],
    ['the kubeconfig cannot be written', condition('kubeconfig'), 'Unchained'],
    ["a symlink target's directory", condition('target-dir:/var/lib/cni'), 'Unchained'],
    ['the binaries cannot be installed', condition('binaries'), 'BinaryMissing'],
    ["the plugin's binary is not as installed", condition('plugin-binary'), 'BinaryMissing'],
    ['a fight', config('backoff', 'reverted within ms; next try in 4000 ms'), 'Fight'],
    ['no binary for a config', config('no-binary'), 'BinaryMissing'],
    ['invalid JSON', config('invalid'), 'Unchained'],
    ['a dangling link', config('dangling'), 'Unchained'],
    ['a link loop', config('loop'), 'Unchained'],
    ['a FIFO', config('not-regular'), 'Unchained'],
    ['a .json the suffixes leave out', config('unmanaged'), 'Unchained'],
    ['too large', config('too-large'), 'Unchained'],
    ['X.conf and X.conflist', config('conflict'), 'Unchained'],
    ['a write that failed', config('error', 'ENOSPC'), 'Unchained'],
    ['a config whose name contains "stale"', config('invalid', undefined, '10-stale.conflist'), 'Unchained'],
  ])('%s', (_, entry, reason) => {
    expect(nodeEventOf(entry, 'in-place')?.reason).toBe(reason);
  });

  it('in owned mode, a config that cannot be kept leaves a stale copy loaded', () => {
    expect(nodeEventOf(config('error', 'EACCES'), 'owned')?.reason).toBe('StaleOwnedCopy');
    expect(nodeEventOf(config('backoff'), 'owned')?.reason).toBe('Fight');
  });

  it("keys and notes a fight by its config and cause, not by its next retry", () => {
    const a = nodeEventOf(config('backoff', 'reverted; next try in 1000 ms'), 'in-place')!;
    const b = nodeEventOf(config('backoff', 'reverted; next try in 64000 ms'), 'in-place')!;
    expect(a).toEqual(b);
    expect(a.note).not.toMatch(/next try/);
    expect(nodeEventOf(config('backoff', 'x', '05-cilium.conflist'), 'in-place')!.key).not.toBe(a.key);
  });
});

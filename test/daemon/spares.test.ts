// Spares: the ready patch of a config the primary keeps rewriting. What it keeps per file lives only
// while there is a spare or a preparation: a node whose configs come and go by name must not leave an
// entry behind for each name it ever had.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Spares } from '../../src/daemon/keepers/spares.js';
import { sha256 } from '../../src/fs/content-hash.js';
import { Dir } from '../../src/fs/dir.js';
import { HostRoot } from '../../src/fs/host-root.js';
import { tempDir } from '../helpers/tmp.js';

function node(): { root: HostRoot; netDir: string } {
  const root = tempDir();
  const netDir = path.join(root, 'etc/cni/net.d');
  mkdirSync(netDir, { recursive: true });
  return { root: new HostRoot(root), netDir };
}

const input = Buffer.from('{"plugins":[{"type":"calico"}]}\n');
const output = Buffer.from('{"plugins":[{"type":"calico"},{"type":"linkerd-cni"}]}\n');
const options = { mode: 0o644, expect: input };

describe('Spares', () => {
  it('keeps nothing for the files it drops without a spare', () => {
    const { root, netDir } = node();
    const spares = new Spares(root);
    for (let i = 0; i < 1000; i++) spares.drop(`${netDir}/${i}.conflist`);
    expect(spares.size).toBe(0);
  });

  it('hands over a ready spare for the same content once, and keeps nothing after', async () => {
    const { root, netDir } = node();
    writeFileSync(path.join(netDir, '10-calico.conflist'), input);
    const spares = new Spares(root);
    const key = `${netDir}/10-calico.conflist`;
    spares.prepareSoon(key, '/etc/cni/net.d', netDir, '10-calico.conflist', input, sha256(input), output, options);
    expect(spares.size).toBe(1);
    await spares.settled();
    expect(readdirSync(netDir)).toHaveLength(2);
    const dir = Dir.open(netDir);
    try {
      expect(spares.take(key, dir, sha256(Buffer.from('other')), output)).toBeUndefined();
      const tmp = spares.take(key, dir, sha256(input), output);
      expect(tmp).toBeDefined();
      expect(readFileSync(path.join(netDir, tmp!))).toEqual(output);
      expect(spares.take(key, dir, sha256(input), output)).toBeUndefined();
    } finally {
      dir.close();
    }
    expect(spares.size).toBe(0);
  });

  it('a drop while the spare is prepared leaves no temp file and no entry', async () => {
    const { root, netDir } = node();
    const spares = new Spares(root);
    const key = `${netDir}/10-calico.conflist`;
    spares.prepareSoon(key, '/etc/cni/net.d', netDir, '10-calico.conflist', input, sha256(input), output, options);
    spares.drop(key);
    await spares.dispose();
    expect(readdirSync(netDir)).toEqual([]);
    expect(spares.size).toBe(0);
  });

  it('a preparation that fails keeps no entry', async () => {
    const { root, netDir } = node();
    const spares = new Spares(root);
    spares.prepareSoon(`${netDir}/gone/x.conflist`, '/etc/cni/net.d/gone', `${netDir}/gone`, 'x.conflist', input, sha256(input), output, options);
    await spares.dispose();
    expect(spares.size).toBe(0);
  });
});

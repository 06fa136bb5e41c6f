import { existsSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../bench/repo-root.js';

export { repoRoot };
export const addonFile = path.join(repoRoot, 'build', 'Release', 'cni_chainer.node');
export const cliFile = path.join(repoRoot, 'dist', 'cni-chainer.mjs');

if (!existsSync(addonFile)) throw new Error(`addon not built: ${addonFile} (run npm ci)`);

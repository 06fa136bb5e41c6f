import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const addonFile = path.join(repoRoot, 'build', 'Release', 'cni_chainer.node');
export const cliFile = path.join(repoRoot, 'dist', 'cni-chainer.mjs');

if (!existsSync(addonFile)) throw new Error(`addon not built: ${addonFile} (run npm ci)`);

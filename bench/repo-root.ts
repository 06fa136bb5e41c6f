// The repository's root, from wherever this module runs: its TypeScript source (the tests, under
// vitest) or its compiled copy in dist/ (the benches).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'cni-chainer') return dir;
    if (path.dirname(dir) === dir) throw new Error(`no cni-chainer package.json above ${from}`);
  }
}

export const repoRoot = findRoot(path.dirname(fileURLToPath(import.meta.url)));

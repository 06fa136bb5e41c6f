import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Every test file uses real processes, files and inotify instances: separate processes keep one
    // file's watchers and children from disturbing another's.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});

// Preloaded (`node --import`) into the agent's one warm-up run by scripts/compile-cache.mjs: on
// SIGUSR2 it writes what V8 has compiled so far to the compile cache. The agent ends with _exit
// (native/exit_now.h), which skips the write Node would otherwise make at exit, and a flush at
// "started" holds every function the start ran, not only the few V8 compiles eagerly.
import { flushCompileCache } from 'node:module';

process.on('SIGUSR2', () => {
  flushCompileCache();
  process.stderr.write('compile cache flushed\n');
});

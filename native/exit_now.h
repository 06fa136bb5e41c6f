#pragma once

#include <napi.h>

// exitNow(code): _exit(2), without Node's teardown. process.exit() joins V8's platform threads while
// the isolate is still alive; a concurrent Maglev or Sparkplug compile parked there waiting for a
// main-thread GC never returns, and the process hangs in pthread_join (nodejs/node#54918, open on
// Node 24). The agent has nothing left to flush at that point: its log and file writes are synchronous
// or awaited, and the kernel closes every fd.
Napi::Value ExitNow(const Napi::CallbackInfo& info);

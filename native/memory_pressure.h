#pragma once

#include <napi.h>

// collectGarbageForMemory(): reports critical memory pressure to V8, which answers at once, on this
// thread, with a full collection that reduces memory: the young generation a storm grew shrinks back
// to its smallest as well. A collection asked for through `gc()` is a forced one, which leaves the
// young generation as large as it grew (test/daemon/memory-return.test.ts shows both). When to ask
// is the caller's policy (daemon/lifecycle/memory-return.ts).
Napi::Value CollectGarbageForMemory(const Napi::CallbackInfo& info);

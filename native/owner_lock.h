#pragma once

#include <napi.h>

// flock(2) on an open fd, for the ownership rule (src/daemon/lifecycle/ownership.ts): the instance that owns the
// node holds LOCK_EX on its owner file, and the kernel drops the lock when the holder dies, even by
// SIGKILL (flock(2): the lock belongs to the open file description, released when its last fd
// closes). A liveness signal that needs no periodic write in net.d.
//
//   flock(fd, exclusive: boolean) -> boolean   (LOCK_NB: false when another description holds it)
//   flockWait(fd) -> Promise<void>             (blocking LOCK_SH on a thread of its own, never the
//                                               pool: settles once the holder is gone)
Napi::Value Flock(const Napi::CallbackInfo& info);
Napi::Value FlockWait(const Napi::CallbackInfo& info);

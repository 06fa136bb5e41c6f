#include "owner_lock.h"

#include <sys/file.h>

#include <cerrno>
#include <thread>

#include "args.h"
#include "errors.h"

Napi::Value Flock(const Napi::CallbackInfo& info) {
  const int fd = IntArg(info, 0, "fd");
  const bool exclusive = Arg(info, 1).ToBoolean();
  int rc;
  do {
    rc = flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return Napi::Boolean::New(info.Env(), true);
  if (errno == EWOULDBLOCK) return Napi::Boolean::New(info.Env(), false);
  throw ErrnoError(info.Env(), errno, "flock", "", "");
}

namespace {

// One blocking flock on a thread of its own, never on libuv's pool: a standby may wait on several
// owner files in turn (each replaced while its holder lives), and a wait cannot be cancelled once the
// syscall runs. On the pool, enough of them would leave no thread for the agent's file I/O. A
// detached thread that stays blocked costs a stack and nothing else; the process ends with _exit
// (native/exit_now.h), which does not wait for it. The result comes back to the loop through a
// thread-safe function that does not keep the loop alive.
struct LockWait {
  Napi::Promise::Deferred deferred;
  int err = 0;
};

void Settle(Napi::Env env, Napi::Function, std::nullptr_t*, LockWait* wait) {
  if (env != nullptr) {
    if (wait->err == 0) wait->deferred.Resolve(env.Undefined());
    else wait->deferred.Reject(ErrnoError(env, wait->err, "flock", "", "").Value());
  }
  delete wait;
}

using LockWaitDone = Napi::TypedThreadSafeFunction<std::nullptr_t, LockWait, Settle>;

}  // namespace

Napi::Value FlockWait(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int fd = IntArg(info, 0, "fd");
  auto* wait = new LockWait{Napi::Promise::Deferred::New(env)};
  Napi::Promise promise = wait->deferred.Promise();
  LockWaitDone done = LockWaitDone::New(env, "cni-chainer:flockWait", 0, 1);
  done.Unref(env);
  std::thread([done, fd, wait]() mutable {
    int rc;
    do {
      rc = flock(fd, LOCK_SH);
    } while (rc != 0 && errno == EINTR);
    wait->err = rc == 0 ? 0 : errno;
    done.BlockingCall(wait);
    done.Release();
  }).detach();
  return promise;
}

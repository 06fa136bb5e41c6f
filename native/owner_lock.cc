#include "owner_lock.h"

#include <sys/file.h>

#include <cerrno>

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

// One blocking flock on a pool thread. It cannot be cancelled once it runs (neither can the syscall):
// the caller keeps it for a standby instance only, which does no pool work of its own, and the process
// ends with _exit (native/exit_now.h), which does not wait for pool threads.
class LockWait : public Napi::AsyncWorker {
 public:
  LockWait(Napi::Env env, int fd)
      : Napi::AsyncWorker(env, "cni-chainer:flockWait"), deferred_(Napi::Promise::Deferred::New(env)), fd_(fd) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Execute() override {
    int rc;
    do {
      rc = flock(fd_, LOCK_SH);
    } while (rc != 0 && errno == EINTR);
    err_ = rc == 0 ? 0 : errno;
  }

  void OnOK() override {
    if (err_ == 0) deferred_.Resolve(Env().Undefined());
    else deferred_.Reject(ErrnoError(Env(), err_, "flock", "", "").Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  int fd_;
  int err_ = 0;
};

}  // namespace

Napi::Value FlockWait(const Napi::CallbackInfo& info) {
  auto* worker = new LockWait(info.Env(), IntArg(info, 0, "fd"));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

#include "inotify_watcher.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "errors.h"

// State that libuv owns until its close callback: it outlives Close() and may outlive the JS object.
struct PollState {
  uv_poll_t handle;
  // Active only while events read from the kernel wait in `backlog`: an active idle handle makes the
  // loop poll without blocking, so the rest is delivered on the next iterations (libuv runs idle
  // handles before it polls for I/O).
  uv_idle_t backlogIdle;
  int openHandles = 0;
  int fd = -1;
  InotifyWatcher* owner = nullptr;  // null once the watcher is closed: no more delivery
  napi_env env = nullptr;
  napi_async_cleanup_hook_handle cleanup = nullptr;
  // Raw inotify records read ahead of delivery; `delivered` bytes of it are handed to JavaScript.
  std::vector<char> backlog;
  size_t delivered = 0;
};

namespace {

// Every wakeup empties the kernel's queue into `backlog`, and JavaScript gets at most 16 KiB of it
// (a few hundred events) a loop iteration: the patches started by one batch make progress before the
// next batch is handled, and the kernel's queue never waits for them. That queue holds
// fs.inotify.max_queued_events (16,384 by default) and drops everything after it (IN_Q_OVERFLOW,
// inotify(7)): a storm of 4,000 files brings ~50,000 events in ~100 ms, more than the agent handles
// in that time, and an overflow costs a rescan of the directory (docs/performance.md).
// The backlog is bounded as well: past kBacklogCap, events wait in the kernel again, where an
// overflow is reported as before.
constexpr size_t kDeliverBytes = 16 * 1024;
constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kBacklogCap = 4 * 1024 * 1024;
// inotify(7): a read needs room for at least one event with the longest name,
// sizeof(struct inotify_event) + NAME_MAX + 1 bytes, or it fails with EINVAL; a read that leaves
// more room than that unused has emptied the queue.
constexpr size_t kLongestEvent = sizeof(struct inotify_event) + NAME_MAX + 1;

struct DecodedEvent {
  int wd;
  uint32_t mask;
  uint32_t cookie;
  std::string name;
};

void OnHandleClosed(uv_handle_t* handle) {
  auto* state = static_cast<PollState*>(handle->data);
  if (--state->openHandles > 0) return;
  if (state->fd >= 0) close(state->fd);
  // Tells Node (worker termination, process exit) that this watcher is fully torn down.
  if (state->cleanup != nullptr) napi_remove_async_cleanup_hook(state->cleanup);
  delete state;
}

void CloseHandles(PollState* state) {
  uv_poll_stop(&state->handle);
  uv_idle_stop(&state->backlogIdle);
  uv_close(reinterpret_cast<uv_handle_t*>(&state->handle), OnHandleClosed);
  uv_close(reinterpret_cast<uv_handle_t*>(&state->backlogIdle), OnHandleClosed);
}

void OnWakeup(PollState* state, int status, bool deliver) {
  if (state->owner == nullptr) return;
  // This is a libuv callback: no C++ exception may unwind into libuv. node-addon-api throws when a
  // JavaScript value cannot be made (out of memory, an environment shutting down); such an error is
  // reported as Node reports any uncaught one, and the watcher stays usable for the next wakeup.
  Napi::HandleScope scope(state->env);
  try {
    state->owner->Drain(status, deliver);
  } catch (const Napi::Error& error) {
    napi_value value = error.Value();
    if (value != nullptr) napi_fatal_exception(state->env, value);
  } catch (...) {
    // std::bad_alloc from the backlog or the batch: undelivered events stay queued for the next wakeup.
  }
}

// While a backlog waits, the idle handle delivers (it runs first in an iteration) and the poll only
// reads: one batch an iteration, as without a backlog.
void OnPoll(uv_poll_t* handle, int status, int /*events*/) {
  auto* state = static_cast<PollState*>(handle->data);
  OnWakeup(state, status, uv_is_active(reinterpret_cast<uv_handle_t*>(&state->backlogIdle)) == 0);
}

void OnBacklog(uv_idle_t* handle) { OnWakeup(static_cast<PollState*>(handle->data), 0, true); }

void OnEnvCleanup(napi_async_cleanup_hook_handle /*handle*/, void* arg) {
  auto* state = static_cast<PollState*>(arg);
  // Still open: close it now. Already closing: OnHandleClosed will remove this hook.
  if (state->owner != nullptr) state->owner->Close();
}

std::string StringArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (info.Length() <= i || !info[i].IsString()) {
    throw Napi::TypeError::New(info.Env(), std::string(what) + " must be a string");
  }
  return info[i].As<Napi::String>();
}

uint32_t MaskArg(const Napi::CallbackInfo& info, size_t i) {
  if (info.Length() <= i || !info[i].IsNumber()) {
    throw Napi::TypeError::New(info.Env(), "mask must be a number");
  }
  return info[i].As<Napi::Number>().Uint32Value();
}

}  // namespace

Napi::Function InotifyWatcher::Define(Napi::Env env) {
  return DefineClass(env, "InotifyWatcher",
                     {
                         InstanceMethod<&InotifyWatcher::AddWatch>("addWatch"),
                         InstanceMethod<&InotifyWatcher::RemoveWatch>("removeWatch"),
                         InstanceMethod<&InotifyWatcher::CloseMethod>("close"),
                         InstanceMethod<&InotifyWatcher::RefMethod>("ref"),
                         InstanceMethod<&InotifyWatcher::UnrefMethod>("unref"),
                         InstanceAccessor<&InotifyWatcher::ClosedGetter>("closed"),
                     });
}

InotifyWatcher::InotifyWatcher(const Napi::CallbackInfo& info)
    : Napi::ObjectWrap<InotifyWatcher>(info), context_(info.Env(), "cni-chainer:inotify") {
  Napi::Env env = info.Env();
  const std::string path = StringArg(info, 0, "path");
  const uint32_t mask = MaskArg(info, 1);
  if (info.Length() < 3 || !info[2].IsFunction()) {
    throw Napi::TypeError::New(env, "onEvents must be a function");
  }

  const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) throw ErrnoError(env, errno, "inotify_init1", "");

  const int wd = inotify_add_watch(fd, path.c_str(), mask);
  if (wd < 0) {
    const int err = errno;
    close(fd);
    throw ErrnoError(env, err, "inotify_add_watch", path);
  }

  uv_loop_t* loop = nullptr;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok) {
    close(fd);
    throw Napi::Error::New(env, "napi_get_uv_event_loop failed");
  }

  auto* state = new PollState();
  state->fd = fd;
  state->env = env;
  state->handle.data = state;
  state->backlogIdle.data = state;
  int rc = uv_poll_init(loop, &state->handle, fd);
  if (rc != 0) {
    close(fd);
    delete state;
    throw ErrnoError(env, -rc, "uv_poll_init", path);
  }
  uv_idle_init(loop, &state->backlogIdle);  // cannot fail (libuv: it only links the handle)
  state->openHandles = 2;  // the poll and the idle handle: the state goes once both are closed
  rc = uv_poll_start(&state->handle, UV_READABLE, OnPoll);
  if (rc != 0) {
    CloseHandles(state);
    throw ErrnoError(env, -rc, "uv_poll_start", path);
  }
  if (napi_add_async_cleanup_hook(env, OnEnvCleanup, state, &state->cleanup) != napi_ok) {
    state->cleanup = nullptr;
  }

  state->owner = this;
  state_ = state;
  onEvents_ = Napi::Persistent(info[2].As<Napi::Function>());
  // While open, the watcher must not be garbage-collected under a live poll handle.
  Ref();
  info.This().As<Napi::Object>().Set("wd", Napi::Number::New(env, wd));
}

InotifyWatcher::~InotifyWatcher() {
  // Normally Close() ran long before; this only covers a finalizer that runs first at teardown.
  if (state_ != nullptr) {
    state_->owner = nullptr;
    CloseHandles(state_);
    state_ = nullptr;
  }
}

void InotifyWatcher::Close() {
  if (state_ == nullptr) return;
  PollState* state = state_;
  state_ = nullptr;
  state->owner = nullptr;
  CloseHandles(state);
  onEvents_.Reset();
  Unref();
}

void InotifyWatcher::Drain(int status, bool deliver) {
  Napi::Env env = Env();
  Napi::HandleScope scope(env);
  PollState* state = state_;
  std::vector<char>& backlog = state->backlog;
  int readError = status < 0 ? -status : 0;

  // Empty the kernel's queue, up to the cap.
  alignas(struct inotify_event) char chunk[kReadChunk];
  while (readError == 0 && backlog.size() - state->delivered < kBacklogCap) {
    const ssize_t n = read(state->fd, chunk, sizeof chunk);
    if (n > 0) backlog.insert(backlog.end(), chunk, chunk + n);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) readError = errno;
      break;
    }
    if (static_cast<size_t>(n) <= kReadChunk - kLongestEvent) break;
  }
  if (!deliver && readError == 0) return;

  // Decode the next events, at most kDeliverBytes of them (and always at least one).
  std::vector<DecodedEvent> batch;
  size_t at = state->delivered;
  while (at < backlog.size() && (at == state->delivered || at - state->delivered < kDeliverBytes)) {
    const auto* ev = reinterpret_cast<const struct inotify_event*>(backlog.data() + at);
    // Names are NUL-padded to an alignment boundary; strnlen trims the padding.
    batch.push_back({ev->wd, ev->mask, ev->cookie,
                     ev->len > 0 ? std::string(ev->name, strnlen(ev->name, ev->len)) : std::string()});
    at += sizeof(struct inotify_event) + ev->len;
  }
  state->delivered = at;
  if (at == backlog.size()) {
    // All delivered: after a storm the buffer's memory goes back.
    backlog.clear();
    if (backlog.capacity() > kReadChunk) backlog.shrink_to_fit();
    state->delivered = 0;
    uv_idle_stop(&state->backlogIdle);
  } else {
    if (at >= kBacklogCap / 4) {
      backlog.erase(backlog.begin(), backlog.begin() + static_cast<std::ptrdiff_t>(at));
      state->delivered = 0;
    }
    uv_idle_start(&state->backlogIdle, OnBacklog);
  }
  if (batch.empty() && readError == 0) return;

  // Columns rather than one object per event: the names, and wd, mask and cookie three by three in an
  // Int32Array (wd is -1 for IN_Q_OVERFLOW, inotify(7); mask and cookie are read back unsigned). A
  // storm brings ~13 events per file, and one object per event made through N-API costs more than the
  // JavaScript that reads the columns.
  Napi::Array names = Napi::Array::New(env, batch.size());
  Napi::Int32Array fields = Napi::Int32Array::New(env, batch.size() * 3);
  int32_t* field = fields.Data();
  for (size_t i = 0; i < batch.size(); i++) {
    names.Set(static_cast<uint32_t>(i), Napi::String::New(env, batch[i].name));
    field[3 * i] = batch[i].wd;
    field[3 * i + 1] = static_cast<int32_t>(batch[i].mask);
    field[3 * i + 2] = static_cast<int32_t>(batch[i].cookie);
  }
  Napi::Value error = readError != 0 ? ErrnoError(env, readError, "read", "").Value() : env.Undefined();
  CallJs(names, fields, error);
}

void InotifyWatcher::CallJs(Napi::Value names, Napi::Value fields, Napi::Value error) {
  // This runs from a libuv callback, so nothing may unwind into libuv: the raw call reports failure by
  // status instead of a C++ exception.
  napi_env env = Env();
  napi_value argv[3] = {names, fields, error};
  napi_value result;
  if (napi_make_callback(env, context_, Value(), onEvents_.Value(), 3, argv, &result) == napi_ok) return;
  bool pending = false;
  if (napi_is_exception_pending(env, &pending) == napi_ok && pending) {
    // The callback threw: report it the way Node reports any other one ('uncaughtException').
    napi_value exception;
    if (napi_get_and_clear_last_exception(env, &exception) == napi_ok) napi_fatal_exception(env, exception);
  }
  // No exception: JavaScript can no longer run (process.exit() or a terminated worker). Nothing to do.
}

Napi::Value InotifyWatcher::AddWatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string path = StringArg(info, 0, "path");
  const uint32_t mask = MaskArg(info, 1);
  if (state_ == nullptr) throw Napi::Error::New(env, "watcher is closed");
  const int wd = inotify_add_watch(state_->fd, path.c_str(), mask);
  if (wd < 0) throw ErrnoError(env, errno, "inotify_add_watch", path);
  return Napi::Number::New(env, wd);
}

Napi::Value InotifyWatcher::RemoveWatch(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "wd must be a number");
  if (state_ == nullptr) throw Napi::Error::New(env, "watcher is closed");
  // inotify_rm_watch(2): EINVAL when the wd is not (or no longer) a watch of this instance: the kernel
  // drops a watch by itself when its directory is deleted or unmounted (IN_IGNORED follows
  // IN_DELETE_SELF, inotify(7)), and may then reuse the wd for a later watch. The caller
  // (src/watch/native.ts) forgets a wd at its IN_IGNORED, and treats EINVAL here as already gone.
  if (inotify_rm_watch(state_->fd, info[0].As<Napi::Number>().Int32Value()) != 0) {
    throw ErrnoError(env, errno, "inotify_rm_watch", "");
  }
  return env.Undefined();
}

Napi::Value InotifyWatcher::CloseMethod(const Napi::CallbackInfo& info) {
  Close();
  return info.Env().Undefined();
}

Napi::Value InotifyWatcher::RefMethod(const Napi::CallbackInfo& info) {
  if (state_ != nullptr) {
    uv_ref(reinterpret_cast<uv_handle_t*>(&state_->handle));
    uv_ref(reinterpret_cast<uv_handle_t*>(&state_->backlogIdle));
  }
  return info.Env().Undefined();
}

Napi::Value InotifyWatcher::UnrefMethod(const Napi::CallbackInfo& info) {
  if (state_ != nullptr) {
    uv_unref(reinterpret_cast<uv_handle_t*>(&state_->handle));
    uv_unref(reinterpret_cast<uv_handle_t*>(&state_->backlogIdle));
  }
  return info.Env().Undefined();
}

Napi::Value InotifyWatcher::ClosedGetter(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), state_ == nullptr);
}

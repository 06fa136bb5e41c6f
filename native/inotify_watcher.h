#pragma once

#include <napi.h>
#include <uv.h>

struct PollState;

// One inotify instance. The constructor returns only after inotify_add_watch() succeeded, so the
// watch is live before any JavaScript that follows it runs: a scan started after `new` cannot miss a
// file. Events are decoded here and handed to JavaScript in batches; all policy lives in TypeScript.
class InotifyWatcher : public Napi::ObjectWrap<InotifyWatcher> {
 public:
  static Napi::Function Define(Napi::Env env);

  explicit InotifyWatcher(const Napi::CallbackInfo& info);
  ~InotifyWatcher() override;

  // Reads everything the kernel has queued into the backlog (bounded) and, if `deliver`, calls
  // onEvents(names, fields, error) once with the backlog's next batch: fields holds wd, mask and cookie
  // of event i at 3i, 3i+1, 3i+2 (an Int32Array).
  void Drain(int status, bool deliver);
  // Idempotent: stops delivery now; the fd is closed and memory freed once libuv has let go.
  void Close();

 private:
  Napi::Value AddWatch(const Napi::CallbackInfo& info);
  Napi::Value RemoveWatch(const Napi::CallbackInfo& info);
  Napi::Value CloseMethod(const Napi::CallbackInfo& info);
  Napi::Value RefMethod(const Napi::CallbackInfo& info);
  Napi::Value UnrefMethod(const Napi::CallbackInfo& info);
  Napi::Value ClosedGetter(const Napi::CallbackInfo& info);

  void CallJs(Napi::Value names, Napi::Value fields, Napi::Value error);

  PollState* state_ = nullptr;
  Napi::FunctionReference onEvents_;
  Napi::AsyncContext context_;
};

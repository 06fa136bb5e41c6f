#include "errors.h"

#include <uv.h>

#include <cerrno>
#include <cstring>

namespace {

// The two inotify limits are per-user sysctls; an operator who sees ENOSPC or EMFILE needs to know
// which knob to turn, so the message names it.
const char* LimitHint(int err, const char* syscall) {
  if (err == ENOSPC && std::strcmp(syscall, "inotify_add_watch") == 0) {
    return " (inotify watch limit reached: raise fs.inotify.max_user_watches)";
  }
  if (err == EMFILE && std::strcmp(syscall, "inotify_init1") == 0) {
    return " (inotify instance limit reached: raise fs.inotify.max_user_instances)";
  }
  return "";
}

}  // namespace

Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall, const std::string& path,
                       const std::string& dest) {
  // libuv error numbers are negated errno values on Unix, as Node reports them in `err.errno`.
  const char* code = uv_err_name(-err);
  std::string message = std::string(code) + ": " + std::strerror(err) + ", " + syscall;
  if (!path.empty()) message += " '" + path + "'";
  if (!dest.empty()) message += " -> '" + dest + "'";
  message += LimitHint(err, syscall);

  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  error.Set("errno", Napi::Number::New(env, -err));
  error.Set("syscall", Napi::String::New(env, syscall));
  if (!path.empty()) error.Set("path", Napi::String::New(env, path));
  if (!dest.empty()) error.Set("dest", Napi::String::New(env, dest));
  return error;
}

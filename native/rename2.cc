#include "rename2.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "errors.h"

Napi::Value Rename2(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsString() || !info[1].IsString() || !info[2].IsNumber()) {
    throw Napi::TypeError::New(env, "rename2(from: string, to: string, flags: number)");
  }
  const std::string from = info[0].As<Napi::String>();
  const std::string to = info[1].As<Napi::String>();
  const unsigned flags = info[2].As<Napi::Number>().Uint32Value();
  // The raw syscall, because older glibc releases have no renameat2() wrapper.
  if (syscall(SYS_renameat2, AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), flags) != 0) {
    throw ErrnoError(env, errno, "renameat2", from, to);
  }
  return env.Undefined();
}

#include "random.h"

#include <sys/random.h>

#include <cerrno>

#include "args.h"
#include "errors.h"

Napi::Value GetRandom(const Napi::CallbackInfo& info) {
  const int n = IntArg(info, 0, "n");
  if (n < 0 || n > 256) throw Napi::RangeError::New(info.Env(), "n must be from 0 to 256");
  Napi::Buffer<char> buffer = Napi::Buffer<char>::New(info.Env(), static_cast<size_t>(n));
  // Up to 256 bytes never return short once the pool is initialised (random(7)); EINTR is retried.
  for (size_t got = 0; got < static_cast<size_t>(n);) {
    const ssize_t r = getrandom(buffer.Data() + got, static_cast<size_t>(n) - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw ErrnoError(info.Env(), errno, "getrandom", "");
    }
    got += static_cast<size_t>(r);
  }
  return buffer;
}

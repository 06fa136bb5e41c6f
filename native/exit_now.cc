#include "exit_now.h"

#include <unistd.h>

#include "args.h"

Napi::Value ExitNow(const Napi::CallbackInfo& info) {
  const int code = IntArg(info, 0, "code");
  _exit(code & 0xff);
}

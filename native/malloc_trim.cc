#include "malloc_trim.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

Napi::Value MallocTrim(const Napi::CallbackInfo& info) {
#if defined(__GLIBC__)
  return Napi::Boolean::New(info.Env(), malloc_trim(0) == 1);
#else
  return Napi::Boolean::New(info.Env(), false);
#endif
}

#pragma once

#include <napi.h>

// getrandom(n) -> Buffer of n bytes from the kernel's CSPRNG (getrandom(2)), for the instance id and
// the temp-name token, without loading Node's crypto module (see digest.h).
Napi::Value GetRandom(const Napi::CallbackInfo& info);

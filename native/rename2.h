#pragma once

#include <napi.h>

// rename2(from, to, flags): renameat2(2), which Node's fs does not expose. RENAME_EXCHANGE lets the
// writer swap a patched file in and then check what it swapped out, so a concurrent newer write is
// never silently replaced; RENAME_NOREPLACE creates a file only if nobody else did meanwhile.
Napi::Value Rename2(const Napi::CallbackInfo& info);

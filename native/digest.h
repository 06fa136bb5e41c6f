#pragma once

#include <napi.h>

// sha256(data: Buffer | string) -> lowercase hex. The agent identifies content by its SHA-256 (its own
// writes, the content a temp file expects to replace). This calls the OpenSSL that Node itself links
// and exports, instead of loading Node's crypto module: that module's ~25 internal modules cost ~10 ms
// of start and ~3 MiB of RSS, for one digest function (measured with --cpu-prof and /proc/self/smaps).
Napi::Value Sha256(const Napi::CallbackInfo& info);

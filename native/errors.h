// Node-style errors (code, errno, syscall, path) for failed syscalls, so that TypeScript can branch on
// `err.code` exactly as it does for errors thrown by `fs`.
#pragma once

#include <napi.h>

#include <string>

Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall, const std::string& path,
                       const std::string& dest = std::string());

// Argument checks shared by the syscall wrappers: a wrong type is a TypeError naming the argument.
#pragma once

#include <napi.h>

#include <string>

inline int IntArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (info.Length() <= i || !info[i].IsNumber()) {
    throw Napi::TypeError::New(info.Env(), std::string(what) + " must be a number");
  }
  return info[i].As<Napi::Number>().Int32Value();
}

inline std::string StringArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (info.Length() <= i || !info[i].IsString()) {
    throw Napi::TypeError::New(info.Env(), std::string(what) + " must be a string");
  }
  return info[i].As<Napi::String>();
}

// Argument checks shared by the syscall wrappers: a wrong type is a TypeError naming the argument.
// The *Value forms check any value (an element of an array argument); the *Arg forms, argument i.
#pragma once

#include <napi.h>

#include <string>
#include <string_view>

inline int IntValue(Napi::Env env, Napi::Value value, const char* what) {
  if (!value.IsNumber()) throw Napi::TypeError::New(env, std::string(what) + " must be a number");
  return value.As<Napi::Number>().Int32Value();
}

inline std::string StringValue(Napi::Env env, Napi::Value value, const char* what) {
  if (!value.IsString()) throw Napi::TypeError::New(env, std::string(what) + " must be a string");
  return value.As<Napi::String>();
}

/** The bytes of a Buffer, not copied: valid while the Buffer is referenced and unchanged. */
inline std::string_view BufferView(Napi::Env env, Napi::Value value, const char* what) {
  if (!value.IsBuffer()) throw Napi::TypeError::New(env, std::string(what) + " must be a Buffer");
  Napi::Buffer<char> bytes = value.As<Napi::Buffer<char>>();
  return std::string_view(bytes.Data(), bytes.Length());
}

inline Napi::Value Arg(const Napi::CallbackInfo& info, size_t i) {
  return info.Length() > i ? info[i] : info.Env().Undefined();
}

inline int IntArg(const Napi::CallbackInfo& info, size_t i, const char* what) { return IntValue(info.Env(), Arg(info, i), what); }

inline std::string StringArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  return StringValue(info.Env(), Arg(info, i), what);
}

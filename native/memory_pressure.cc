#include "memory_pressure.h"

#include <v8.h>

Napi::Value CollectGarbageForMemory(const Napi::CallbackInfo& info) {
  v8::Isolate::GetCurrent()->MemoryPressureNotification(v8::MemoryPressureLevel::kCritical);
  return info.Env().Undefined();
}

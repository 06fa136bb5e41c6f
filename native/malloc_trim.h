#pragma once

#include <napi.h>

// mallocTrim() -> boolean: glibc's malloc_trim(0), which gives the free memory of every malloc arena
// back to the kernel (madvise(MADV_DONTNEED) on whole free pages, and the top of the heap). glibc
// keeps freed memory by itself: a free of a large block that was mmapped raises the thresholds for
// later ones (mallopt(3), M_MMAP_THRESHOLD: "dynamic adjustment"), so reading a bundle of a few
// hundred KiB at start lets the heap keep that much free memory for the life of the process. Returns
// whether any memory was released. On a libc without malloc_trim (musl), false and nothing done.
Napi::Value MallocTrim(const Napi::CallbackInfo& info);

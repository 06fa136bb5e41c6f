// readEntryAt (entry_io.h): one lstat, open and bounded read of a directory entry.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "args.h"
#include "entry_fd.h"
#include "entry_io.h"
#include "errors.h"
#include "fs_at.h"

using entry_io::Fd;
using entry_io::IsEntryName;
using entry_io::ReadUpTo;

namespace {

// What a read found, in the `out` column the caller passes (entry_io.h): its kind first.
enum ReadKind { kMissing = 0, kSymlink = 1, kNotRegular = 2, kTooLarge = 3, kXattrsTooLarge = 4, kFile = 5 };

// The result goes in a Float64Array the caller owns and reuses, not in an object: N-API sets an
// object's properties one by one through V8's generic path (a lookup of each key's internalized
// string, a map transition), which was most of what a read cost beyond its syscalls (perf profile of
// a storm: 4.6 of 22 us a read on the main thread).
struct Out {
  double* slots;

  void Kind(ReadKind kind) const { slots[0] = kind; }

  void Stat(ReadKind kind, const struct stat& st) const {
    slots[0] = kind;
    slots[1] = st.st_mode;
    slots[2] = st.st_uid;
    slots[3] = st.st_gid;
    slots[4] = static_cast<double>(st.st_size);
    slots[5] = static_cast<double>(st.st_mtim.tv_sec) * 1e3 + st.st_mtim.tv_nsec / 1e6;
  }
};

constexpr size_t kOutSlots = 7;

// Reports what was found instead of a file: the Buffer is for a file only.
Napi::Value NoFile(Napi::Env env, const Out& out, ReadKind kind) {
  out.Kind(kind);
  return env.Undefined();
}

Napi::Value NoFile(Napi::Env env, const Out& out, ReadKind kind, const struct stat& st) {
  out.Stat(kind, st);
  return env.Undefined();
}

}  // namespace

Napi::Value ReadEntryAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dirfd = IntArg(info, 0, "dirfd");
  const std::string name = StringArg(info, 1, "name");
  if (info.Length() < 3 || !info[2].IsNumber()) throw Napi::TypeError::New(env, "maxBytes must be a number");
  const double maxBytes = info[2].As<Napi::Number>().DoubleValue();
  const bool withXattrs = info.Length() > 3 && info[3].ToBoolean().Value();
  if (info.Length() < 6 || !info[4].IsTypedArray() || info[4].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[4].As<Napi::Float64Array>().ElementLength() < kOutSlots) {
    throw Napi::TypeError::New(env, "out must be a Float64Array of 7 elements");
  }
  if (!info[5].IsArray()) throw Napi::TypeError::New(env, "xattrsOut must be an array");
  const Out out{info[4].As<Napi::Float64Array>().Data()};
  Napi::Array xattrsOut = info[5].As<Napi::Array>();
  if (!IsEntryName(name)) throw ErrnoError(env, EINVAL, "open", name);

  struct stat st;
  if (fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    // ENOTDIR: the directory fd is no directory any more than the name is an entry of it.
    if (errno == ENOENT || errno == ENOTDIR) return NoFile(env, out, kMissing);
    throw ErrnoError(env, errno, "lstat", name);
  }
  if (S_ISLNK(st.st_mode)) return NoFile(env, out, kSymlink);
  if (!S_ISREG(st.st_mode)) return NoFile(env, out, kNotRegular, st);
  // Replaced by something else since the lstat: O_NOFOLLOW refuses a link (ELOOP), O_NONBLOCK keeps a
  // FIFO from blocking, and the fstat below tells what was opened.
  const int raw = openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (raw < 0) {
    if (errno == ENOENT) return NoFile(env, out, kMissing);
    if (errno == ELOOP) return NoFile(env, out, kSymlink);
    if (errno == ENXIO || errno == ENODEV || errno == EISDIR) return NoFile(env, out, kNotRegular, st);
    throw ErrnoError(env, errno, "open", name);
  }
  Fd fd(raw);
  if (fstat(fd.get(), &st) != 0) throw ErrnoError(env, errno, "fstat", name);
  if (!S_ISREG(st.st_mode)) return NoFile(env, out, kNotRegular, st);
  const double size = static_cast<double>(st.st_size);
  if (size > maxBytes) return NoFile(env, out, kTooLarge, st);
  // The file may grow between fstat and read: read one byte past its size to notice.
  const size_t capacity = static_cast<size_t>(std::min(size, maxBytes)) + 1;
  Napi::Buffer<char> buffer = Napi::Buffer<char>::New(env, capacity);
  const ssize_t got = ReadUpTo(fd.get(), buffer.Data(), capacity);
  if (got < 0) throw ErrnoError(env, errno, "read", name);
  const size_t length = static_cast<size_t>(got);
  if (static_cast<double>(length) > maxBytes) {
    NoFile(env, out, kTooLarge, st);
    out.slots[4] = static_cast<double>(length);  // what it has grown to
    return env.Undefined();
  }
  if (withXattrs) {
    // Not copied faithfully, so never rewritten: reported like an oversized file.
    if (!ReadXattrs(env, fd.get(), xattrsOut)) return NoFile(env, out, kXattrsTooLarge, st);
  }
  out.Stat(kFile, st);
  out.slots[6] = static_cast<double>(length);
  return buffer;
}

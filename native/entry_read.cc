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

void SetStat(Napi::Env env, Napi::Object out, const struct stat& st) {
  out.Set("mode", Napi::Number::New(env, st.st_mode));
  out.Set("uid", Napi::Number::New(env, st.st_uid));
  out.Set("gid", Napi::Number::New(env, st.st_gid));
  out.Set("size", Napi::Number::New(env, static_cast<double>(st.st_size)));
  out.Set("mtimeMs", Napi::Number::New(env, static_cast<double>(st.st_mtim.tv_sec) * 1e3 + st.st_mtim.tv_nsec / 1e6));
}

Napi::Object Kind(Napi::Env env, const char* kind) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("kind", Napi::String::New(env, kind));
  return out;
}

Napi::Object KindWithStat(Napi::Env env, const char* kind, const struct stat& st) {
  Napi::Object out = Kind(env, kind);
  SetStat(env, out, st);
  return out;
}

}  // namespace

Napi::Value ReadEntryAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dirfd = IntArg(info, 0, "dirfd");
  const std::string name = StringArg(info, 1, "name");
  if (info.Length() < 3 || !info[2].IsNumber()) throw Napi::TypeError::New(env, "maxBytes must be a number");
  const double maxBytes = info[2].As<Napi::Number>().DoubleValue();
  const bool withXattrs = info.Length() > 3 && info[3].ToBoolean().Value();
  if (!IsEntryName(name)) throw ErrnoError(env, EINVAL, "open", name);

  struct stat st;
  if (fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    // ENOTDIR: the directory fd is no directory any more than the name is an entry of it.
    if (errno == ENOENT || errno == ENOTDIR) return Kind(env, "missing");
    throw ErrnoError(env, errno, "lstat", name);
  }
  if (S_ISLNK(st.st_mode)) return Kind(env, "symlink");
  if (!S_ISREG(st.st_mode)) return KindWithStat(env, "not-regular", st);
  // Replaced by something else since the lstat: O_NOFOLLOW refuses a link (ELOOP), O_NONBLOCK keeps a
  // FIFO from blocking, and the fstat below tells what was opened.
  const int raw = openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (raw < 0) {
    if (errno == ENOENT) return Kind(env, "missing");
    if (errno == ELOOP) return Kind(env, "symlink");
    if (errno == ENXIO || errno == ENODEV || errno == EISDIR) return KindWithStat(env, "not-regular", st);
    throw ErrnoError(env, errno, "open", name);
  }
  Fd fd(raw);
  if (fstat(fd.get(), &st) != 0) throw ErrnoError(env, errno, "fstat", name);
  if (!S_ISREG(st.st_mode)) return KindWithStat(env, "not-regular", st);
  const double size = static_cast<double>(st.st_size);
  if (size > maxBytes) return KindWithStat(env, "too-large", st);
  // The file may grow between fstat and read: read one byte past its size to notice.
  const size_t capacity = static_cast<size_t>(std::min(size, maxBytes)) + 1;
  Napi::Buffer<char> buffer = Napi::Buffer<char>::New(env, capacity);
  const ssize_t got = ReadUpTo(fd.get(), buffer.Data(), capacity);
  if (got < 0) throw ErrnoError(env, errno, "read", name);
  const size_t length = static_cast<size_t>(got);
  Napi::Object out = KindWithStat(env, static_cast<double>(length) > maxBytes ? "too-large" : "file", st);
  if (static_cast<double>(length) > maxBytes) {
    out.Set("size", Napi::Number::New(env, static_cast<double>(length)));
    return out;
  }
  if (withXattrs) {
    bool over = false;
    Napi::Array xattrs = ReadXattrs(env, fd.get(), &over);
    if (over) {
      // Not copied faithfully, so never rewritten: reported like an oversized file.
      out.Set("kind", Napi::String::New(env, "too-large"));
      out.Set("xattrsOver", Napi::Boolean::New(env, true));
      return out;
    }
    out.Set("xattrs", xattrs);
  }
  out.Set("bytes", buffer);
  out.Set("length", Napi::Number::New(env, static_cast<double>(length)));
  return out;
}

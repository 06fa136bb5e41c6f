#include "fs_at.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "errors.h"


Napi::Value Openat2(const Napi::CallbackInfo& info) {
  const int dirfd = IntArg(info, 0, "dirfd");
  const std::string path = StringArg(info, 1, "path");
  open_how how{};
  how.flags = static_cast<uint64_t>(static_cast<uint32_t>(IntArg(info, 2, "flags"))) | O_CLOEXEC;
  how.mode = static_cast<uint64_t>(IntArg(info, 3, "mode"));
  how.resolve = static_cast<uint64_t>(IntArg(info, 4, "resolve"));
  // The raw syscall: glibc has no openat2() wrapper. EAGAIN with RESOLVE_IN_ROOT means a rename ran
  // somewhere on the system during the lookup; the kernel asks the caller to retry.
  long fd;
  int attempts = 0;
  do {
    fd = syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how);
  } while (fd < 0 && (errno == EAGAIN || errno == EINTR) && ++attempts < 16);
  if (fd < 0) throw ErrnoError(info.Env(), errno, "openat2", path);
  return Napi::Number::New(info.Env(), static_cast<double>(fd));
}

Napi::Value Renameat2(const Napi::CallbackInfo& info) {
  const int olddirfd = IntArg(info, 0, "olddirfd");
  const std::string from = StringArg(info, 1, "oldpath");
  const int newdirfd = IntArg(info, 2, "newdirfd");
  const std::string to = StringArg(info, 3, "newpath");
  const unsigned flags = static_cast<unsigned>(IntArg(info, 4, "flags"));
  if (syscall(SYS_renameat2, olddirfd, from.c_str(), newdirfd, to.c_str(), flags) != 0) {
    throw ErrnoError(info.Env(), errno, "renameat2", from, to);
  }
  return info.Env().Undefined();
}

Napi::Value Unlinkat(const Napi::CallbackInfo& info) {
  const int dirfd = IntArg(info, 0, "dirfd");
  const std::string path = StringArg(info, 1, "path");
  if (unlinkat(dirfd, path.c_str(), IntArg(info, 2, "flags")) != 0) throw ErrnoError(info.Env(), errno, "unlinkat", path);
  return info.Env().Undefined();
}

Napi::Value Symlinkat(const Napi::CallbackInfo& info) {
  const std::string target = StringArg(info, 0, "target");
  const int dirfd = IntArg(info, 1, "dirfd");
  const std::string path = StringArg(info, 2, "path");
  if (symlinkat(target.c_str(), dirfd, path.c_str()) != 0) throw ErrnoError(info.Env(), errno, "symlinkat", path);
  return info.Env().Undefined();
}

Napi::Value Linkat(const Napi::CallbackInfo& info) {
  const int olddirfd = IntArg(info, 0, "olddirfd");
  const std::string oldpath = StringArg(info, 1, "oldpath");
  const int newdirfd = IntArg(info, 2, "newdirfd");
  const std::string newpath = StringArg(info, 3, "newpath");
  // No AT_SYMLINK_FOLLOW: a link to the entry itself, never to what a symlink there points at.
  if (linkat(olddirfd, oldpath.c_str(), newdirfd, newpath.c_str(), 0) != 0) throw ErrnoError(info.Env(), errno, "linkat", newpath);
  return info.Env().Undefined();
}

Napi::Value Readlinkat(const Napi::CallbackInfo& info) {
  const int dirfd = IntArg(info, 0, "dirfd");
  const std::string path = StringArg(info, 1, "path");
  std::vector<char> buf(4096);  // PATH_MAX: a link's text is never longer
  const ssize_t n = readlinkat(dirfd, path.c_str(), buf.data(), buf.size());
  if (n < 0) throw ErrnoError(info.Env(), errno, "readlinkat", path);
  return Napi::String::New(info.Env(), buf.data(), static_cast<size_t>(n));
}

Napi::Value Xattrs(const Napi::CallbackInfo& info) {
  Napi::Array result = Napi::Array::New(info.Env());
  if (!ReadXattrs(info.Env(), IntArg(info, 0, "fd"), result)) throw ErrnoError(info.Env(), E2BIG, "flistxattr", "");
  return result;
}

bool ReadXattrs(Napi::Env env, int fd, Napi::Array into) {
  // The list can grow between the size query and the read (ERANGE): ask again.
  std::vector<char> names;
  for (;;) {
    const ssize_t size = flistxattr(fd, nullptr, 0);
    if (size < 0) {
      if (errno == ENOTSUP) return true;  // a filesystem without xattrs has none to copy
      throw ErrnoError(env, errno, "flistxattr", "");
    }
    names.resize(static_cast<size_t>(size));
    const ssize_t got = size == 0 ? 0 : flistxattr(fd, names.data(), names.size());
    if (got >= 0) {
      names.resize(static_cast<size_t>(got));
      break;
    }
    if (errno != ERANGE) throw ErrnoError(env, errno, "flistxattr", "");
  }
  // Names and values together are bounded (kMaxXattrBytes): one file with hundreds of 64 KiB values
  // would otherwise be held whole, and copied whole, at every read.
  size_t total = names.size();
  if (total > kMaxXattrBytes) return false;
  // Read whole before any is handed over: past the bound, nothing is.
  std::vector<std::pair<std::string, std::vector<char>>> pairs;
  for (size_t at = 0; at < names.size();) {
    const std::string name(names.data() + at);
    at += name.size() + 1;
    std::vector<char> value;
    bool read = false;
    for (;;) {
      const ssize_t size = fgetxattr(fd, name.c_str(), nullptr, 0);
      if (size < 0) break;  // removed meanwhile (ENODATA) or unreadable: nothing to copy
      value.resize(static_cast<size_t>(size));
      const ssize_t got = size == 0 ? 0 : fgetxattr(fd, name.c_str(), value.data(), value.size());
      if (got >= 0) {
        value.resize(static_cast<size_t>(got));
        read = true;
        break;
      }
      if (errno != ERANGE) break;
    }
    if (!read) continue;
    total += value.size();
    if (total > kMaxXattrBytes) return false;
    pairs.emplace_back(name, std::move(value));
  }
  uint32_t index = into.Length();
  for (const auto& [name, value] : pairs) {
    Napi::Array pair = Napi::Array::New(env, 2);
    pair.Set(0u, Napi::String::New(env, name));
    pair.Set(1u, Napi::Buffer<char>::Copy(env, value.data(), value.size()));
    into.Set(index++, pair);
  }
  return true;
}

Napi::Value Fsetxattr(const Napi::CallbackInfo& info) {
  const int fd = IntArg(info, 0, "fd");
  const std::string name = StringArg(info, 1, "name");
  if (info.Length() < 3 || !info[2].IsBuffer()) throw Napi::TypeError::New(info.Env(), "value must be a Buffer");
  Napi::Buffer<char> value = info[2].As<Napi::Buffer<char>>();
  if (fsetxattr(fd, name.c_str(), value.Data(), value.Length(), 0) != 0) {
    throw ErrnoError(info.Env(), errno, "fsetxattr", name);
  }
  return info.Env().Undefined();
}

Napi::Value FilesystemType(const Napi::CallbackInfo& info) {
  struct statfs st;
  if (fstatfs(IntArg(info, 0, "fd"), &st) != 0) throw ErrnoError(info.Env(), errno, "fstatfs", "");
  return Napi::Number::New(info.Env(), static_cast<double>(st.f_type));
}

#include "entry_io.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "errors.h"
#include "fs_at.h"

namespace {

// A name that cannot leave its directory: no separator, not `.` or `..` (names come from readdir or
// inotify, so this only guards against a caller's mistake).
bool IsEntryName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

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
  if (!S_ISREG(st.st_mode)) {
    Napi::Object out = Kind(env, "not-regular");
    SetStat(env, out, st);
    return out;
  }
  // Replaced by something else since the lstat: O_NOFOLLOW refuses a link (ELOOP), O_NONBLOCK keeps a
  // FIFO from blocking, and the fstat below tells what was opened.
  const int raw = openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (raw < 0) {
    if (errno == ENOENT) return Kind(env, "missing");
    if (errno == ELOOP) return Kind(env, "symlink");
    if (errno == ENXIO || errno == ENODEV || errno == EISDIR) {
      Napi::Object out = Kind(env, "not-regular");
      SetStat(env, out, st);
      return out;
    }
    throw ErrnoError(env, errno, "open", name);
  }
  Fd fd(raw);
  if (fstat(fd.get(), &st) != 0) throw ErrnoError(env, errno, "fstat", name);
  if (!S_ISREG(st.st_mode)) {
    Napi::Object out = Kind(env, "not-regular");
    SetStat(env, out, st);
    return out;
  }
  const double size = static_cast<double>(st.st_size);
  if (size > maxBytes) {
    Napi::Object out = Kind(env, "too-large");
    SetStat(env, out, st);
    return out;
  }
  // The file may grow between fstat and read: read one byte past its size to notice.
  const size_t capacity = static_cast<size_t>(std::min(size, maxBytes)) + 1;
  Napi::Buffer<char> buffer = Napi::Buffer<char>::New(env, capacity);
  size_t length = 0;
  while (length < capacity) {
    const ssize_t n = read(fd.get(), buffer.Data() + length, capacity - length);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw ErrnoError(env, errno, "read", name);
    }
    if (n == 0) break;
    length += static_cast<size_t>(n);
  }
  Napi::Object out = Kind(env, static_cast<double>(length) > maxBytes ? "too-large" : "file");
  SetStat(env, out, st);
  if (static_cast<double>(length) > maxBytes) {
    out.Set("size", Napi::Number::New(env, static_cast<double>(length)));
    return out;
  }
  out.Set("bytes", buffer);
  out.Set("length", Napi::Number::New(env, static_cast<double>(length)));
  if (withXattrs) out.Set("xattrs", ReadXattrs(env, fd.get()));
  return out;
}

namespace {

struct Xattr {
  std::string name;
  std::string value;
  bool optional;
};

enum Landing { kRename = 0, kNoReplace = 1, kExchange = 2 };

class ReplaceWorker : public Napi::AsyncWorker {
 public:
  ReplaceWorker(Napi::Env env, int dirfd, std::string tmp, std::string name, std::string data, int mode, int uid, int gid,
                std::vector<Xattr> xattrs, int landing, std::string expect)
      : Napi::AsyncWorker(env, "cni-chainer:replaceEntryAt"),
        deferred_(Napi::Promise::Deferred::New(env)),
        dirfd_(dirfd),
        tmp_(std::move(tmp)),
        name_(std::move(name)),
        data_(std::move(data)),
        mode_(mode),
        uid_(uid),
        gid_(gid),
        xattrs_(std::move(xattrs)),
        landing_(landing),
        expect_(std::move(expect)) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Execute() override {
    if (!CreateTemp()) return;
    Land();
  }

  void OnOK() override {
    Napi::Env env = Env();
    if (error_ != 0) {
      deferred_.Reject(ErrnoError(env, error_, syscall_, errorPath_).Value());
    } else {
      deferred_.Resolve(Napi::String::New(env, result_));
    }
  }

 private:
  bool Fail(const char* syscall, const std::string& path) {
    error_ = errno;
    syscall_ = syscall;
    errorPath_ = path;
    return false;
  }

  void RemoveTemp() {
    const int saved = errno;
    unlinkat(dirfd_, tmp_.c_str(), 0);
    errno = saved;
  }

  bool CreateTemp() {
    const int raw = openat(dirfd_, tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (raw < 0) return Fail("open", tmp_);
    bool ok = Fill(raw);
    // A close error after a successful fsync loses nothing: the data is on disk.
    close(raw);
    if (!ok) RemoveTemp();
    return ok;
  }

  bool Fill(int fd) {
    for (size_t at = 0; at < data_.size();) {
      const ssize_t n = write(fd, data_.data() + at, data_.size() - at);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Fail("write", tmp_);
      }
      at += static_cast<size_t>(n);
    }
    if (fchmod(fd, static_cast<mode_t>(mode_)) != 0) return Fail("fchmod", tmp_);
    if (uid_ >= 0 && gid_ >= 0 && fchown(fd, static_cast<uid_t>(uid_), static_cast<gid_t>(gid_)) != 0) return Fail("fchown", tmp_);
    // After the mode: a POSIX ACL (system.posix_acl_access) then sets the group bits it implies.
    for (const Xattr& x : xattrs_) {
      if (fsetxattr(fd, x.name.c_str(), x.value.data(), x.value.size(), 0) != 0 && !x.optional) return Fail("fsetxattr", x.name);
    }
    if (fsync(fd) != 0) return Fail("fsync", tmp_);
    return true;
  }

  void Land() {
    if (landing_ == kRename) {
      if (syscall(SYS_renameat2, dirfd_, tmp_.c_str(), dirfd_, name_.c_str(), 0) != 0) {
        Fail("rename", name_);
        RemoveTemp();
        return;
      }
      result_ = "renamed";
      return;
    }
    const unsigned flags = landing_ == kNoReplace ? RENAME_NOREPLACE : RENAME_EXCHANGE;
    if (syscall(SYS_renameat2, dirfd_, tmp_.c_str(), dirfd_, name_.c_str(), flags) != 0) {
      if ((landing_ == kNoReplace && errno == EEXIST) || (landing_ == kExchange && errno == ENOENT)) {
        RemoveTemp();
        result_ = "stale";
        return;
      }
      if (landing_ == kExchange && (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
        result_ = "unsupported";
        return;
      }
      Fail("rename", name_);
      RemoveTemp();
      return;
    }
    if (landing_ == kNoReplace) {
      result_ = "renamed";
      return;
    }
    // What the exchange swapped out is exactly what was at `name` at that instant: if it is not what
    // the caller read, a newer write landed in between, and it must go back (the caller does that).
    if (!SwappedOutIsExpected()) {
      result_ = "swapped";
      return;
    }
    if (unlinkat(dirfd_, tmp_.c_str(), 0) != 0) {
      Fail("unlink", tmp_);
      return;
    }
    result_ = "exchanged";
  }

  bool SwappedOutIsExpected() {
    const int raw = openat(dirfd_, tmp_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (raw < 0) return false;
    Fd fd(raw);
    struct stat st;
    if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) != expect_.size()) return false;
    std::string got(expect_.size() + 1, '\0');
    size_t length = 0;
    while (length < got.size()) {
      const ssize_t n = read(fd.get(), &got[length], got.size() - length);
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      if (n == 0) break;
      length += static_cast<size_t>(n);
    }
    return length == expect_.size() && std::memcmp(got.data(), expect_.data(), length) == 0;
  }

  Napi::Promise::Deferred deferred_;
  const int dirfd_;
  const std::string tmp_;
  const std::string name_;
  const std::string data_;
  const int mode_;
  const int uid_;
  const int gid_;
  const std::vector<Xattr> xattrs_;
  const int landing_;
  const std::string expect_;
  std::string result_;
  int error_ = 0;
  const char* syscall_ = "";
  std::string errorPath_;
};

std::string BufferArg(const Napi::CallbackInfo& info, size_t i, const char* what) {
  if (info.Length() <= i || !info[i].IsBuffer()) throw Napi::TypeError::New(info.Env(), std::string(what) + " must be a Buffer");
  Napi::Buffer<char> b = info[i].As<Napi::Buffer<char>>();
  return std::string(b.Data(), b.Length());
}

}  // namespace

Napi::Value ReplaceEntryAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int dirfd = IntArg(info, 0, "dirfd");
  std::string tmp = StringArg(info, 1, "tmp");
  std::string name = StringArg(info, 2, "name");
  if (!IsEntryName(tmp)) throw ErrnoError(env, EINVAL, "open", tmp);
  if (!IsEntryName(name)) throw ErrnoError(env, EINVAL, "rename", name);
  std::string data = BufferArg(info, 3, "bytes");
  const int mode = IntArg(info, 4, "mode");
  const int uid = IntArg(info, 5, "uid");
  const int gid = IntArg(info, 6, "gid");
  if (info.Length() <= 7 || !info[7].IsArray()) throw Napi::TypeError::New(env, "xattrs must be an array");
  Napi::Array list = info[7].As<Napi::Array>();
  std::vector<Xattr> xattrs;
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Value entry = list.Get(i);
    if (!entry.IsArray()) throw Napi::TypeError::New(env, "each xattr must be [name, value, optional]");
    Napi::Array triple = entry.As<Napi::Array>();
    Napi::Value key = triple.Get(0u), value = triple.Get(1u);
    if (!key.IsString() || !value.IsBuffer()) throw Napi::TypeError::New(env, "each xattr must be [name, value, optional]");
    Napi::Buffer<char> bytes = value.As<Napi::Buffer<char>>();
    xattrs.push_back({key.As<Napi::String>(), std::string(bytes.Data(), bytes.Length()), triple.Get(2u).ToBoolean().Value()});
  }
  const int landing = IntArg(info, 8, "landing");
  if (landing < kRename || landing > kExchange) throw Napi::RangeError::New(env, "landing must be 0, 1 or 2");
  std::string expect = landing == kExchange ? BufferArg(info, 9, "expect") : std::string();
  auto* worker = new ReplaceWorker(env, dirfd, std::move(tmp), std::move(name), std::move(data), mode, uid, gid, std::move(xattrs), landing,
                                   std::move(expect));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

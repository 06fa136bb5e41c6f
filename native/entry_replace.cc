// replaceEntriesAt (entry_io.h): the atomic replacement of directory entries, in batches on the pool.
#include "entry_io.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "args.h"
#include "entry_fd.h"
#include "errors.h"
#include "fs_at.h"

using entry_io::Fd;
using entry_io::IsEntryName;
using entry_io::ReadUpTo;

namespace {

struct Xattr {
  std::string name;
  std::string_view value;  // in a Buffer the batch keeps referenced, like the job's bytes
  bool optional;
};

enum Landing { kRename = 0, kNoReplace = 1, kExchange = 2 };

// One replacement: gathered on the main thread (names copied, bytes viewed in place), run on a pool thread.
class Replacement {
 public:
  // `data` and `expect` point into Buffers that the batch keeps referenced until it completes.
  Replacement(int dirfd, std::string tmp, std::string name, std::string_view data, int mode, int uid, int gid, std::vector<Xattr> xattrs,
              int landing, std::string_view expect)
      : dirfd_(dirfd),
        tmp_(std::move(tmp)),
        name_(std::move(name)),
        data_(data),
        mode_(mode),
        uid_(uid),
        gid_(gid),
        xattrs_(std::move(xattrs)),
        landing_(landing),
        expect_(expect) {}

  // On the pool: no JavaScript.
  void Run() {
    if (!CreateTemp()) return;
    Land();
  }

  // A new version is in place under `name`: the directory's fsync makes the rename durable.
  bool Landed() const { return error_ == 0 && (result_ == "renamed" || result_ == "exchanged"); }
  int dirfd() const { return dirfd_; }

  // The directory's fsync failed after the landing: durability is unknown, so the job failed.
  void DirectorySyncFailed(int error) {
    error_ = error;
    syscall_ = "fsync";
    errorPath_ = std::string(1, '.');  // not operator=(const char*): GCC 12 warns falsely on it under C++20 (its bug 105329)
  }

  // On the main thread: the landing's name, or the errno error.
  Napi::Value Result(Napi::Env env) const {
    if (error_ != 0) return ErrnoError(env, error_, syscall_, errorPath_).Value();
    return Napi::String::New(env, result_);
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

  // The numbered steps are docs/design.md's, "Writing".
  bool CreateTemp() {
    // (1) a temp file beside the target, in the target's directory fd.
    const int raw = openat(dirfd_, tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (raw < 0) return Fail("open", tmp_);
    bool ok = Fill(raw);
    // A close error after a successful fsync loses nothing: the data is on disk.
    close(raw);
    if (!ok) RemoveTemp();
    return ok;
  }

  bool Fill(int fd) {
    // (2) the bytes, the old file's mode, owner and xattrs, fsynced.
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
    // (3) swapped in with one renameat2.
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
    // (4) What the exchange swapped out is exactly what was at `name` at that instant: if it is not what
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
    const ssize_t length = ReadUpTo(fd.get(), &got[0], got.size());
    return length == static_cast<ssize_t>(expect_.size()) && std::memcmp(got.data(), expect_.data(), expect_.size()) == 0;
  }

  int dirfd_;
  std::string tmp_;
  std::string name_;
  std::string_view data_;
  int mode_;
  int uid_;
  int gid_;
  std::vector<Xattr> xattrs_;
  int landing_;
  std::string_view expect_;
  std::string result_;
  int error_ = 0;
  const char* syscall_ = "";
  std::string errorPath_;
};

// Every job of a batch, one after the other, then (5) one directory fsync per directory where
// something landed: it makes every rename of the batch durable, the barrier the whole batch shares
// instead of one more fsync per file.
void RunBatch(std::vector<Replacement>& jobs) {
  for (Replacement& job : jobs) job.Run();
  std::vector<int> synced;
  for (Replacement& job : jobs) {
    if (!job.Landed() || std::find(synced.begin(), synced.end(), job.dirfd()) != synced.end()) continue;
    synced.push_back(job.dirfd());
    if (fsync(job.dirfd()) == 0) continue;
    const int error = errno;
    for (Replacement& other : jobs) {
      if (other.dirfd() == job.dirfd() && other.Landed()) other.DirectorySyncFailed(error);
    }
  }
}

// Each job's landing or errno error, in order.
Napi::Array Results(Napi::Env env, const std::vector<Replacement>& jobs) {
  Napi::Array results = Napi::Array::New(env, jobs.size());
  for (size_t i = 0; i < jobs.size(); i++) results.Set(static_cast<uint32_t>(i), jobs[i].Result(env));
  return results;
}

// The pool thread that runs a batch gives up wakeup preemption (SCHED_BATCH, sched(7)): on a node with
// few cores, a pool thread woken by the hand-off otherwise preempts the event loop that woke it, in
// the middle of the storm it is still reading. Its share of CPU is unchanged, and it needs no
// privilege; where a seccomp profile refuses it, nothing changes. Once per thread.
void RunAsBatchThread() {
  static thread_local bool done = false;
  if (done) return;
  done = true;
  const sched_param param{};
  sched_setscheduler(0, SCHED_BATCH, &param);
}

// A batch of replacements as one work item: during a storm the event loop hands the pool a few
// batches instead of a wakeup per file (in perf, waking pool threads was a tenth of the agent's CPU).
class ReplaceBatch : public Napi::AsyncWorker {
 public:
  // `list` (the jobs as JavaScript passed them) stays referenced until the batch completes: its
  // Buffers are written and compared from the pool without a copy. (A Buffer's bytes live outside
  // V8's heap and do not move; the agent never changes a Buffer it has handed over.)
  ReplaceBatch(Napi::Env env, Napi::Array list, std::vector<Replacement> jobs)
      : Napi::AsyncWorker(env, "cni-chainer:replaceEntriesAt"),
        deferred_(Napi::Promise::Deferred::New(env)),
        list_(Napi::Persistent(list.As<Napi::Object>())),
        jobs_(std::move(jobs)) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Execute() override {
    RunAsBatchThread();
    RunBatch(jobs_);
  }

  void OnOK() override { deferred_.Resolve(Results(Env(), jobs_)); }

 private:
  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference list_;
  std::vector<Replacement> jobs_;
};

Replacement ParseJob(Napi::Env env, Napi::Value value) {
  if (!value.IsArray()) throw Napi::TypeError::New(env, "each job must be an array");
  Napi::Array job = value.As<Napi::Array>();
  const int dirfd = IntValue(env, job.Get(0u), "dirfd");
  std::string tmp = StringValue(env, job.Get(1u), "tmp");
  std::string name = StringValue(env, job.Get(2u), "name");
  if (!IsEntryName(tmp)) throw ErrnoError(env, EINVAL, "open", tmp);
  if (!IsEntryName(name)) throw ErrnoError(env, EINVAL, "rename", name);
  std::string_view data = BufferView(env, job.Get(3u), "bytes");
  const int mode = IntValue(env, job.Get(4u), "mode");
  const int uid = IntValue(env, job.Get(5u), "uid");
  const int gid = IntValue(env, job.Get(6u), "gid");
  Napi::Value list = job.Get(7u);
  if (!list.IsArray()) throw Napi::TypeError::New(env, "xattrs must be an array");
  std::vector<Xattr> xattrs;
  Napi::Array entries = list.As<Napi::Array>();
  for (uint32_t i = 0; i < entries.Length(); i++) {
    Napi::Value entry = entries.Get(i);
    if (!entry.IsArray()) throw Napi::TypeError::New(env, "each xattr must be [name, value, optional]");
    Napi::Array triple = entry.As<Napi::Array>();
    xattrs.push_back({StringValue(env, triple.Get(0u), "xattr name"), BufferView(env, triple.Get(1u), "xattr value"), triple.Get(2u).ToBoolean().Value()});
  }
  const int landing = IntValue(env, job.Get(8u), "landing");
  if (landing < kRename || landing > kExchange) throw Napi::RangeError::New(env, "landing must be 0, 1 or 2");
  std::string_view expect = landing == kExchange ? BufferView(env, job.Get(9u), "expect") : std::string_view();
  return Replacement(dirfd, std::move(tmp), std::move(name), data, mode, uid, gid, std::move(xattrs), landing, expect);
}

std::vector<Replacement> ParseJobs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArray()) throw Napi::TypeError::New(env, "jobs must be an array");
  Napi::Array list = info[0].As<Napi::Array>();
  std::vector<Replacement> jobs;
  jobs.reserve(list.Length());
  for (uint32_t i = 0; i < list.Length(); i++) jobs.push_back(ParseJob(env, list.Get(i)));
  return jobs;
}

}  // namespace

Napi::Value ReplaceEntriesAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<Replacement> jobs = ParseJobs(info);
  auto* worker = new ReplaceBatch(env, info[0].As<Napi::Array>(), std::move(jobs));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

// The same batch on the calling thread: the arguments' Buffers are referenced by the caller's frame
// for the whole call.
Napi::Value ReplaceEntriesAtNow(const Napi::CallbackInfo& info) {
  std::vector<Replacement> jobs = ParseJobs(info);
  RunBatch(jobs);
  return Results(info.Env(), jobs);
}

// Module entry: the watcher class, the *at syscalls (fs_at.h), and the inotify, rename and openat2
// constants, all per environment so the addon loads in worker threads too.
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <napi.h>
#include <sys/inotify.h>

#include "inotify_watcher.h"
#include "digest.h"
#include "entry_io.h"
#include "exit_now.h"
#include "malloc_trim.h"
#include "memory_pressure.h"
#include "fs_at.h"
#include "owner_lock.h"
#include "random.h"

namespace {

Napi::Object Constants(Napi::Env env) {
  Napi::Object c = Napi::Object::New(env);
#define CNI_CHAINER_CONSTANT(name) c.Set(#name, Napi::Number::New(env, name))
  CNI_CHAINER_CONSTANT(IN_ACCESS);
  CNI_CHAINER_CONSTANT(IN_MODIFY);
  CNI_CHAINER_CONSTANT(IN_ATTRIB);
  CNI_CHAINER_CONSTANT(IN_CLOSE_WRITE);
  CNI_CHAINER_CONSTANT(IN_CLOSE_NOWRITE);
  CNI_CHAINER_CONSTANT(IN_CLOSE);
  CNI_CHAINER_CONSTANT(IN_OPEN);
  CNI_CHAINER_CONSTANT(IN_MOVED_FROM);
  CNI_CHAINER_CONSTANT(IN_MOVED_TO);
  CNI_CHAINER_CONSTANT(IN_MOVE);
  CNI_CHAINER_CONSTANT(IN_CREATE);
  CNI_CHAINER_CONSTANT(IN_DELETE);
  CNI_CHAINER_CONSTANT(IN_DELETE_SELF);
  CNI_CHAINER_CONSTANT(IN_MOVE_SELF);
  CNI_CHAINER_CONSTANT(IN_ALL_EVENTS);
  CNI_CHAINER_CONSTANT(IN_UNMOUNT);
  CNI_CHAINER_CONSTANT(IN_Q_OVERFLOW);
  CNI_CHAINER_CONSTANT(IN_IGNORED);
  CNI_CHAINER_CONSTANT(IN_ONLYDIR);
  CNI_CHAINER_CONSTANT(IN_DONT_FOLLOW);
  CNI_CHAINER_CONSTANT(IN_EXCL_UNLINK);
  CNI_CHAINER_CONSTANT(IN_MASK_ADD);
  CNI_CHAINER_CONSTANT(IN_ISDIR);
  CNI_CHAINER_CONSTANT(IN_ONESHOT);
  CNI_CHAINER_CONSTANT(RENAME_NOREPLACE);
  CNI_CHAINER_CONSTANT(RENAME_EXCHANGE);
  CNI_CHAINER_CONSTANT(RESOLVE_IN_ROOT);
  CNI_CHAINER_CONSTANT(RESOLVE_BENEATH);
  CNI_CHAINER_CONSTANT(RESOLVE_NO_MAGICLINKS);
  CNI_CHAINER_CONSTANT(RESOLVE_NO_SYMLINKS);
  CNI_CHAINER_CONSTANT(RESOLVE_NO_XDEV);
  CNI_CHAINER_CONSTANT(AT_FDCWD);
  CNI_CHAINER_CONSTANT(AT_REMOVEDIR);
  CNI_CHAINER_CONSTANT(O_PATH);
#undef CNI_CHAINER_CONSTANT
  c.Freeze();
  return c;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("InotifyWatcher", InotifyWatcher::Define(env));
  exports.Set("openat2", Napi::Function::New(env, Openat2, "openat2"));
  exports.Set("renameat2", Napi::Function::New(env, Renameat2, "renameat2"));
  exports.Set("unlinkat", Napi::Function::New(env, Unlinkat, "unlinkat"));
  exports.Set("symlinkat", Napi::Function::New(env, Symlinkat, "symlinkat"));
  exports.Set("linkat", Napi::Function::New(env, Linkat, "linkat"));
  exports.Set("readlinkat", Napi::Function::New(env, Readlinkat, "readlinkat"));
  exports.Set("xattrs", Napi::Function::New(env, Xattrs, "xattrs"));
  exports.Set("fsetxattr", Napi::Function::New(env, Fsetxattr, "fsetxattr"));
  exports.Set("readEntryAt", Napi::Function::New(env, ReadEntryAt, "readEntryAt"));
  exports.Set("replaceEntriesAt", Napi::Function::New(env, ReplaceEntriesAt, "replaceEntriesAt"));
  exports.Set("replaceEntriesAtNow", Napi::Function::New(env, ReplaceEntriesAtNow, "replaceEntriesAtNow"));
  exports.Set("filesystemType", Napi::Function::New(env, FilesystemType, "filesystemType"));
  // Beyond the syscalls and the event decoding, each for a reason TypeScript cannot meet
  // (docs/decisions.md, The addon's exports):
  // a digest without loading node:crypto at start (1-2 ms here), from the OpenSSL Node links;
  exports.Set("sha256", Napi::Function::New(env, Sha256, "sha256"));
  // random ids from getrandom(2), for the same reason;
  exports.Set("getrandom", Napi::Function::New(env, GetRandom, "getrandom"));
  // flock(2) on the owner file: Node has no file locks;
  exports.Set("flock", Napi::Function::New(env, Flock, "flock"));
  exports.Set("flockWait", Napi::Function::New(env, FlockWait, "flockWait"));
  // _exit(2): process.exit() can hang in Node's teardown (nodejs/node#54918);
  exports.Set("exitNow", Napi::Function::New(env, ExitNow, "exitNow"));
  // malloc_trim(3): glibc keeps freed arenas, and Node has no call for it;
  exports.Set("mallocTrim", Napi::Function::New(env, MallocTrim, "mallocTrim"));
  // V8's memory-pressure notification: Node-API has none, and gc() leaves the young generation grown.
  exports.Set("collectGarbageForMemory", Napi::Function::New(env, CollectGarbageForMemory, "collectGarbageForMemory"));
  exports.Set("constants", Constants(env));
  return exports;
}

}  // namespace

NODE_API_MODULE(cni_chainer, Init)

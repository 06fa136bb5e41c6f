#pragma once

#include <napi.h>

// Directory-fd-relative file syscalls that Node's fs does not expose. The writer resolves a directory
// once, inside the host root, by the kernel (openat2 RESOLVE_IN_ROOT), and then creates, exchanges,
// renames and unlinks relative to that fd: a path component swapped for a symlink afterwards cannot
// redirect a write out of the root. Only syscalls and argument checks live here; policy is TypeScript.
//
//   openat2(dirfd, path, flags, mode, resolve) -> fd   (throws ENOSYS on kernels before 5.6)
//   renameat2(olddirfd, old, newdirfd, new, flags)
//   unlinkat(dirfd, path, flags)
//   symlinkat(target, dirfd, path)
//   linkat(olddirfd, oldpath, newdirfd, newpath)   (a hard link; never follows a symlink)
//   readlinkat(dirfd, path) -> string
//   xattrs(fd) -> Array<[name, Buffer]>            (flistxattr + fgetxattr; E2BIG past kMaxXattrBytes)
//   fsetxattr(fd, name, value: Buffer)
Napi::Value Openat2(const Napi::CallbackInfo& info);
Napi::Value Renameat2(const Napi::CallbackInfo& info);
Napi::Value Unlinkat(const Napi::CallbackInfo& info);
Napi::Value Symlinkat(const Napi::CallbackInfo& info);
Napi::Value Linkat(const Napi::CallbackInfo& info);
Napi::Value Readlinkat(const Napi::CallbackInfo& info);
Napi::Value Xattrs(const Napi::CallbackInfo& info);
// Names and values of one file's xattrs together: what the agent reads and copies at most. Real
// files carry a SELinux label and an ACL, some 100 bytes; the kernel allows 64 KiB per value.
constexpr size_t kMaxXattrBytes = 64 * 1024;
// The same for callers in C++ (entry_read.cc): each [name, value] appended to `into`; false, and
// nothing appended, past the bound.
bool ReadXattrs(Napi::Env env, int fd, Napi::Array into);
Napi::Value Fsetxattr(const Napi::CallbackInfo& info);
//   filesystemType(fd) -> number                    (fstatfs(2)'s f_type: the filesystem's magic)
Napi::Value FilesystemType(const Napi::CallbackInfo& info);

#pragma once

#include <napi.h>

// The two disk steps of a config pass, each one call into C++ instead of a dozen calls through Node's
// fs (measured in the storm bench: the per-call cost of fs and N-API, not the syscalls, dominated the
// agent's CPU per file). Entry names are single path components relative to a directory fd that
// HostRoot resolved inside the host root, so plain *at syscalls with O_NOFOLLOW stay in that directory.
// Only syscalls and byte comparisons live here; what to write, and what a stale result means, is
// TypeScript's (fs/atomic-write.ts, fs/exchange.ts).
//
//   readEntryAt(dirfd, name, maxBytes, withXattrs, out: Float64Array(7), xattrsOut: Array) -> Buffer | undefined
//     out: [kind, mode, uid, gid, size, mtimeMs, length], kind 0 missing, 1 symlink, 2 not a regular
//     file, 3 over maxBytes, 4 xattrs over what is read and copied (fs_at.h), 5 a file: the Buffer
//     holds its `length` bytes (and room for one more), and each xattr is appended to xattrsOut as
//     [name, value]. Anything but a regular file is reported from lstat without being opened (opening
//     a device can have side effects).
//   replaceEntriesAt(jobs) -> Promise<Array<string | Error>>, each job
//   [dirfd, tmp, name, bytes, mode, uid, gid, xattrs, landing, expect], run one after the other as one
//   work item on libuv's thread pool. Each: create `tmp` (O_EXCL), write, chmod, chown (uid -1: keep), set xattrs
//     ([name, value, optional]), fsync, then land it under `name`:
//       landing 0: rename                              -> 'renamed'
//       landing 1: renameat2(RENAME_NOREPLACE)         -> 'renamed' | 'stale' (name exists)
//       landing 2: renameat2(RENAME_EXCHANGE), then compare what was swapped out with `expect`:
//                  -> 'exchanged' (it matched; the old version is unlinked)
//                  | 'stale'      (name was gone; tmp unlinked)
//                  | 'swapped'    (a newer write was swapped out: it is at `tmp` now, for the caller to give back)
//                  | 'unsupported' (the filesystem has no RENAME_EXCHANGE; tmp is complete and left in place)
//     After the batch, each directory where something landed is fsynced once (a failure there fails
//     the jobs that landed in it: their durability is unknown). A job that fails removes its temp
//     file and gives a Node-style errno error in its place; the others go on. Bad arguments throw
//     before anything is queued.
Napi::Value ReadEntryAt(const Napi::CallbackInfo& info);
Napi::Value ReplaceEntriesAt(const Napi::CallbackInfo& info);
//   replaceEntriesAtNow(jobs) -> Array<string | Error>: the same batch, run on the calling thread.
Napi::Value ReplaceEntriesAtNow(const Napi::CallbackInfo& info);

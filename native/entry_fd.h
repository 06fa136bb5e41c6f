#pragma once

// What the two halves of the entry I/O share (entry_io.h): a checked entry name, an owned fd, and
// a read that fills its buffer.
#include <unistd.h>

#include <cerrno>
#include <string>

namespace entry_io {

// A name that cannot leave its directory: no separator, not `.` or `..` (names come from readdir or
// inotify, so this only guards against a caller's mistake).
inline bool IsEntryName(const std::string& name) {
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

// Reads into buffer until it is full or the file ends; the length read, or -1 with errno set.
inline ssize_t ReadUpTo(int fd, char* buffer, size_t capacity) {
  size_t length = 0;
  while (length < capacity) {
    const ssize_t n = read(fd, buffer + length, capacity - length);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    length += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(length);
}

}  // namespace entry_io

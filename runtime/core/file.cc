#include "runtime/core/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/core/error.h"

namespace ember {

Status write_file_atomic(const std::string& path, const void* data, size_t size, std::string* error) {
  const std::string tmp = str_cat(path, ".tmp.", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return report_error(error, Status::IoError, "cannot create '", tmp, "': ", std::strerror(errno));
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  const char* step = nullptr;  // what failed
  int err = 0;
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      step = "write";
      err = errno;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (step == nullptr && ::fsync(fd) != 0) {
    step = "sync";
    err = errno;
  }
  if (::close(fd) != 0 && step == nullptr) {
    step = "close";
    err = errno;
  }
  if (step != nullptr) {
    ::unlink(tmp.c_str());
    return report_error(error, Status::IoError, "cannot ", step, " '", tmp, "': ", std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
    return report_error(error, Status::IoError, "cannot rename '", tmp, "' to '", path, "': ", std::strerror(err));
  }
  return Status::Ok;
}

}  // namespace ember

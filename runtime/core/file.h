// Writing files atomically: the bytes go to a temporary file next to `path`
// ("<path>.tmp.<pid>"), are synced, and the temporary is renamed over `path`.
// On any failure the temporary is removed and `path` is left as it was, so no
// crash or full disk leaves half a file behind.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/core/status.h"

namespace ember {

// On failure returns Status::IoError and sets *error (when non-null) to the
// step that failed, e.g. "cannot write 'out/x.npy.tmp.42': No space left on
// device" or "cannot rename 'a.tmp.42' to 'a': Is a directory".
Status write_file_atomic(const std::string& path, const void* data, size_t size, std::string* error = nullptr);

}  // namespace ember

// NumPy `.npz` files (what np.savez writes: a zip of NAME.npy entries) ->
// tensors, for the CLI's data sets (`ember finetune --data`) and the
// converter's calibration inputs. Entries must be STORED (np.savez);
// compressed ones (np.savez_compressed) are refused with a message that says
// so. ZIP64 local headers (numpy writes them for large arrays) are read.
// Malformed files are errors naming the file and the entry, never a crash.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/tensor/tensor.h"

namespace ember {

struct NpzEntry {
  std::string name;  // the array's key: the entry's name without ".npy"
  Tensor value;      // a contiguous CPU tensor (runtime/model/npy.h's dtypes)
};

// The arrays of the .npz bytes at `data`, in file order; `name` labels the
// messages ("'train.npz': entry 'x.npy' is compressed (...)").
Result<std::vector<NpzEntry>> parse_npz(const void* data, size_t size, const std::string& name,
                                        std::string* error = nullptr);

// The same from a file (IoError: cannot open or read it).
Result<std::vector<NpzEntry>> read_npz(const std::string& path, std::string* error = nullptr);

}  // namespace ember

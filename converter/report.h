// The converter's accuracy report (`ember convert --report`) and
// sensitivity-aware quantization (`--min-snr DB`).
//
// Every op whose weights the conversion changed (int8, fp16, pruned, sparse
// COO: an input constant whose dtype, quantization, sparsity or bytes differ,
// or whose op kind changed, MatMul -> Linear) is a layer of the report. Each
// layer is measured alone: the fp32 model with only that layer converted is
// run on the calibration inputs next to the fp32 model, and the layer's output
// (its op's first output) is compared, so its input is exactly the fp32 one:
//   SNR = 10 log10(sum y^2 / sum (y - yq)^2) dB   (inf when equal)
// Then the whole converted model is run and each final output compared the
// same way. With min_snr, layers below it are restored to fp32 (their op and
// weights from the fp32 model) before the final run and the file is written.
//
// Calibration inputs: a numpy .npz (np.savez: a zip of NAME.npy entries, stored
// uncompressed; compressed entries are refused: use np.savez, not
// np.savez_compressed) or a directory of NAME.npy files, one per graph input
// (NAME: the input's name). Without one: standard normal float inputs
// (seed 0), symbolic dims 1, zeros for integer inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "runtime/model/model_def.h"

namespace ember::converter {

// Reads calibration inputs for the graph inputs of `def` (see above).
Expected<std::vector<Tensor>> read_calibration_inputs(const std::string& path, const ModelDef& def);
// Random inputs for `def` (see above).
std::vector<Tensor> random_inputs(const ModelDef& def);

// Measures `converted` against `fp32` (the same graph before pruning,
// quantization, fp16 and COO; same ops and tensor indices), restores the
// layers below options.min_snr when set, and fills *report. `pruned`: the
// pruning rows of the conversion (layers marked "+pruned").
Diag measure_accuracy(const ModelDef& fp32, ModelDef& converted, const std::vector<Tensor>& inputs,
                      const ConvertOptions& options, const std::vector<SparseLayerReport>& pruned,
                      AccuracyReport* report);

// SNR in dB of `approx` against `ref` (same number of float elements).
double snr_db(const Tensor& ref, const Tensor& approx);

// The per-layer table and the totals, for `ember convert --report`.
std::string accuracy_table(const AccuracyReport& report);

}  // namespace ember::converter

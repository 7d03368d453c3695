// The packed CSR form of a sparse [rows, cols] weight and the SpMM kernels
// that run it (quant/spmm.cc): plain data and raw pointers, no eager Tensor
// (the CPU backend prepares and runs sparse Linear weights with these,
// kernels/cpu/qlinear.cc). COO <-> dense and the eager forms: quant/coo.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/tensor/tensor_view.h"

namespace ember::sparse {

// A [rows, cols] matrix packed by row for SpMM: row r's nonzeros are
// values[row_ptr[r] .. row_ptr[r+1]) (or qvalues) at columns col16
// (cols <= 65536) or col32. This CSR form is what the reference kernel and
// the portable kernel run.
//
// int8 values stay int8 (qvalues, 1 byte each) with one fp32 scale per output
// row (row_scale; a per-tensor scale is repeated): real = row_scale[r] * q.
// The kernels accumulate q * x in fp32 and multiply each row's sum by its scale.
//
// On x86 CPUs with AVX-512 pack_csr also builds `blocked`, the layout the
// fast kernel runs (quant/spmm.cc): rows in slices of 16, columns in blocks of
// 32; for each (slice, block), count[s * blocks + b] = the most nonzeros any of
// the slice's 16 rows has in the block, and that many slots of 16 entries
// (entry l = the slot's nonzero of row 16 s + l, or a zero pad): col = the
// column inside the block (0..31), value or qvalue. The kernel holds the 32 x
// values of a block in two registers and picks a slot's 16 with one permute
// (vpermi2ps), so a slot costs a permute and an FMA: no gathers, no
// horizontal sums. Padding: about 2x the nonzeros at 90 % zeros (random
// positions), 1.7x at 80 %.
struct BlockedSpmm {
  int64_t slices = 0;              // ceil(rows / 16)
  int64_t blocks = 0;              // ceil(cols / 32)
  std::vector<uint8_t> count;      // [slices, blocks]: slots per (slice, block)
  std::vector<int64_t> slot_start; // [slices + 1]: first slot of each slice
  std::vector<uint8_t> col;        // [slots, 16]
  std::vector<float> values;       // [slots, 16] (fp32 matrices)
  std::vector<int8_t> qvalues;     // [slots, 16] (int8 matrices)

  bool empty() const { return count.empty(); }
  size_t bytes() const {
    return count.size() + slot_start.size() * 8 + col.size() + values.size() * 4 + qvalues.size();
  }
};

struct CsrMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<int64_t> row_ptr;   // rows + 1
  std::vector<uint16_t> col16;    // used when narrow
  std::vector<int32_t> col32;     // used otherwise
  std::vector<float> values;      // fp32 values (float16 and asymmetric int8 are converted at pack)
  std::vector<int8_t> qvalues;    // int8 values when int8 (symmetric int8: every zero point 0)
  std::vector<float> row_scale;   // [rows] when int8
  bool narrow = false;
  bool int8 = false;
  BlockedSpmm blocked;            // built by pack_csr on AVX-512 CPUs; empty elsewhere

  int64_t nnz() const { return static_cast<int64_t>(narrow ? col16.size() : col32.size()); }
  size_t bytes() const {
    return row_ptr.size() * sizeof(int64_t) + col16.size() * 2 + col32.size() * 4 + values.size() * 4 +
           qvalues.size() + row_scale.size() * 4 + blocked.bytes();
  }
};

// Packs a rank-2 COO matrix (indices sorted row-major, as the loader checks):
// indices [2, nnz] int16, int32 or int64 and values [nnz], both contiguous.
// values: float32, float16, or int8 with `scales` (one: per tensor, or `rows`:
// per output channel on axis 0) and optional zero points: real = s * (q - z).
// int8 values stay int8 when every zero point is 0 (what the converter writes);
// otherwise they are dequantized to fp32 here. Builds `blocked` when the CPU
// has AVX-512 (see has_fast_spmm) unless `blocked` is false (a device backend
// that packs the CSR arrays again). On a bad matrix returns the error status and
// sets *why ("pack_csr: ...").
Status pack_csr(const TensorView& indices, const TensorView& values, int64_t rows, int64_t cols,
                const std::vector<float>& scales, const std::vector<int64_t>& zero_points, CsrMatrix* out,
                std::string* why, bool blocked = true);

// Whether this CPU runs the blocked AVX-512 kernel (x86-64 with AVX-512F).
bool has_fast_spmm();

// Builds w.blocked from w's CSR form (pack_csr calls it on AVX-512 CPUs).
void build_blocked(CsrMatrix& w);

// y[m, n] = sum_k x[m, k] * W[n, k] + bias[n], for x [m, cols] row-major
// (row stride ldx), y [m, rows] contiguous; bias may be null. Threaded over
// output rows (parallel_for). Runs the blocked AVX-512 kernel when w.blocked
// is built, the portable CSR kernel otherwise. Reference (double
// accumulation over the CSR form): spmm_linear_ref.
void spmm_linear(const CsrMatrix& w, const float* x, int64_t m, int64_t ldx, const float* bias, float* y);
void spmm_linear_ref(const CsrMatrix& w, const float* x, int64_t m, int64_t ldx, const float* bias, float* y);

}  // namespace ember::sparse

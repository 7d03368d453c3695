// Recurrence on CUDA (ONNX LSTM, GRU, RNN; kernels/ref/recurrence.cc has the
// formulas): per direction and time step one launch, one thread per (batch
// entry, hidden unit), which forms its unit's gate rows of x_t W^T + Wb and
// h R^T + Rb as dot products in double and writes its new h (and c). The state
// alternates between two workspace buffers, so a step reads the whole previous
// h while writing the next; GRU without linear_before_reset first runs a
// launch for r h. Any strides. Correct rather than fast: the products do not
// go through cuBLAS yet.
#include "kernels/cuda/kernel_util.h"
#include "kernels/ref/ref_kernels.h"

namespace ember::cuda {
namespace {

// The operands as device code reads them (null pointers: absent).
struct Operands {
  const void *x, *w, *r, *b, *lens, *h0, *c0, *p;
  NdView xv, wv, rv, bv, lv, h0v, c0v, pv;
  bool lens64;
  void *y, *yh, *yc;
  NdView yv, yhv, ycv;
};

template <typename T>
__device__ double at(const void* p, const NdView& v, int64_t i0, int64_t i1, int64_t i2 = 0) {
  const int64_t off = i0 * v.strides[0] + i1 * v.strides[1] + (v.rank > 2 ? i2 * v.strides[2] : 0);
  return static_cast<double>(convert<compute_t<T>>(static_cast<const T*>(p)[off]));
}

template <typename T>
__device__ void put(void* p, const NdView& v, const int64_t* idx, double value) {
  int64_t off = 0;
  for (int k = 0; k < v.rank; ++k) off += idx[k] * v.strides[k];
  static_cast<T*>(p)[off] = convert<T>(static_cast<compute_t<T>>(value));
}

__device__ double sigmoid(double v) { return 1.0 / (1.0 + ::exp(-v)); }

struct Step {
  RecurrenceParams p;
  int64_t d, t, steps, inputs, gh;  // gh: G * H (p.gates() is host code)
  __device__ double clip(double v) const { return p.clip > 0 ? ::fmin(::fmax(v, -p.clip), p.clip) : v; }
  __device__ double f(double v) const { return p.cell == 2 ? (p.relu ? ::fmax(v, 0.0) : ::tanh(v)) : sigmoid(v); }
};

// Row `row` of x_t W^T + Wb for entry b.
template <typename T>
__device__ double x_part(const Operands& o, const Step& s, int64_t b, int64_t row) {
  double sum = o.b != nullptr ? at<T>(o.b, o.bv, s.d, row) : 0.0;
  for (int64_t i = 0; i < s.inputs; ++i) sum += at<T>(o.x, o.xv, s.t, b, i) * at<T>(o.w, o.wv, s.d, row, i);
  return sum;
}

// Row `row` of v R^T + Rb for entry b, v [B, H] in the workspace.
template <typename T>
__device__ double h_part(const Operands& o, const Step& s, const double* v, int64_t b, int64_t row) {
  const int64_t H = s.p.hidden;
  double sum = o.b != nullptr ? at<T>(o.b, o.bv, s.d, s.gh + row) : 0.0;
  for (int64_t k = 0; k < H; ++k) sum += v[b * H + k] * at<T>(o.r, o.rv, s.d, row, k);
  return sum;
}

template <typename T>
__global__ void init_kernel(Operands o, int64_t d, int64_t H, double* h, double* c, int64_t n) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    const int64_t b = i / H, j = i % H;
    h[i] = o.h0 != nullptr ? at<T>(o.h0, o.h0v, d, b, j) : 0.0;
    c[i] = o.c0 != nullptr ? at<T>(o.c0, o.c0v, d, b, j) : 0.0;
  }
}

// GRU without linear_before_reset: rh = r h, r from the previous h.
template <typename T>
__global__ void reset_kernel(Operands o, Step s, const double* h, double* rh, int64_t n) {
  const int64_t H = s.p.hidden;
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    const int64_t b = i / H, j = i % H;
    const double r = s.f(s.clip(x_part<T>(o, s, b, H + j) + h_part<T>(o, s, h, b, H + j)));
    rh[i] = r * h[i];
  }
}

template <typename T>
__global__ void step_kernel(Operands o, Step s, const double* h, double* next, double* c, const double* rh,
                            int64_t n) {
  const int64_t H = s.p.hidden;
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    const int64_t b = i / H, j = i % H;
    const int64_t len = o.lens != nullptr ? read_index(o.lens, o.lens64, b * o.lv.strides[0]) : s.steps;
    const int64_t yi[4] = {s.t, s.d, b, j};
    if (s.t >= len) {  // past the entry's length: output 0, keep the state
      next[i] = h[i];
      if (o.y != nullptr) put<T>(o.y, o.yv, yi, 0.0);
      continue;
    }
    auto gate = [&](int64_t k) { return x_part<T>(o, s, b, k * H + j) + h_part<T>(o, s, h, b, k * H + j); };
    double hn = 0.0;
    if (s.p.cell == 0) {
      auto peep = [&](int64_t k) { return o.p != nullptr ? at<T>(o.p, o.pv, s.d, k * H + j) : 0.0; };
      const double gi = s.f(s.clip(gate(0) + peep(0) * c[i]));
      const double gf = s.p.input_forget ? 1.0 - gi : s.f(s.clip(gate(2) + peep(2) * c[i]));
      const double cn = gf * c[i] + gi * ::tanh(s.clip(gate(3)));
      const double go = s.f(s.clip(gate(1) + peep(1) * cn));
      c[i] = cn;
      hn = go * ::tanh(cn);
    } else if (s.p.cell == 1) {
      const double z = s.f(s.clip(gate(0)));
      double pre = x_part<T>(o, s, b, 2 * H + j);
      if (s.p.linear_before_reset) {
        pre += s.f(s.clip(gate(1))) * h_part<T>(o, s, h, b, 2 * H + j);
      } else {
        pre += h_part<T>(o, s, rh, b, 2 * H + j);
      }
      const double cand = ::tanh(s.clip(pre));
      hn = (1.0 - z) * cand + z * h[i];
    } else {
      hn = s.f(s.clip(gate(0)));
    }
    next[i] = hn;
    if (o.y != nullptr) put<T>(o.y, o.yv, yi, hn);
  }
}

template <typename T>
__global__ void final_kernel(Operands o, int64_t d, int64_t H, const double* h, const double* c, int64_t n) {
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    const int64_t idx[3] = {d, i / H, i % H};
    if (o.yh != nullptr) put<T>(o.yh, o.yhv, idx, h[i]);
    if (o.yc != nullptr) put<T>(o.yc, o.ycv, idx, c[i]);
  }
}

}  // namespace

// h, the next h, c and r h: [B, H] doubles each.
size_t recurrence_workspace(Span<const TensorView> in, Span<const TensorView>, const OpParams& params) {
  const auto* p = std::get_if<RecurrenceParams>(&params);
  if (p == nullptr || in.empty() || in[0].rank != 3 || !p->valid()) return 0;
  return static_cast<size_t>(4 * in[0].sizes[1] * p->hidden) * sizeof(double);
}

Status recurrence(const KernelContext& ctx, Span<const TensorView> in, Span<TensorView> out, const OpParams& params) {
  const auto* p = std::get_if<RecurrenceParams>(&params);
  EMBER_CHECK(p != nullptr && p->valid() && in.size() == 8 && out.size() == 3 && in[0].data != nullptr,
                     Status::InvalidArgument);
  EMBER_CHECK(ref::recurrence_shapes_ok(in, Span<const TensorView>(out.data(), out.size()), *p),
                     Status::ShapeMismatch);
  const int64_t steps = in[0].sizes[0], B = in[0].sizes[1], H = p->hidden, n = B * H;
  if (n == 0) return Status::Ok;  // every output is empty
  EMBER_CHECK(ctx.scratch != nullptr && ctx.scratch_bytes >= recurrence_workspace(in, {}, params),
                     Status::Internal);
  Operands o{};
  const void** ptrs[8] = {&o.x, &o.w, &o.r, &o.b, &o.lens, &o.h0, &o.c0, &o.p};
  NdView* views[8] = {&o.xv, &o.wv, &o.rv, &o.bv, &o.lv, &o.h0v, &o.c0v, &o.pv};
  for (size_t k = 0; k < 8; ++k) {
    *ptrs[k] = in[k].data;
    if (in[k].data != nullptr) *views[k] = nd_view(in[k]);
  }
  o.lens64 = in[4].data != nullptr && in[4].dtype == DType::Int64;
  void** outs[3] = {&o.y, &o.yh, &o.yc};
  NdView* out_views[3] = {&o.yv, &o.yhv, &o.ycv};
  for (size_t k = 0; k < 3; ++k) {
    *outs[k] = out[k].data;
    if (out[k].data != nullptr) *out_views[k] = nd_view(out[k]);
  }
  double* h = static_cast<double*>(ctx.scratch);
  double* next = h + n;
  double* c = next + n;
  double* rh = c + n;
  const bool reset_apart = p->cell == 1 && !p->linear_before_reset;
  return on_dtype<kFloatingTypes & kCudaAll>(in[0].dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (int64_t d = 0; d < p->directions; ++d) {
      double* cur = h;
      double* nxt = next;
      EMBER_TRY(launch_1d(&init_kernel<T>, n, "recurrence init kernel", o, d, H, cur, c, n));
      for (int64_t k = 0; k < steps; ++k) {
        const Step s{*p, d, p->reverse || d == 1 ? steps - 1 - k : k, steps, in[0].sizes[2], p->gates() * H};
        if (reset_apart) EMBER_TRY(launch_1d(&reset_kernel<T>, n, "recurrence reset kernel", o, s, cur, rh, n));
        EMBER_TRY(launch_1d(&step_kernel<T>, n, "recurrence step kernel", o, s, cur, nxt, c, rh, n));
        std::swap(cur, nxt);
      }
      EMBER_TRY(launch_1d(&final_kernel<T>, n, "recurrence final kernel", o, d, H, cur, c, n));
    }
    return Status::Ok;
  });
}

}  // namespace ember::cuda

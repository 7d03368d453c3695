// Linear-algebra front-ends: mm, bmm, matmul (with torch.matmul's dot / mv /
// mm / folded / batched paths, so that results and error messages match
// PyTorch 1.13), and linear. Everything runs on the one MatMul kernel
// ([B, M, K] x [B, K, N]); the front-ends only build 3-D views of the operands
// (copying only when a reshape must). As in PyTorch, nothing here promotes
// types: mismatched dtypes raise.
#include <atomic>
#include <string>

#include "runtime/amp/autocast.h"
#include "runtime/autograd/node.h"
#include "runtime/core/thread_pool.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"
#include "runtime/ops/qlinear.h"

namespace ember {
namespace {

std::string matrix_str(const Tensor& t) { return std::to_string(t.size(0)) + "x" + std::to_string(t.size(1)); }

// PyTorch's CPU gemm kernels dispatch over all types but Bool and Half.
Status check_gemm_dtype(const char* kernel, const Tensor& first, const Tensor& second) {
  const DType d = first.dtype();
  // Half: refused on the CPU as PyTorch 1.13 does; devices with a Half kernel run it.
  EMBER_CHECK(d != DType::Bool && (d != DType::Float16 || !first.device().is_cpu()), Status::NotSupported, "\"",
              kernel, "\" not implemented for '", dtype_legacy_name(d), "'");
  EMBER_CHECK(second.dtype() == d, Status::DTypeMismatch, "expected scalar type ", dtype_legacy_name(d),
              " but found ", dtype_legacy_name(second.dtype()));
  return Status::Ok;
}

// Records out = a @ b (any of dot, mv, mm, bmm) for autograd; composites such as
// matmul and linear get their gradients through these and the views they take.
// `rule` is the name torch shows (MmBackward0, DotBackward0, ...).
Tensor recorded(const Tensor& out, const Tensor& a, const Tensor& b, GradRule rule = GradRule::MatMul) {
  if (Node* n = autograd::record(rule, out, {a, b})) n->save(a).save(b);
  return out;
}

// Set on a thread (matmul_prepacked with bf16): its float32 CPU products run
// on bf16-rounded operands (LinearParams::bf16).
thread_local bool t_bf16_products = false;

// out3 [B, M, N] = a3 [B, M, K] @ b3 [B, K, N]; out3 is a view of the result.
// bf16: a float32 CPU product on bf16-rounded operands.
Status run_matmul(const Tensor& a3, const Tensor& b3, const Tensor& out3, bool bf16 = t_bf16_products) {
  if (bf16 && a3.device().is_cpu() && a3.dtype() == DType::Float32) {
    LinearParams p;
    p.bf16 = true;
    return run_kernel(OpKind::MatMul, {a3, b3}, {out3}, p);
  }
  return run_kernel(OpKind::MatMul, {a3, b3}, {out3});
}

Result<Tensor> mm_unchecked(const Tensor& a, const Tensor& b) {
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty({a.size(0), b.size(1)}, TensorOptions(a.dtype()).device(a.device())));
  EMBER_ASSIGN_OR_RETURN(const Tensor a3, core::unsqueeze(a.detach(), 0));
  EMBER_ASSIGN_OR_RETURN(const Tensor b3, core::unsqueeze(b.detach(), 0));
  EMBER_ASSIGN_OR_RETURN(const Tensor out3, core::unsqueeze(out, 0));
  EMBER_TRY(run_matmul(a3, b3, out3));
  return recorded(out, a, b);
}

Result<Tensor> mv(const Tensor& a, const Tensor& v) {
  EMBER_CHECK(a.size(1) == v.size(0), Status::ShapeMismatch, "size mismatch, got ", a.size(0), ", ",
              matrix_str(a), ",", v.size(0));
  EMBER_TRY(check_same_device({a, v}));
  EMBER_TRY(check_gemm_dtype("addmv_impl_cpu", a, v));
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty({a.size(0)}, TensorOptions(a.dtype()).device(a.device())));
  EMBER_ASSIGN_OR_RETURN(const Tensor a3, core::unsqueeze(a.detach(), 0));
  EMBER_ASSIGN_OR_RETURN(Tensor v3, core::unsqueeze(v.detach(), 0));
  EMBER_ASSIGN_OR_RETURN(v3, core::unsqueeze(v3, 2));
  EMBER_ASSIGN_OR_RETURN(Tensor out3, core::unsqueeze(out, 0));
  EMBER_ASSIGN_OR_RETURN(out3, core::unsqueeze(out3, 2));
  EMBER_TRY(run_matmul(a3, v3, out3));
  return recorded(out, a, v, GradRule::Mv);
}

Result<Tensor> dot(const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.dtype() == b.dtype(), Status::DTypeMismatch,
              "dot : expected both vectors to have same dtype, but found ", dtype_legacy_name(a.dtype()), " and ",
              dtype_legacy_name(b.dtype()));
  EMBER_CHECK(a.numel() == b.numel(), Status::ShapeMismatch, "inconsistent tensor size, expected tensor ",
              shape_str(a.sizes()), " and src ", shape_str(b.sizes()),
              " to have the same number of elements, but got ", a.numel(), " and ", b.numel(),
              " elements respectively");
  EMBER_TRY(check_same_device({a, b}));
  const DType d = a.dtype();
  EMBER_CHECK(d != DType::Bool && d != DType::Float16, Status::NotSupported, "\"dot\" not implemented for '",
              dtype_legacy_name(d), "'");
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty({}, TensorOptions(d).device(a.device())));
  EMBER_ASSIGN_OR_RETURN(Tensor a3, core::unsqueeze(a.detach(), 0));
  EMBER_ASSIGN_OR_RETURN(a3, core::unsqueeze(a3, 0));
  EMBER_ASSIGN_OR_RETURN(Tensor b3, core::unsqueeze(b.detach(), 0));
  EMBER_ASSIGN_OR_RETURN(b3, core::unsqueeze(b3, 2));
  EMBER_ASSIGN_OR_RETURN(Tensor out3, core::unsqueeze(out, 0));
  EMBER_ASSIGN_OR_RETURN(out3, core::unsqueeze(out3, 0));
  EMBER_ASSIGN_OR_RETURN(out3, core::unsqueeze(out3, 0));
  EMBER_TRY(run_matmul(a3, b3, out3));
  return recorded(out, a, b, GradRule::Dot);
}

// bfloat16 on the CPU: PyTorch's gemm adds the bias inside the float sum and
// rounds once, so the bias goes into the reference MatMul kernel as its
// optional third input. Recorded as mm_unchecked + add_ record it (MmBackward0
// into AddmmBackward0), over a second handle to the same output.
Result<Tensor> addmm_rounded_once(const Tensor& bias, const Tensor& mat1, const Tensor& mat2) {
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty({mat1.size(0), mat2.size(1)},
                                                  TensorOptions(mat1.dtype()).device(mat1.device())));
  EMBER_ASSIGN_OR_RETURN(const Tensor mat1_3, core::unsqueeze(mat1.detach(), 0));
  EMBER_ASSIGN_OR_RETURN(const Tensor mat2_3, core::unsqueeze(mat2.detach(), 0));
  EMBER_ASSIGN_OR_RETURN(const Tensor bias_3, core::unsqueeze(bias.detach(), 0));
  EMBER_ASSIGN_OR_RETURN(const Tensor out3, core::unsqueeze(out, 0));
  EMBER_TRY(run_kernel(OpKind::MatMul, {mat1_3, mat2_3, bias_3}, {out3}));
  if (autograd::needs_grad({bias, mat1, mat2})) {
    const Tensor product = out.detach();
    recorded(product, mat1, mat2);
    autograd::record(GradRule::Addmm, out, {product, bias});
  }
  return out;
}

// addmm(self, mat1, mat2) with beta = alpha = 1: self broadcast to the product's shape.
Result<Tensor> addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2) {
  EMBER_CHECK(self.dtype() == mat2.dtype(), Status::DTypeMismatch, "self and mat2 must have the same dtype");
  EMBER_CHECK(mat1.dim() == 2, Status::InvalidArgument, "mat1 must be a matrix, got ", mat1.dim(), "-D tensor");
  EMBER_CHECK(mat2.dim() == 2, Status::InvalidArgument, "mat2 must be a matrix, got ", mat2.dim(), "-D tensor");
  EMBER_CHECK(mat1.size(1) == mat2.size(0), Status::ShapeMismatch, "mat1 and mat2 shapes cannot be multiplied (",
              matrix_str(mat1), " and ", matrix_str(mat2), ")");
  EMBER_ASSIGN_OR_RETURN(const Tensor bias, core::expand(self, {mat1.size(0), mat2.size(1)}));
  EMBER_TRY(check_same_device({self, mat1, mat2}));
  EMBER_TRY(check_gemm_dtype("addmm_impl_cpu_", mat1, mat2));
  if (mat1.dtype() == DType::BFloat16 && mat1.device().is_cpu()) return addmm_rounded_once(bias, mat1, mat2);
  EMBER_ASSIGN_OR_RETURN(Tensor out, mm_unchecked(mat1, mat2));
  EMBER_TRY(core::add_(out, bias));
  autograd::rename_grad_fn(out, GradRule::Addmm);
  return out;
}

// torch.matmul folds the batch of a >= 3-D operand into the rows of an mm/mv
// when the other is 1-D or 2-D, unless the 3-D operand's last two dims are
// transposed in a batch-outermost layout (then bmm reads it as it is).
bool should_fold(const Tensor& t1, int64_t dim2) {
  const int64_t dim1 = t1.dim();
  if (dim1 < 3 || (dim2 != 1 && dim2 != 2)) return false;
  if (dim1 == 3 && dim2 == 2 && t1.stride(2) != 1 && t1.stride(0) == t1.size(1) * t1.size(2)) return false;
  return true;
}

Shape slice_shape(const Shape& s, size_t begin, size_t end) { return Shape(s.begin() + begin, s.begin() + end); }

// A view of a product matmul made (torch's _unsafe_view: UnsafeViewBackward0).
Result<Tensor> unsafe_view(const Tensor& product, IntArrayRef shape) {
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::view(product, shape));
  autograd::rename_grad_fn(out, GradRule::UnsafeView);
  return out;
}

// How many leading batch dims of t ([batch..., rows, cols]) keep the rest from
// merging into one stride (0: reshape to [batch, rows, cols] is a view).
size_t unmerged_batch_dims(const Tensor& t) {
  size_t lead = 0;
  for (int64_t i = 0; i + 3 < t.dim(); ++i) {
    if (t.stride(i) != t.stride(i + 1) * t.size(i + 1)) lead = static_cast<size_t>(i) + 1;
  }
  return lead;
}

// matmul's batched product when the batch dims do not merge (attention's heads
// read through a permute: [B, H, S, D] with H and S swapped in memory), where
// reshape would copy both operands: one MatMul kernel call per index of the
// first `lead` batch dims, each reading its [rest, rows, cols] block where it
// lies (the kernels take any strides). e1, e2: the operands expanded to
// `batch_shape` + their matrix dims. Returns [batch_shape..., n, p].
Result<Tensor> bmm_in_place(const Tensor& e1, const Tensor& e2, size_t lead, const Shape& batch_shape) {
  const int64_t nb = static_cast<int64_t>(batch_shape.size());
  const int64_t n = e1.size(-2), m = e1.size(-1), p = e2.size(-1);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < nb; ++d) (static_cast<size_t>(d) < lead ? outer : inner) *= batch_shape[d];
  EMBER_CHECK(e2.size(-2) == m, Status::ShapeMismatch, "Expected size for first two dimensions of batch2 tensor to be: [",
              outer * inner, ", ", m, "] but got: [", outer * inner, ", ", e2.size(-2), "].");
  EMBER_TRY(check_gemm_dtype("bmm", e1, e2));
  Shape full = batch_shape;
  full.insert(full.end(), {n, p});
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty(full, TensorOptions(e1.dtype())));
  EMBER_ASSIGN_OR_RETURN(const Tensor out4, core::view(out, {outer, inner, n, p}));
  const bool bf16 = t_bf16_products;  // (the products may run on other threads)
  // The stride of the merged inner batch dims (any value when there are none).
  auto inner_stride = [&](const Tensor& t) { return static_cast<size_t>(nb) > lead ? t.stride(nb - 1) : 0; };
  auto product = [&](int64_t o) -> Status {
    int64_t off1 = e1.storage_offset(), off2 = e2.storage_offset(), rest = o;
    for (int64_t d = static_cast<int64_t>(lead) - 1; d >= 0; --d) {
      const int64_t i = rest % batch_shape[d];
      rest /= batch_shape[d];
      off1 += i * e1.stride(d);
      off2 += i * e2.stride(d);
    }
    EMBER_ASSIGN_OR_RETURN(const Tensor a3,
                           core::as_strided(e1, {inner, n, m}, {inner_stride(e1), e1.stride(-2), e1.stride(-1)}, off1));
    EMBER_ASSIGN_OR_RETURN(const Tensor b3,
                           core::as_strided(e2, {inner, m, p}, {inner_stride(e2), e2.stride(-2), e2.stride(-1)}, off2));
    EMBER_ASSIGN_OR_RETURN(const Tensor out3, core::select(out4, 0, o));
    return run_matmul(a3, b3, out3, bf16);
  };
  // Small products (attention's heads, [batch, heads] with the heads
  // interleaved): the threads split the outer index, each running its
  // products one at a time (the kernel's regions run inline), so a thread
  // reads the rows of the images a Linear's row split left in its cache:
  // ops_bench matmul_attn_qk_8x12x128x32, 2 threads: 0.56 -> 0.51 ms. A
  // failure is reported by running the products again on the caller.
  const int threads = get_num_threads();
  const bool small = static_cast<double>(n) * static_cast<double>(m) * static_cast<double>(p) < 128.0 * 128.0 * 128.0;
  if (threads > 1 && small && outer % threads == 0) {
    std::atomic<bool> ok{true};
    parallel_for(0, outer, 1, [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1 && ok.load(std::memory_order_relaxed); ++o) {
        if (product(o) != Status::Ok) ok = false;
      }
    });
    if (ok.load()) return out;
  }
  for (int64_t o = 0; o < outer; ++o) EMBER_TRY(product(o));
  return out;
}

// matmul's 1-D / 2-D operand against the batch of a >= 3-D one, folded into
// the rows of an mm / mv (should_fold).
Result<Tensor> matmul_folded(const Tensor& a, const Tensor& b) {
  const int64_t dim1 = a.dim(), dim2 = b.dim();
  const bool transpose = dim2 > dim1;
  Tensor t1 = a;
  if (transpose) {
    EMBER_ASSIGN_OR_RETURN(t1, core::transpose(b, -2, -1));
  }
  Tensor t2 = b;
  if (transpose && dim1 == 2) {
    EMBER_ASSIGN_OR_RETURN(t2, core::t(a));
  } else if (transpose) {
    t2 = a;
  }
  const Shape& sizes1 = t1.sizes();
  Shape out_shape = slice_shape(sizes1, 0, sizes1.size() - 1);
  int64_t folded = 1;
  for (int64_t s : out_shape) folded *= s;
  EMBER_ASSIGN_OR_RETURN(const Tensor t1_folded, core::reshape(t1, {folded, sizes1.back()}));
  if (t2.dim() == 2) {
    out_shape.push_back(t2.size(1));
    EMBER_ASSIGN_OR_RETURN(const Tensor product, core::mm(t1_folded, t2));
    EMBER_ASSIGN_OR_RETURN(const Tensor out, unsafe_view(product, out_shape));
    if (!transpose) return out;
    EMBER_ASSIGN_OR_RETURN(const Tensor out_t, core::transpose(out, -2, -1));
    return core::contiguous(out_t);
  }
  EMBER_ASSIGN_OR_RETURN(const Tensor product, mv(t1_folded, t2));
  return unsafe_view(product, out_shape);
}

}  // namespace

Result<Tensor> core::mm(const Tensor& a, const Tensor& b) {
  if (amp::Cast c = amp::autocast(amp::Op::Mm, {a, b})) return core::mm(c[0], c[1]);
  EMBER_CHECK(a.dim() == 2, Status::InvalidArgument, "self must be a matrix");
  EMBER_CHECK(b.dim() == 2, Status::InvalidArgument, "mat2 must be a matrix");
  EMBER_CHECK(a.size(1) == b.size(0), Status::ShapeMismatch, "mat1 and mat2 shapes cannot be multiplied (",
              matrix_str(a), " and ", matrix_str(b), ")");
  EMBER_TRY(check_same_device({a, b}));
  EMBER_TRY(check_gemm_dtype("addmm_impl_cpu_", a, b));
  return mm_unchecked(a, b);
}

Result<Tensor> core::bmm(const Tensor& a, const Tensor& b) {
  if (amp::Cast c = amp::autocast(amp::Op::Bmm, {a, b})) return core::bmm(c[0], c[1]);
  EMBER_CHECK(a.dim() == 3, Status::InvalidArgument, "batch1 must be a 3D tensor");
  EMBER_CHECK(b.dim() == 3, Status::InvalidArgument, "batch2 must be a 3D tensor");
  EMBER_CHECK(b.size(0) == a.size(0) && b.size(1) == a.size(2), Status::ShapeMismatch,
              "Expected size for first two dimensions of batch2 tensor to be: [", a.size(0), ", ", a.size(2),
              "] but got: [", b.size(0), ", ", b.size(1), "].");
  EMBER_TRY(check_same_device({a, b}));
  EMBER_TRY(check_gemm_dtype("bmm", a, b));
  EMBER_ASSIGN_OR_RETURN(Tensor out,
                         core::empty({a.size(0), a.size(1), b.size(2)}, TensorOptions(a.dtype()).device(a.device())));
  EMBER_TRY(run_matmul(a, b, out));
  return recorded(out, a, b, GradRule::Bmm);
}

Result<Tensor> core::matmul(const Tensor& a, const Tensor& b) {
  if (amp::Cast c = amp::autocast(amp::Op::Matmul, {a, b})) return core::matmul(c[0], c[1]);
  const int64_t dim1 = a.dim(), dim2 = b.dim();
  EMBER_CHECK(dim1 != 0 && dim2 != 0, Status::InvalidArgument,
              "both arguments to matmul need to be at least 1D, but they are ", dim1, "D and ", dim2, "D");
  if (dim1 == 1 && dim2 == 1) return dot(a, b);
  if (dim1 == 2 && dim2 == 1) return mv(a, b);
  if (dim1 == 1 && dim2 == 2) {
    EMBER_ASSIGN_OR_RETURN(const Tensor a2, core::unsqueeze(a, 0));
    EMBER_ASSIGN_OR_RETURN(const Tensor product, core::mm(a2, b));
    return core::squeeze(product, 0);
  }
  if (dim1 == 2 && dim2 == 2) return core::mm(a, b);
  if (should_fold(a, dim2) || should_fold(b, dim1)) return matmul_folded(a, b);
  // Batched: broadcast the batch dims, flatten them and run bmm.
  const int64_t n = dim1 > 1 ? a.size(-2) : 1;
  const int64_t m1 = a.size(-1);
  const int64_t m2 = dim2 > 1 ? b.size(-2) : b.size(0);
  const int64_t p = dim2 > 1 ? b.size(-1) : 1;
  const Shape batch1 = slice_shape(a.sizes(), 0, static_cast<size_t>(std::max<int64_t>(dim1 - 2, 0)));
  const Shape batch2 = slice_shape(b.sizes(), 0, static_cast<size_t>(std::max<int64_t>(dim2 - 2, 0)));
  EMBER_ASSIGN_OR_RETURN(const Shape out_shape, core::broadcast_shapes(batch1, batch2));
  int64_t batch = 1;
  for (int64_t s : out_shape) batch *= s;
  Shape expand1 = out_shape, expand2 = out_shape;
  expand1.insert(expand1.end(), {n, m1});
  expand2.insert(expand2.end(), {m2, p});
  EMBER_ASSIGN_OR_RETURN(const Tensor e1, core::expand(a, expand1));
  EMBER_ASSIGN_OR_RETURN(const Tensor e2, core::expand(b, expand2));
  Shape result_shape = out_shape;
  if (dim1 > 1) result_shape.push_back(n);
  if (dim2 > 1) result_shape.push_back(p);
  const size_t lead = std::max(unmerged_batch_dims(e1), unmerged_batch_dims(e2));
  if (lead > 0 && a.device().is_cpu() && b.device().is_cpu() && !autograd::needs_grad({a, b})) {
    EMBER_ASSIGN_OR_RETURN(const Tensor out, bmm_in_place(e1, e2, lead, out_shape));
    return core::view(out, result_shape);
  }
  EMBER_ASSIGN_OR_RETURN(const Tensor e1_3, core::reshape(e1, {batch, n, m1}));
  EMBER_ASSIGN_OR_RETURN(const Tensor e2_3, core::reshape(e2, {batch, m2, p}));
  EMBER_ASSIGN_OR_RETURN(const Tensor product, core::bmm(e1_3, e2_3));
  return unsafe_view(product, result_shape);
}

Result<Tensor> core::linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (amp::Cast c = amp::autocast(amp::Op::Linear, {x, weight, bias})) return core::linear(c[0], c[1], c[2]);
  if (x.dim() == 2 && bias.defined()) {
    EMBER_ASSIGN_OR_RETURN(const Tensor weight_t, core::t(weight));
    return addmm(bias, x, weight_t);
  }
  if (bias.defined() && x.dim() == 3 && x.is_contiguous()) {
    // The fused path PyTorch takes for contiguous 3-D input.
    EMBER_ASSIGN_OR_RETURN(const Tensor x2, core::view(x, {x.size(0) * x.size(1), x.size(2)}));
    EMBER_ASSIGN_OR_RETURN(const Tensor weight_t, core::t(weight));
    EMBER_ASSIGN_OR_RETURN(const Tensor out, addmm(bias, x2, weight_t));
    return core::view(out, {x.size(0), x.size(1), out.size(1)});
  }
  EMBER_ASSIGN_OR_RETURN(const Tensor weight_t, core::t(weight));
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::matmul(x, weight_t));
  if (bias.defined()) EMBER_TRY(core::add_(out, bias));
  return out;
}

Tensor mm(const Tensor& a, const Tensor& b) { return unwrap(core::mm(a, b)); }
Tensor bmm(const Tensor& a, const Tensor& b) { return unwrap(core::bmm(a, b)); }
Tensor matmul(const Tensor& a, const Tensor& b) { return unwrap(core::matmul(a, b)); }
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return unwrap(core::linear(x, weight, bias));
}

namespace {

// x [*, K] @ b [K, N] as linear() and matmul() compute it for a float32 CPU
// x of 2 dims or contiguous (addmm, or the batch dims folded into the rows of
// mm: the MatMul kernel on x [rows, K] and b), the kernel reading
// `kernel_params.weight` (packed) and adding its bias, then its activation;
// undefined when the inputs are not such (or need a gradient).
Result<Tensor> product_prepacked(const Tensor& x, const Tensor& b, const LinearParams& kernel_params) {
  const PreparedWeight* packed = kernel_params.weight;
  const bool fits = packed != nullptr && x.device().is_cpu() && b.device().is_cpu() && x.dtype() == DType::Float32 &&
                    b.dtype() == DType::Float32 && b.dim() == 2 && (x.dim() == 2 || (x.dim() > 2 && x.is_contiguous())) &&
                    x.size(-1) == b.size(0) && !autograd::needs_grad({x, b});
  if (!fits) return Tensor();
  EMBER_ASSIGN_OR_RETURN(const Tensor x2, core::reshape(x, {-1, b.size(0)}));
  EMBER_ASSIGN_OR_RETURN(const Tensor out, core::empty({x2.size(0), b.size(1)}, TensorOptions(x.dtype())));
  EMBER_ASSIGN_OR_RETURN(const Tensor x3, core::unsqueeze(x2, 0));
  EMBER_ASSIGN_OR_RETURN(const Tensor b3, core::unsqueeze(b, 0));
  EMBER_ASSIGN_OR_RETURN(const Tensor out3, core::unsqueeze(out, 0));
  EMBER_TRY(run_kernel(OpKind::MatMul, {x3, b3}, {out3}, kernel_params));
  Shape shape = x.sizes();
  shape.back() = b.size(1);
  return core::view(out, shape);
}

}  // namespace

Result<Tensor> core::linear_prepacked(const Tensor& x, const Tensor& weight, const Tensor& bias, const LinearParams& p,
                                      bool* activated) {
  *activated = false;
  if (amp::Cast c = amp::autocast(amp::Op::Linear, {x, weight, bias})) return core::linear(c[0], c[1], c[2]);
  const bool bias_fits = !bias.defined() || (bias.device().is_cpu() && bias.dtype() == DType::Float32 &&
                                             bias.dim() == 1 && bias.is_contiguous() && weight.dim() == 2 &&
                                             bias.size(0) == weight.size(0) && !autograd::needs_grad({bias}));
  // The kernel adds the bias (after the product, as addmm / linear do) and
  // applies the activation as it stores the product.
  LinearParams kernel_params = p;
  kernel_params.bias = bias.defined() && bias_fits ? bias.data_ptr<float>() : nullptr;
  Tensor out;
  if (bias_fits && weight.dim() == 2) {
    EMBER_ASSIGN_OR_RETURN(const Tensor weight_t, core::t(weight));
    EMBER_ASSIGN_OR_RETURN(out, product_prepacked(x, weight_t, kernel_params));
  }
  if (!out.defined()) return core::linear(x, weight, bias);
  *activated = true;
  return out;
}

Result<Tensor> core::matmul_prepacked(const Tensor& a, const Tensor& b, const PreparedWeight* packed, bool bf16) {
  if (amp::autocast(amp::Op::Matmul, {a, b})) return core::matmul(a, b);
  LinearParams kernel_params;
  kernel_params.weight = packed;
  EMBER_ASSIGN_OR_RETURN(const Tensor out, product_prepacked(a, b, kernel_params));
  if (out.defined()) return out;
  if (!bf16 || autograd::needs_grad({a, b})) return core::matmul(a, b);
  struct Scope {
    bool previous = t_bf16_products;
    Scope() { t_bf16_products = true; }
    ~Scope() { t_bf16_products = previous; }
  } scope;
  return core::matmul(a, b);
}

Tensor linear_prepacked(const Tensor& x, const Tensor& weight, const Tensor& bias, const LinearParams& p,
                        bool* activated) {
  return unwrap(core::linear_prepacked(x, weight, bias, p, activated));
}

Tensor matmul_prepacked(const Tensor& a, const Tensor& b, const PreparedWeight* packed, bool bf16) {
  return unwrap(core::matmul_prepacked(a, b, packed, bf16));
}

Tensor Tensor::matmul(const Tensor& other) const { return ember::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& other) const { return ember::mm(*this, other); }

}  // namespace ember

// Selection and scans: topk, sort, argsort (the TopK kernel: ties keep the
// lower index first, so sort is stable), nonzero (counted on the host: its
// output size depends on the values), cumsum, cumprod (the CumSum / CumProd
// kernels; integer and bool inputs accumulate into int64, as PyTorch).
#include <algorithm>

#include "runtime/amp/autocast.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {

namespace {

Result<std::pair<Tensor, Tensor>> select_sorted(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted,
                                                GradRule rule) {
  EMBER_ASSIGN_OR_RETURN(const int64_t d, core::wrap_dim(dim, std::max<int64_t>(x.dim(), 1)));
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  EMBER_CHECK(k >= 0 && k <= n, Status::OutOfRange, "selected index k out of range");
  Shape shape = x.sizes();
  if (x.dim() > 0) shape[static_cast<size_t>(d)] = k;
  EMBER_ASSIGN_OR_RETURN(Tensor values, core::empty(shape, TensorOptions(x.dtype()).device(x.device())));
  EMBER_ASSIGN_OR_RETURN(Tensor indices, core::empty(shape, TensorOptions(DType::Int64).device(x.device())));
  if (values.numel() > 0) {
    EMBER_TRY(run_kernel(OpKind::TopK, {x}, {values, indices}, TopKParams{d, largest, sorted}));
  }
  if (Node* node = autograd::record(rule, values, {x})) {
    node->save(indices);
    node->ints = {d};
  }
  return std::pair<Tensor, Tensor>{values, indices};
}

}  // namespace

Result<std::pair<Tensor, Tensor>> core::topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  return select_sorted(x, k, dim, largest, sorted, GradRule::TopK);
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  return unwrap(core::topk(x, k, dim, largest, sorted));
}

Result<std::pair<Tensor, Tensor>> core::sort(const Tensor& x, int64_t dim, bool descending) {
  EMBER_ASSIGN_OR_RETURN(const int64_t d, core::wrap_dim(dim, std::max<int64_t>(x.dim(), 1)));
  return select_sorted(x, x.dim() == 0 ? 1 : x.size(d), d, descending, true, GradRule::Sort);
}

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending) {
  return unwrap(core::sort(x, dim, descending));
}

Result<Tensor> core::argsort(const Tensor& x, int64_t dim, bool descending) {
  NoGradGuard no_grad;
  EMBER_ASSIGN_OR_RETURN(auto sorted, core::sort(x, dim, descending));
  return sorted.second;
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending) { return unwrap(core::argsort(x, dim, descending)); }

Result<Tensor> core::nonzero(const Tensor& x) {
  EMBER_ASSIGN_OR_RETURN(const Tensor host, core::to(x, Device(DeviceType::CPU)));
  EMBER_ASSIGN_OR_RETURN(const Tensor c, core::contiguous(host));
  const int64_t rank = c.dim();
  std::vector<int64_t> flat;
  dispatch_dtype(c.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = c.data_ptr<T>();
    for (int64_t i = 0; i < c.numel(); ++i) {
      if (static_cast<compute_t<T>>(p[i]) != compute_t<T>(0)) flat.push_back(i);
    }
  });
  const int64_t count = static_cast<int64_t>(flat.size());
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty({count, rank}, DType::Int64));
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t j = 0; j < count; ++j) {
    int64_t rest = flat[static_cast<size_t>(j)];
    for (int64_t d = rank - 1; d >= 0; --d) {
      o[j * rank + d] = rest % c.size(d);
      rest /= c.size(d);
    }
  }
  return core::to(out, x.device());
}

Tensor nonzero(const Tensor& x) { return unwrap(core::nonzero(x)); }

Result<Tensor> core::cumulative(const Tensor& x, int64_t dim, bool product, bool exclusive, bool reverse) {
  EMBER_ASSIGN_OR_RETURN(const int64_t d, core::wrap_dim(dim, std::max<int64_t>(x.dim(), 1)));
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty(x.sizes(), TensorOptions(x.dtype()).device(x.device())));
  if (out.numel() > 0) {
    EMBER_TRY(run_kernel(product ? OpKind::CumProd : OpKind::CumSum, {x}, {out}, ScanParams{d, exclusive, reverse}));
  }
  return out;
}

Tensor cumulative(const Tensor& x, int64_t dim, bool product, bool exclusive, bool reverse) {
  return unwrap(core::cumulative(x, dim, product, exclusive, reverse));
}

namespace {

Result<Tensor> scan_front_end(const Tensor& x, int64_t dim, std::optional<DType> dtype, bool product) {
  EMBER_ASSIGN_OR_RETURN(const int64_t d, core::wrap_dim(dim, std::max<int64_t>(x.dim(), 1)));
  const DType dt = dtype ? *dtype : (is_integral(x.dtype(), /*include_bool=*/true) ? DType::Int64 : x.dtype());
  Tensor out;
  {
    NoGradGuard no_grad;
    EMBER_ASSIGN_OR_RETURN(const Tensor in, core::to(x, dt));
    EMBER_ASSIGN_OR_RETURN(out, core::cumulative(in, d, product, false, false));
  }
  if (Node* n = autograd::record(product ? GradRule::Cumprod : GradRule::Cumsum, out, {x})) {
    n->ints = {d};
    if (product) n->save(x).save(out);
  }
  return out;
}

}  // namespace

Result<Tensor> core::cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (!dtype) {
    if (amp::Cast c = amp::autocast(amp::Op::Cumsum, {x})) return core::cumsum(c[0], dim);
  }
  return scan_front_end(x, dim, dtype, false);
}

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) { return unwrap(core::cumsum(x, dim, dtype)); }

Result<Tensor> core::cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (!dtype) {
    if (amp::Cast c = amp::autocast(amp::Op::Cumprod, {x})) return core::cumprod(c[0], dim);
  }
  return scan_front_end(x, dim, dtype, true);
}

Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return unwrap(core::cumprod(x, dim, dtype));
}

}  // namespace ember

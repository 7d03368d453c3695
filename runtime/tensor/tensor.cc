// Tensor metadata and views. Views share storage and only compute new sizes,
// strides and offsets; their checks and messages follow PyTorch.
#include "runtime/tensor/tensor.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "runtime/autograd/node.h"
#include "runtime/ops/dispatch.h"

namespace ember {

std::string shape_str(IntArrayRef sizes) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < sizes.size(); ++i) os << (i ? ", " : "") << sizes[i];
  os << "]";
  return os.str();
}

Result<int64_t> core::wrap_dim(int64_t dim, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);  // 0-dim tensors accept -1 and 0
  EMBER_CHECK(dim >= -r && dim < r, Status::OutOfRange,
              "Dimension out of range (expected to be in range of [", -r, ", ", r - 1,
              "], but got ", dim, ")");
  return dim < 0 ? dim + r : dim;
}

int64_t wrap_dim(int64_t dim, int64_t rank) { return unwrap(core::wrap_dim(dim, rank)); }

namespace {

int64_t numel_of(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// The element count of `sizes` (non-negative), or PyTorch's error when it
// does not fit in int64.
Result<int64_t> checked_numel(IntArrayRef sizes) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) overflow = __builtin_mul_overflow(n, s, &n) || overflow;
  for (int64_t s : sizes) {
    if (s == 0) return int64_t{0};
  }
  EMBER_CHECK(!overflow, Status::OutOfRange, "numel: integer multiplication overflow (sizes ", shape_str(sizes),
              ")");
  return n;
}

Shape contiguous_strides(IntArrayRef sizes) {
  Shape strides(sizes.size());
  int64_t expected = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = expected;
    // Saturates where the product overflows: the allocation refuses such sizes (storage_bytes).
    if (__builtin_mul_overflow(expected, std::max<int64_t>(sizes[d], 1), &expected)) expected = INT64_MAX;
  }
  return strides;
}

Shape channels_last_strides(IntArrayRef sizes) {
  // NHWC order: C fastest, then W, H, N.
  Shape strides(4);
  int64_t expected = 1;
  for (int d : {1, 3, 2, 0}) {
    strides[d] = expected;
    if (__builtin_mul_overflow(expected, std::max<int64_t>(sizes[d], 1), &expected)) expected = INT64_MAX;
  }
  return strides;
}

// Fills in a -1 entry of a requested shape (PyTorch's infer_size).
Result<Shape> infer_size(IntArrayRef requested, int64_t numel) {
  Shape out(requested.begin(), requested.end());
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == -1) {
      EMBER_CHECK(!infer, Status::InvalidArgument, "only one dimension can be inferred");
      infer = d;
    } else {
      EMBER_CHECK(out[d] >= 0, Status::InvalidArgument, "invalid shape dimension ", out[d]);
      known *= out[d];
    }
  }
  const bool ok = infer ? (known != 0 && numel % known == 0) : numel == known;
  EMBER_CHECK(ok, Status::ShapeMismatch, "shape '", shape_str(requested),
              "' is invalid for input of size ", numel);
  if (infer) out[*infer] = numel / known;
  return out;
}

// Strides that let a tensor of (sizes, strides) be viewed as new_sizes without a
// copy, or nullopt (PyTorch's computeStride).
std::optional<Shape> view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes) {
  const int64_t numel = numel_of(sizes);
  Shape new_strides(new_sizes.size());
  if (numel == 0) {
    if (std::equal(sizes.begin(), sizes.end(), new_sizes.begin(), new_sizes.end())) {
      return Shape(strides.begin(), strides.end());
    }
    return contiguous_strides(new_sizes);
  }
  if (sizes.empty()) return contiguous_strides(new_sizes);  // a 0-dim tensor: any all-ones shape
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.size() ? strides[strides.size() - 1] : 1;
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

// Records a view op for autograd: `out` shares `self`'s storage. A failed
// `out` (core::make's checks) passes through unrecorded.
Result<Tensor> record_view(const Tensor& self, Result<Tensor> out, GradRule rule, std::vector<int64_t> ints = {}) {
  if (!out.ok()) return out.status();
  if (Node* n = autograd::record_view(rule, *out, self)) n->ints = std::move(ints);
  return std::move(*out);
}

}  // namespace

Result<Tensor> core::make(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  EMBER_ASSERT(sizes.size() == strides.size(), "sizes and strides differ in rank");
  EMBER_TRY(checked_numel(sizes));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->dtype = dtype;
  impl->offset = offset;
  impl->sizes.assign(sizes.begin(), sizes.end());
  impl->strides.assign(strides.begin(), strides.end());
  return Tensor(std::move(impl));
}

Tensor Tensor::make(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  return unwrap(core::make(std::move(storage), dtype, sizes, strides, offset));
}

Result<size_t> core::storage_bytes(IntArrayRef sizes, IntArrayRef strides, int64_t offset, size_t itemsize) {
  EMBER_ASSIGN_OR_RETURN(const int64_t numel, checked_numel(sizes));
  int64_t last = offset;
  bool overflow = false;
  for (size_t d = 0; numel > 0 && d < sizes.size(); ++d) {
    int64_t step = 0;
    overflow = __builtin_mul_overflow(sizes[d] - 1, strides[d], &step) || overflow;
    overflow = __builtin_add_overflow(last, step, &last) || overflow;
  }
  int64_t bytes = 0;
  overflow = __builtin_mul_overflow(numel > 0 ? last + 1 : offset, static_cast<int64_t>(itemsize), &bytes) ||
             overflow;
  EMBER_CHECK(!overflow, Status::OutOfRange, "Storage size calculation overflowed with sizes=", shape_str(sizes),
              " and strides=", shape_str(strides));
  return static_cast<size_t>(bytes);
}

size_t storage_bytes(IntArrayRef sizes, IntArrayRef strides, int64_t offset, size_t itemsize) {
  return unwrap(core::storage_bytes(sizes, strides, offset, itemsize));
}

int64_t Tensor::size(int64_t dim) const { return sizes()[wrap_dim(dim, this->dim())]; }
int64_t Tensor::stride(int64_t dim) const { return strides()[wrap_dim(dim, this->dim())]; }
int64_t Tensor::numel() const { return numel_of(sizes()); }

bool Tensor::is_contiguous(MemoryFormat format) const {
  if (numel() == 0) return true;
  if (format == MemoryFormat::ChannelsLast) {
    if (dim() != 4) return false;
    int64_t expected = 1;
    for (int d : {1, 3, 2, 0}) {
      if (sizes()[d] != 1) {
        if (strides()[d] != expected) return false;
        expected *= sizes()[d];
      }
    }
    return true;
  }
  int64_t expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (sizes()[d] != 1) {
      if (strides()[d] != expected) return false;
      expected *= sizes()[d];
    }
  }
  return true;
}

void* Tensor::data_ptr() const {
  return static_cast<char*>(storage()->data()) + storage_offset() * static_cast<int64_t>(element_size());
}

Status core::check_dtype(const Tensor& self, DType expected) {
  EMBER_CHECK(self.dtype() == expected, Status::DTypeMismatch, "expected scalar type ",
              dtype_legacy_name(expected), " but found ", dtype_legacy_name(self.dtype()));
  return Status::Ok;
}

void Tensor::check_dtype(DType expected) const { unwrap(core::check_dtype(*this, expected)); }

Result<TensorView> core::kernel_view(const Tensor& self) {
  EMBER_CHECK(self.dim() <= kMaxRank, Status::NotSupported, "ember kernels support tensors of up to ",
              kMaxRank, " dimensions, got ", self.dim());
  TensorView v;
  v.data = self.data_ptr();
  v.dtype = self.dtype();
  v.rank = static_cast<int>(self.dim());
  for (int d = 0; d < v.rank; ++d) {
    v.sizes[d] = self.sizes()[d];
    v.strides[d] = self.strides()[d];
  }
  return v;
}

TensorView Tensor::kernel_view() const { return unwrap(core::kernel_view(*this)); }

Result<Tensor> core::as_strided(const Tensor& self, IntArrayRef sizes, IntArrayRef strides,
                                std::optional<int64_t> storage_offset) {
  EMBER_CHECK(sizes.size() == strides.size(), Status::InvalidArgument,
              "mismatch in length of strides and shape");
  const int64_t offset = storage_offset.value_or(self.storage_offset());
  EMBER_CHECK(offset >= 0, Status::InvalidArgument, "Tensor: invalid storage offset ", offset);
  for (size_t d = 0; d < sizes.size(); ++d) {
    EMBER_CHECK(sizes[d] >= 0, Status::InvalidArgument,
                "Trying to create tensor with negative dimension ", sizes[d], ": ", shape_str(sizes));
    EMBER_CHECK(strides[d] >= 0, Status::InvalidArgument,
                "as_strided: Negative strides are not supported at the moment, got strides: ",
                shape_str(strides));
  }
  EMBER_ASSIGN_OR_RETURN(const size_t bytes, core::storage_bytes(sizes, strides, offset, self.element_size()));
  const int64_t need = static_cast<int64_t>(bytes);
  const int64_t have = static_cast<int64_t>(self.storage()->nbytes());
  EMBER_CHECK(need <= have, Status::OutOfRange, "setStorage: sizes ", shape_str(sizes), ", strides ",
              shape_str(strides), ", storage offset ", offset, ", and itemsize ", self.element_size(),
              " requiring a storage size of ", need, " are out of bounds for storage of size ", have);
  EMBER_CHECK(!autograd::needs_grad({self}) || self.is_contiguous(), Status::NotSupported,
              "as_strided: autograd supports only contiguous inputs");
  return record_view(self, core::make(self.storage(), self.dtype(), sizes, strides, offset), GradRule::AsStrided,
                     as_strided_geometry(self, sizes, strides, offset));
}

Tensor Tensor::as_strided(IntArrayRef sizes, IntArrayRef strides, std::optional<int64_t> storage_offset) const {
  return unwrap(core::as_strided(*this, sizes, strides, storage_offset));
}

Result<Tensor> core::view(const Tensor& self, IntArrayRef sizes) {
  EMBER_ASSIGN_OR_RETURN(const Shape shape, infer_size(sizes, self.numel()));
  const std::optional<Shape> strides = view_strides(self.sizes(), self.strides(), shape);
  EMBER_CHECK(strides.has_value(), Status::InvalidArgument,
              "view size is not compatible with input tensor's size and stride (at least one "
              "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  return record_view(self, core::make(self.storage(), self.dtype(), shape, *strides, self.storage_offset()),
                     GradRule::View);
}

Tensor Tensor::view(IntArrayRef sizes) const { return unwrap(core::view(*this, sizes)); }

Result<Tensor> core::reshape(const Tensor& self, IntArrayRef sizes) {
  EMBER_ASSIGN_OR_RETURN(const Shape shape, infer_size(sizes, self.numel()));
  if (std::optional<Shape> strides = view_strides(self.sizes(), self.strides(), shape)) {
    return record_view(self, core::make(self.storage(), self.dtype(), shape, *strides, self.storage_offset()),
                       GradRule::ReshapeAlias);
  }
  EMBER_ASSIGN_OR_RETURN(const Tensor copy, core::contiguous(self));
  return record_view(copy,
                     core::make(copy.storage(), self.dtype(), shape, contiguous_strides(shape), copy.storage_offset()),
                     GradRule::UnsafeView);
}

Tensor Tensor::reshape(IntArrayRef sizes) const { return unwrap(core::reshape(*this, sizes)); }

Result<Tensor> core::flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) return core::reshape(self, {1});
  EMBER_ASSIGN_OR_RETURN(start_dim, core::wrap_dim(start_dim, self.dim()));
  EMBER_ASSIGN_OR_RETURN(end_dim, core::wrap_dim(end_dim, self.dim()));
  EMBER_CHECK(start_dim <= end_dim, Status::InvalidArgument,
              "flatten() has invalid args: start_dim cannot come after end_dim");
  if (start_dim == end_dim) return self;
  Shape shape(self.sizes().begin(), self.sizes().begin() + start_dim);
  int64_t n = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) n *= self.sizes()[d];
  shape.push_back(n);
  shape.insert(shape.end(), self.sizes().begin() + end_dim + 1, self.sizes().end());
  return core::reshape(self, shape);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  return unwrap(core::flatten(*this, start_dim, end_dim));
}

Result<Tensor> core::transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  EMBER_ASSIGN_OR_RETURN(dim0, core::wrap_dim(dim0, self.dim()));
  EMBER_ASSIGN_OR_RETURN(dim1, core::wrap_dim(dim1, self.dim()));
  if (self.dim() == 0) return self;
  Shape s = self.sizes(), st = self.strides();
  std::swap(s[dim0], s[dim1]);
  std::swap(st[dim0], st[dim1]);
  return record_view(self, core::make(self.storage(), self.dtype(), s, st, self.storage_offset()),
                     GradRule::Transpose, {dim0, dim1});
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const { return unwrap(core::transpose(*this, dim0, dim1)); }

Result<Tensor> core::permute(const Tensor& self, IntArrayRef dims) {
  EMBER_CHECK(static_cast<int64_t>(dims.size()) == self.dim(), Status::InvalidArgument,
              "permute(sparse_coo): number of dimensions in the tensor input does not match the "
              "length of the desired ordering of dimensions i.e. input.dim() = ",
              self.dim(), " is not equal to len(dims) = ", dims.size());
  Shape s(dims.size()), st(dims.size());
  std::vector<bool> seen(dims.size(), false);
  std::vector<int64_t> perm;
  for (size_t i = 0; i < dims.size(); ++i) {
    EMBER_ASSIGN_OR_RETURN(const int64_t d, core::wrap_dim(dims[i], self.dim()));
    EMBER_CHECK(!seen[d], Status::InvalidArgument, "permute(): duplicate dims are not allowed.");
    seen[d] = true;
    s[i] = self.sizes()[d];
    st[i] = self.strides()[d];
    perm.push_back(d);
  }
  return record_view(self, core::make(self.storage(), self.dtype(), s, st, self.storage_offset()),
                     GradRule::Permute, std::move(perm));
}

Tensor Tensor::permute(IntArrayRef dims) const { return unwrap(core::permute(*this, dims)); }

Result<Tensor> core::t(const Tensor& self) {
  EMBER_CHECK(self.dim() <= 2, Status::InvalidArgument,
              "t() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  if (self.dim() < 2) return self;
  const Shape s{self.sizes()[1], self.sizes()[0]}, st{self.strides()[1], self.strides()[0]};
  return record_view(self, core::make(self.storage(), self.dtype(), s, st, self.storage_offset()), GradRule::T,
                     {0, 1});
}

Tensor Tensor::t() const { return unwrap(core::t(*this)); }

Tensor Tensor::squeeze() const {
  Shape s, st;
  for (int64_t d = 0; d < dim(); ++d) {
    if (sizes()[d] != 1) {
      s.push_back(sizes()[d]);
      st.push_back(strides()[d]);
    }
  }
  return unwrap(record_view(*this, make(storage(), dtype(), s, st, storage_offset()), GradRule::Squeeze));
}

Result<Tensor> core::squeeze(const Tensor& self, int64_t d) {
  EMBER_ASSIGN_OR_RETURN(d, core::wrap_dim(d, self.dim()));
  Shape s = self.sizes(), st = self.strides();
  if (self.dim() > 0 && self.sizes()[d] == 1) {
    s.erase(s.begin() + d);
    st.erase(st.begin() + d);
  }
  return record_view(self, core::make(self.storage(), self.dtype(), s, st, self.storage_offset()),
                     GradRule::SqueezeDim);
}

Tensor Tensor::squeeze(int64_t d) const { return unwrap(core::squeeze(*this, d)); }

Result<Tensor> core::unsqueeze(const Tensor& self, int64_t d) {
  EMBER_ASSIGN_OR_RETURN(d, core::wrap_dim(d, self.dim() + 1));
  Shape s = self.sizes(), st = self.strides();
  const int64_t new_stride = d >= self.dim() ? 1 : self.sizes()[d] * self.strides()[d];
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, new_stride);
  return record_view(self, core::make(self.storage(), self.dtype(), s, st, self.storage_offset()),
                     GradRule::Unsqueeze);
}

Tensor Tensor::unsqueeze(int64_t d) const { return unwrap(core::unsqueeze(*this, d)); }

Result<Tensor> core::expand(const Tensor& self, IntArrayRef target) {
  const int64_t n = static_cast<int64_t>(target.size());
  EMBER_CHECK(n >= self.dim(), Status::InvalidArgument, "expand(torch.", dtype_legacy_name(self.dtype()),
              "Tensor{", shape_str(self.sizes()), "}, size=", shape_str(target),
              "): the number of sizes provided (", n,
              ") must be greater or equal to the number of dimensions in the tensor (", self.dim(), ")");
  Shape s(n), st(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t d = i - (n - self.dim());
    const int64_t want = target[i];
    if (d < 0) {
      EMBER_CHECK(want >= 0, Status::InvalidArgument,
                  "The expanded size of the tensor (", want,
                  ") isn't allowed in a leading, non-existing dimension ", i);
      s[i] = want;
      st[i] = 0;
      continue;
    }
    const int64_t have = self.sizes()[d];
    if (want == -1 || want == have) {
      s[i] = have;
      st[i] = self.strides()[d];
    } else {
      EMBER_CHECK(have == 1, Status::ShapeMismatch, "The expanded size of the tensor (", want,
                  ") must match the existing size (", have, ") at non-singleton dimension ", i,
                  ".  Target sizes: ", shape_str(target), ".  Tensor sizes: ", shape_str(self.sizes()));
      s[i] = want;
      st[i] = 0;
    }
  }
  return record_view(self, core::make(self.storage(), self.dtype(), s, st, self.storage_offset()),
                     GradRule::Expand);
}

Tensor Tensor::expand(IntArrayRef target) const { return unwrap(core::expand(*this, target)); }

Result<Tensor> core::narrow(const Tensor& self, int64_t d, int64_t start, int64_t length) {
  EMBER_CHECK(self.dim() > 0, Status::InvalidArgument, "narrow() cannot be applied to a 0-dim tensor.");
  EMBER_ASSIGN_OR_RETURN(d, core::wrap_dim(d, self.dim()));
  const int64_t size = self.sizes()[d];
  EMBER_CHECK(start >= -size && start <= size, Status::OutOfRange, "start out of range (expected to be in range of [",
              -size, ", ", size, "], but got ", start, ")");
  if (start < 0) start += size;
  EMBER_CHECK(length >= 0 && start <= size - length, Status::OutOfRange, "start (", start,
              ") + length (", length, ") exceeds dimension size (", size, ").");
  return core::slice(self, d, start, start + length, 1);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  return unwrap(core::narrow(*this, d, start, length));
}

Result<Tensor> core::select(const Tensor& self, int64_t d, int64_t index) {
  EMBER_CHECK(self.dim() > 0, Status::InvalidArgument, "select() cannot be applied to a 0-dim tensor.");
  EMBER_ASSIGN_OR_RETURN(d, core::wrap_dim(d, self.dim()));
  const int64_t size = self.sizes()[d];
  EMBER_CHECK(index >= -size && index < size, Status::OutOfRange, "select(): index ", index,
              " out of range for tensor of size ", shape_str(self.sizes()), " at dimension ", d);
  if (index < 0) index += size;
  Shape s = self.sizes(), st = self.strides();
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return record_view(self,
                     core::make(self.storage(), self.dtype(), s, st, self.storage_offset() + index * self.strides()[d]),
                     GradRule::Select, {d, index});
}

Tensor Tensor::select(int64_t d, int64_t index) const { return unwrap(core::select(*this, d, index)); }

Result<Tensor> core::slice(const Tensor& self, int64_t d, std::optional<int64_t> start_opt,
                           std::optional<int64_t> end_opt, int64_t step) {
  EMBER_CHECK(self.dim() > 0, Status::InvalidArgument, "slice() cannot be applied to a 0-dim tensor.");
  EMBER_CHECK(step > 0, Status::InvalidArgument, "slice step must be positive");
  EMBER_ASSIGN_OR_RETURN(d, core::wrap_dim(d, self.dim()));
  const int64_t size = self.sizes()[d];
  int64_t start = start_opt.value_or(0), end = end_opt.value_or(size);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  Shape s = self.sizes(), st = self.strides();
  s[d] = (end - start + step - 1) / step;
  st[d] = self.strides()[d] * step;
  return record_view(self,
                     core::make(self.storage(), self.dtype(), s, st, self.storage_offset() + start * self.strides()[d]),
                     GradRule::Slice, {d, start, end, step});
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start_opt, std::optional<int64_t> end_opt,
                     int64_t step) const {
  return unwrap(core::slice(*this, d, start_opt, end_opt, step));
}

Result<Tensor> core::unfold(const Tensor& self, int64_t d, int64_t size, int64_t step) {
  EMBER_ASSIGN_OR_RETURN(d, core::wrap_dim(d, self.dim()));
  const int64_t extent = self.dim() == 0 ? 1 : self.sizes()[d];
  EMBER_CHECK(size <= extent, Status::InvalidArgument, "maximum size for tensor at dimension ", d,
              " is ", extent, " but size is ", size);
  EMBER_CHECK(size >= 0, Status::InvalidArgument, "size is ", size, " but must be >= 0");
  EMBER_CHECK(step > 0, Status::InvalidArgument, "step is ", step, " but must be > 0");
  Shape s = self.sizes(), st = self.strides();
  if (self.dim() == 0) {
    s = {size};
    st = {1};
  } else {
    s[d] = (extent - size) / step + 1;
    st[d] = self.strides()[d] * step;
    s.push_back(size);
    st.push_back(self.strides()[d]);
  }
  return record_view(self, core::make(self.storage(), self.dtype(), s, st, self.storage_offset()),
                     GradRule::Unfold, {d, size, step});
}

Tensor Tensor::unfold(int64_t d, int64_t size, int64_t step) const {
  return unwrap(core::unfold(*this, d, size, step));
}

Tensor Tensor::detach() const { return make(storage(), dtype(), sizes(), strides(), storage_offset()); }

// --- memory formats and copies ------------------------------------------------------

namespace {
// Strides of a new tensor that keeps `t`'s layout (memory_format=preserve): its
// own strides when they are dense and non-overlapping, else contiguous.
Shape preserved_strides(const Tensor& t) {
  if (t.is_contiguous()) return contiguous_strides(t.sizes());
  if (t.is_contiguous(MemoryFormat::ChannelsLast)) return channels_last_strides(t.sizes());
  std::vector<int64_t> perm(t.dim());
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    return t.strides()[a] > t.strides()[b];
  });
  int64_t expected = 1;
  for (int64_t i = t.dim() - 1; i >= 0; --i) {
    const int64_t d = perm[i];
    if (t.sizes()[d] != 1 && t.strides()[d] != expected) return contiguous_strides(t.sizes());
    expected *= std::max<int64_t>(t.sizes()[d], 1);
  }
  Shape out(t.dim());
  expected = 1;
  for (int64_t i = t.dim() - 1; i >= 0; --i) {
    out[perm[i]] = expected;
    expected *= std::max<int64_t>(t.sizes()[perm[i]], 1);
  }
  return out;
}

Result<Shape> strides_for(IntArrayRef sizes, MemoryFormat format) {
  if (format == MemoryFormat::ChannelsLast) {
    EMBER_CHECK(sizes.size() == 4, Status::InvalidArgument,
                "required rank 4 tensor to use channels_last format");
    return channels_last_strides(sizes);
  }
  return contiguous_strides(sizes);
}
}  // namespace

Result<Tensor> core::empty(IntArrayRef sizes, TensorOptions options, MemoryFormat format) {
  EMBER_ASSERT(format != MemoryFormat::Preserve, "empty() takes no preserve format");
  EMBER_ASSIGN_OR_RETURN(const Shape strides, strides_for(sizes, format));
  return core::empty_strided(sizes, strides, options);
}

Tensor empty(IntArrayRef sizes, TensorOptions options, MemoryFormat format) {
  return unwrap(core::empty(sizes, options, format));
}

Result<Tensor> core::empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options) {
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, Status::InvalidArgument, "Trying to create tensor with negative dimension ",
                s, ": ", shape_str(sizes));
  }
  const DType dtype = options.dtype_or(DType::Float32);
  EMBER_ASSIGN_OR_RETURN(const size_t bytes, core::storage_bytes(sizes, strides, 0, ember::element_size(dtype)));
  EMBER_ASSIGN_OR_RETURN(Storage storage, allocate_storage(bytes, options.device_or()));
  return core::make(std::move(storage), dtype, sizes, strides, 0);
}

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options) {
  return unwrap(core::empty_strided(sizes, strides, options));
}

Result<Tensor> core::empty_like(const Tensor& t, TensorOptions options) {
  return core::empty_strided(t.sizes(), preserved_strides(t),
                             TensorOptions(options.dtype_or(t.dtype())).device(options.device_or(t.device())));
}

Tensor empty_like(const Tensor& t, TensorOptions options) { return unwrap(core::empty_like(t, options)); }

Result<Tensor> core::contiguous(const Tensor& self, MemoryFormat format) {
  if (format == MemoryFormat::Preserve) format = MemoryFormat::Contiguous;
  if (self.is_contiguous(format)) return self;
  EMBER_ASSIGN_OR_RETURN(Tensor out,
                         core::empty(self.sizes(), TensorOptions(self.dtype()).device(self.device()), format));
  EMBER_TRY(copy_into(out, self));
  autograd::record(GradRule::Clone, out, {self});
  return out;
}

Tensor Tensor::contiguous(MemoryFormat format) const { return unwrap(core::contiguous(*this, format)); }

Result<Tensor> core::clone(const Tensor& self, MemoryFormat format) {
  EMBER_ASSIGN_OR_RETURN(Tensor out, format == MemoryFormat::Preserve
                                         ? core::empty_like(self)
                                         : core::empty(self.sizes(), TensorOptions(self.dtype()).device(self.device()),
                                                       format));
  EMBER_TRY(copy_into(out, self));
  autograd::record(GradRule::Clone, out, {self});
  return out;
}

Tensor Tensor::clone(MemoryFormat format) const { return unwrap(core::clone(*this, format)); }

Result<Tensor> core::to(const Tensor& self, DType dtype, bool copy) {
  if (dtype == self.dtype() && !copy) return self;
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty_like(self, dtype));
  EMBER_TRY(copy_into(out, self));
  autograd::record(GradRule::ToCopy, out, {self});
  return out;
}

Tensor Tensor::to(DType dtype, bool copy) const { return unwrap(core::to(*this, dtype, copy)); }

Result<Tensor> core::to(const Tensor& self, Device device, bool copy) {
  if (storage_device(device) == self.device() && !copy) return self;  // storage_device raises on a bad ordinal
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty_like(self, TensorOptions(self.dtype()).device(device)));
  EMBER_TRY(copy_into(out, self));
  // The backward copies the gradient back to this tensor's device.
  if (Node* n = autograd::record(GradRule::ToCopy, out, {self})) {
    n->ints = {static_cast<int64_t>(self.device().type()), self.device().index()};
  }
  return out;
}

Tensor Tensor::to(Device device, bool copy) const { return unwrap(core::to(*this, device, copy)); }

}  // namespace ember

namespace ember {

Result<Scalar> core::item(const Tensor& self) {
  EMBER_CHECK(self.numel() == 1, Status::InvalidArgument, "a Tensor with ", self.numel(),
              " elements cannot be converted to Scalar");
  EMBER_ASSIGN_OR_RETURN(const Tensor on_cpu, core::to(self, Device(DeviceType::CPU)));
  EMBER_ASSIGN_OR_RETURN(const Tensor host, core::contiguous(on_cpu));
  return dispatch_dtype(self.dtype(), [&](auto tag) -> Scalar {
    using T = typename decltype(tag)::type;
    return Scalar(*static_cast<const T*>(host.data_ptr()));
  });
}

Scalar Tensor::item() const { return unwrap(core::item(*this)); }

}  // namespace ember

namespace ember {

// PyTorch's suggest_memory_format (is_channels_last_strides_2d): 4-D, strides
// ordered C < W < H < N, NCHW preferred where ambiguous.
MemoryFormat Tensor::suggest_memory_format() const {
  if (dim() != 4 || strides()[1] == 0) return MemoryFormat::Contiguous;
  int64_t min = 0;
  for (int d : {1, 3, 2, 0}) {
    const int64_t size = sizes()[d], stride = strides()[d];
    if (size == 0 || stride < min) return MemoryFormat::Contiguous;
    if (d == 0 && min == strides()[1]) return MemoryFormat::Contiguous;
    min = stride;
    if (size > 1) min *= size;
  }
  return MemoryFormat::ChannelsLast;
}

}  // namespace ember

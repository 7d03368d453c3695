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

int64_t wrap_dim(int64_t dim, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);  // 0-dim tensors accept -1 and 0
  EMBER_CHECK(dim >= -r && dim < r, Status::OutOfRange,
              "Dimension out of range (expected to be in range of [", -r, ", ", r - 1,
              "], but got ", dim, ")");
  return dim < 0 ? dim + r : dim;
}

namespace {

int64_t numel_of(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// The element count of `sizes` (non-negative), or PyTorch's error when it
// does not fit in int64.
int64_t checked_numel(IntArrayRef sizes) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) overflow = __builtin_mul_overflow(n, s, &n) || overflow;
  for (int64_t s : sizes) {
    if (s == 0) return 0;
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
Shape infer_size(IntArrayRef requested, int64_t numel) {
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

}  // namespace

namespace {
// Records a view op for autograd: `out` shares `self`'s storage.
Tensor record_view(const Tensor& self, Tensor out, GradRule rule, std::vector<int64_t> ints = {}) {
  if (Node* n = autograd::record_view(rule, out, self)) n->ints = std::move(ints);
  return out;
}
}  // namespace

Tensor Tensor::make(Storage storage, DType dtype, IntArrayRef sizes, IntArrayRef strides,
                    int64_t offset) {
  RT_CHECK(sizes.size() == strides.size(), "sizes and strides differ in rank");
  (void)checked_numel(sizes);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->dtype = dtype;
  impl->offset = offset;
  impl->sizes.assign(sizes.begin(), sizes.end());
  impl->strides.assign(strides.begin(), strides.end());
  return Tensor(std::move(impl));
}

size_t storage_bytes(IntArrayRef sizes, IntArrayRef strides, int64_t offset, size_t itemsize) {
  const int64_t numel = checked_numel(sizes);
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

void Tensor::check_dtype(DType expected) const {
  EMBER_CHECK(dtype() == expected, Status::DTypeMismatch, "expected scalar type ",
              dtype_legacy_name(expected), " but found ", dtype_legacy_name(dtype()));
}

TensorView Tensor::kernel_view() const {
  EMBER_CHECK(dim() <= kMaxRank, Status::NotSupported, "ember kernels support tensors of up to ",
              kMaxRank, " dimensions, got ", dim());
  TensorView v;
  v.data = data_ptr();
  v.dtype = dtype();
  v.rank = static_cast<int>(dim());
  for (int d = 0; d < v.rank; ++d) {
    v.sizes[d] = sizes()[d];
    v.strides[d] = strides()[d];
  }
  return v;
}

Tensor Tensor::as_strided(IntArrayRef sizes, IntArrayRef strides,
                          std::optional<int64_t> storage_offset) const {
  EMBER_CHECK(sizes.size() == strides.size(), Status::InvalidArgument,
              "mismatch in length of strides and shape");
  const int64_t offset = storage_offset.value_or(this->storage_offset());
  EMBER_CHECK(offset >= 0, Status::InvalidArgument, "Tensor: invalid storage offset ", offset);
  for (size_t d = 0; d < sizes.size(); ++d) {
    EMBER_CHECK(sizes[d] >= 0, Status::InvalidArgument,
                "Trying to create tensor with negative dimension ", sizes[d], ": ", shape_str(sizes));
    EMBER_CHECK(strides[d] >= 0, Status::InvalidArgument,
                "as_strided: Negative strides are not supported at the moment, got strides: ",
                shape_str(strides));
  }
  const int64_t need = static_cast<int64_t>(storage_bytes(sizes, strides, offset, element_size()));
  const int64_t have = static_cast<int64_t>(storage()->nbytes());
  EMBER_CHECK(need <= have, Status::OutOfRange, "setStorage: sizes ", shape_str(sizes), ", strides ",
              shape_str(strides), ", storage offset ", offset, ", and itemsize ", element_size(),
              " requiring a storage size of ", need, " are out of bounds for storage of size ", have);
  EMBER_CHECK(!autograd::needs_grad({*this}) || is_contiguous(), Status::NotSupported,
              "as_strided: autograd supports only contiguous inputs");
  return record_view(*this, make(storage(), dtype(), sizes, strides, offset), GradRule::AsStrided,
                     as_strided_geometry(*this, sizes, strides, offset));
}

Tensor Tensor::view(IntArrayRef sizes) const {
  const Shape shape = infer_size(sizes, numel());
  const std::optional<Shape> strides = view_strides(this->sizes(), this->strides(), shape);
  EMBER_CHECK(strides.has_value(), Status::InvalidArgument,
              "view size is not compatible with input tensor's size and stride (at least one "
              "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  return record_view(*this, make(storage(), dtype(), shape, *strides, storage_offset()), GradRule::View);
}

Tensor Tensor::reshape(IntArrayRef sizes) const {
  const Shape shape = infer_size(sizes, numel());
  if (std::optional<Shape> strides = view_strides(this->sizes(), this->strides(), shape)) {
    return record_view(*this, make(storage(), dtype(), shape, *strides, storage_offset()), GradRule::ReshapeAlias);
  }
  const Tensor copy = contiguous();
  return record_view(copy, make(copy.storage(), dtype(), shape, contiguous_strides(shape), copy.storage_offset()),
                     GradRule::UnsafeView);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  start_dim = wrap_dim(start_dim, dim());
  end_dim = wrap_dim(end_dim, dim());
  EMBER_CHECK(start_dim <= end_dim, Status::InvalidArgument,
              "flatten() has invalid args: start_dim cannot come after end_dim");
  if (start_dim == end_dim) return *this;
  Shape shape(sizes().begin(), sizes().begin() + start_dim);
  int64_t n = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) n *= sizes()[d];
  shape.push_back(n);
  shape.insert(shape.end(), sizes().begin() + end_dim + 1, sizes().end());
  return reshape(shape);
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  dim0 = wrap_dim(dim0, dim());
  dim1 = wrap_dim(dim1, dim());
  if (dim() == 0) return *this;
  Shape s = sizes(), st = strides();
  std::swap(s[dim0], s[dim1]);
  std::swap(st[dim0], st[dim1]);
  return record_view(*this, make(storage(), dtype(), s, st, storage_offset()), GradRule::Transpose, {dim0, dim1});
}

Tensor Tensor::permute(IntArrayRef dims) const {
  EMBER_CHECK(static_cast<int64_t>(dims.size()) == dim(), Status::InvalidArgument,
              "permute(sparse_coo): number of dimensions in the tensor input does not match the "
              "length of the desired ordering of dimensions i.e. input.dim() = ",
              dim(), " is not equal to len(dims) = ", dims.size());
  Shape s(dims.size()), st(dims.size());
  std::vector<bool> seen(dims.size(), false);
  std::vector<int64_t> perm;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], dim());
    EMBER_CHECK(!seen[d], Status::InvalidArgument, "permute(): duplicate dims are not allowed.");
    seen[d] = true;
    s[i] = sizes()[d];
    st[i] = strides()[d];
    perm.push_back(d);
  }
  return record_view(*this, make(storage(), dtype(), s, st, storage_offset()), GradRule::Permute, std::move(perm));
}

Tensor Tensor::t() const {
  EMBER_CHECK(dim() <= 2, Status::InvalidArgument,
              "t() expects a tensor with <= 2 dimensions, but self is ", dim(), "D");
  if (dim() < 2) return *this;
  const Shape s{sizes()[1], sizes()[0]}, st{strides()[1], strides()[0]};
  return record_view(*this, make(storage(), dtype(), s, st, storage_offset()), GradRule::T, {0, 1});
}

Tensor Tensor::squeeze() const {
  Shape s, st;
  for (int64_t d = 0; d < dim(); ++d) {
    if (sizes()[d] != 1) {
      s.push_back(sizes()[d]);
      st.push_back(strides()[d]);
    }
  }
  return record_view(*this, make(storage(), dtype(), s, st, storage_offset()), GradRule::Squeeze);
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim(d, dim());
  Shape s = sizes(), st = strides();
  if (dim() > 0 && sizes()[d] == 1) {
    s.erase(s.begin() + d);
    st.erase(st.begin() + d);
  }
  return record_view(*this, make(storage(), dtype(), s, st, storage_offset()), GradRule::SqueezeDim);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1);
  Shape s = sizes(), st = strides();
  const int64_t new_stride = d >= dim() ? 1 : sizes()[d] * strides()[d];
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, new_stride);
  return record_view(*this, make(storage(), dtype(), s, st, storage_offset()), GradRule::Unsqueeze);
}

Tensor Tensor::expand(IntArrayRef target) const {
  const int64_t n = static_cast<int64_t>(target.size());
  EMBER_CHECK(n >= dim(), Status::InvalidArgument, "expand(torch.", dtype_legacy_name(dtype()),
              "Tensor{", shape_str(sizes()), "}, size=", shape_str(target),
              "): the number of sizes provided (", n,
              ") must be greater or equal to the number of dimensions in the tensor (", dim(), ")");
  Shape s(n), st(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t d = i - (n - dim());
    const int64_t want = target[i];
    if (d < 0) {
      EMBER_CHECK(want >= 0, Status::InvalidArgument,
                  "The expanded size of the tensor (", want,
                  ") isn't allowed in a leading, non-existing dimension ", i);
      s[i] = want;
      st[i] = 0;
      continue;
    }
    const int64_t have = sizes()[d];
    if (want == -1 || want == have) {
      s[i] = have;
      st[i] = strides()[d];
    } else {
      EMBER_CHECK(have == 1, Status::ShapeMismatch, "The expanded size of the tensor (", want,
                  ") must match the existing size (", have, ") at non-singleton dimension ", i,
                  ".  Target sizes: ", shape_str(target), ".  Tensor sizes: ", shape_str(sizes()));
      s[i] = want;
      st[i] = 0;
    }
  }
  return record_view(*this, make(storage(), dtype(), s, st, storage_offset()), GradRule::Expand);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  EMBER_CHECK(dim() > 0, Status::InvalidArgument, "narrow() cannot be applied to a 0-dim tensor.");
  d = wrap_dim(d, dim());
  const int64_t size = sizes()[d];
  EMBER_CHECK(start >= -size && start <= size, Status::OutOfRange, "start out of range (expected to be in range of [",
              -size, ", ", size, "], but got ", start, ")");
  if (start < 0) start += size;
  EMBER_CHECK(length >= 0 && start <= size - length, Status::OutOfRange, "start (", start,
              ") + length (", length, ") exceeds dimension size (", size, ").");
  return slice(d, start, start + length, 1);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  EMBER_CHECK(dim() > 0, Status::InvalidArgument, "select() cannot be applied to a 0-dim tensor.");
  d = wrap_dim(d, dim());
  const int64_t size = sizes()[d];
  EMBER_CHECK(index >= -size && index < size, Status::OutOfRange, "select(): index ", index,
              " out of range for tensor of size ", shape_str(sizes()), " at dimension ", d);
  if (index < 0) index += size;
  Shape s = sizes(), st = strides();
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return record_view(*this, make(storage(), dtype(), s, st, storage_offset() + index * strides()[d]),
                     GradRule::Select, {d, index});
}

Tensor Tensor::slice(int64_t d, std::optional<int64_t> start_opt, std::optional<int64_t> end_opt,
                     int64_t step) const {
  EMBER_CHECK(dim() > 0, Status::InvalidArgument, "slice() cannot be applied to a 0-dim tensor.");
  EMBER_CHECK(step > 0, Status::InvalidArgument, "slice step must be positive");
  d = wrap_dim(d, dim());
  const int64_t size = sizes()[d];
  int64_t start = start_opt.value_or(0), end = end_opt.value_or(size);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  Shape s = sizes(), st = strides();
  s[d] = (end - start + step - 1) / step;
  st[d] = strides()[d] * step;
  return record_view(*this, make(storage(), dtype(), s, st, storage_offset() + start * strides()[d]),
                     GradRule::Slice, {d, start, end, step});
}

Tensor Tensor::unfold(int64_t d, int64_t size, int64_t step) const {
  d = wrap_dim(d, dim());
  const int64_t extent = dim() == 0 ? 1 : sizes()[d];
  EMBER_CHECK(size <= extent, Status::InvalidArgument, "maximum size for tensor at dimension ", d,
              " is ", extent, " but size is ", size);
  EMBER_CHECK(size >= 0, Status::InvalidArgument, "size is ", size, " but must be >= 0");
  EMBER_CHECK(step > 0, Status::InvalidArgument, "step is ", step, " but must be > 0");
  Shape s = sizes(), st = strides();
  if (dim() == 0) {
    s = {size};
    st = {1};
  } else {
    s[d] = (extent - size) / step + 1;
    st[d] = strides()[d] * step;
    s.push_back(size);
    st.push_back(strides()[d]);
  }
  return record_view(*this, make(storage(), dtype(), s, st, storage_offset()), GradRule::Unfold, {d, size, step});
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

Shape strides_for(IntArrayRef sizes, MemoryFormat format) {
  if (format == MemoryFormat::ChannelsLast) {
    EMBER_CHECK(sizes.size() == 4, Status::InvalidArgument,
                "required rank 4 tensor to use channels_last format");
    return channels_last_strides(sizes);
  }
  return contiguous_strides(sizes);
}
}  // namespace

Tensor empty(IntArrayRef sizes, TensorOptions options, MemoryFormat format) {
  RT_CHECK(format != MemoryFormat::Preserve, "empty() takes no preserve format");
  return empty_strided(sizes, strides_for(sizes, format), options);
}

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions options) {
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, Status::InvalidArgument, "Trying to create tensor with negative dimension ",
                s, ": ", shape_str(sizes));
  }
  const DType dtype = options.dtype_or(DType::Float32);
  Storage storage = allocate_storage(storage_bytes(sizes, strides, 0, ember::element_size(dtype)),
                                     options.device_or());
  return Tensor::make(std::move(storage), dtype, sizes, strides, 0);
}

Tensor empty_like(const Tensor& t, TensorOptions options) {
  return empty_strided(t.sizes(), preserved_strides(t),
                       TensorOptions(options.dtype_or(t.dtype())).device(options.device_or(t.device())));
}

Tensor Tensor::contiguous(MemoryFormat format) const {
  if (format == MemoryFormat::Preserve) format = MemoryFormat::Contiguous;
  if (is_contiguous(format)) return *this;
  Tensor out = empty(sizes(), TensorOptions(dtype()).device(device()), format);
  copy_into(out, *this);
  autograd::record(GradRule::Clone, out, {*this});
  return out;
}

Tensor Tensor::clone(MemoryFormat format) const {
  Tensor out = format == MemoryFormat::Preserve
                   ? empty_like(*this)
                   : empty(sizes(), TensorOptions(dtype()).device(device()), format);
  copy_into(out, *this);
  autograd::record(GradRule::Clone, out, {*this});
  return out;
}

Tensor Tensor::to(DType dtype, bool copy) const {
  if (dtype == this->dtype() && !copy) return *this;
  Tensor out = empty_like(*this, dtype);
  copy_into(out, *this);
  autograd::record(GradRule::ToCopy, out, {*this});
  return out;
}

Tensor Tensor::to(Device device, bool copy) const {
  if (storage_device(device) == this->device() && !copy) return *this;
  Tensor out = empty_like(*this, TensorOptions(dtype()).device(device));
  copy_into(out, *this);
  // The backward copies the gradient back to this tensor's device.
  if (Node* n = autograd::record(GradRule::ToCopy, out, {*this})) {
    n->ints = {static_cast<int64_t>(this->device().type()), this->device().index()};
  }
  return out;
}

}  // namespace ember

namespace ember {

Scalar Tensor::item() const {
  EMBER_CHECK(numel() == 1, Status::InvalidArgument, "a Tensor with ", numel(),
              " elements cannot be converted to Scalar");
  const Tensor host = to(Device(DeviceType::CPU)).contiguous();
  return dispatch_dtype(dtype(), [&](auto tag) -> Scalar {
    using T = typename decltype(tag)::type;
    return Scalar(*static_cast<const T*>(host.data_ptr()));
  });
}

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

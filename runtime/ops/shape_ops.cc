// Joining, splitting and padding: cat, stack, split, chunk and pad. cat/stack
// and constant padding are composed from copy_ into narrowed views of the
// output; split/chunk return views; reflect/replicate/circular padding runs
// the Pad kernel.
#include <algorithm>
#include <string>

#include "runtime/amp/autocast.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {

// PyTorch's suggest_memory_format() == channels_last (runtime/ops/pooling.cc).

// --- cat and stack -------------------------------------------------------------

namespace {
// PyTorch skips legacy empty 1-D tensors (shape [0]) in cat.
bool cat_skips(const Tensor& t) { return t.dim() == 1 && t.numel() == 0; }
}  // namespace

Result<Tensor> core::cat(Span<const Tensor> tensors, int64_t dim) {
  if (amp::Cast c = amp::autocast_list(amp::Op::Cat, tensors)) return core::cat(c.args(), dim);
  EMBER_CHECK(!tensors.empty(), Status::InvalidArgument, "torch.cat(): expected a non-empty list of Tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].dim() > 0, Status::InvalidArgument, "zero-dimensional tensor (at position ", i,
                ") cannot be concatenated");
  }
  EMBER_TRY(check_same_device(tensors));
  EMBER_ASSIGN_OR_RETURN(const DType dtype, core::result_type(tensors));
  const Tensor* ref = nullptr;
  for (const Tensor& t : tensors) {
    if (!cat_skips(t)) {
      ref = &t;
      break;
    }
  }
  if (ref == nullptr) {  // every input is a legacy empty tensor
    return core::empty({0}, TensorOptions(dtype).device(tensors[0].device()));
  }
  EMBER_ASSIGN_OR_RETURN(dim, core::wrap_dim(dim, ref->dim()));
  Shape shape = ref->sizes();
  shape[dim] = 0;
  bool channels_last = ref->dim() == 4;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (cat_skips(t)) continue;
    EMBER_CHECK(t.dim() == ref->dim(), Status::ShapeMismatch, "Tensors must have same number of dimensions: got ",
                ref->dim(), " and ", t.dim());
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d == dim) continue;
      EMBER_CHECK(t.size(d) == ref->size(d), Status::ShapeMismatch, "Sizes of tensors must match except in dimension ",
                  dim, ". Expected size ", ref->size(d), " but got size ", t.size(d), " for tensor number ", i,
                  " in the list.");
    }
    shape[dim] += t.size(dim);
    channels_last = channels_last && (t.suggest_memory_format() == MemoryFormat::ChannelsLast);
  }
  const MemoryFormat format = channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty(shape, TensorOptions(dtype).device(ref->device()), format));
  int64_t offset = 0;
  {
    NoGradGuard no_grad;
    for (const Tensor& t : tensors) {
      if (cat_skips(t)) continue;
      if (t.size(dim) > 0) {
        EMBER_ASSIGN_OR_RETURN(const Tensor slot, core::narrow(out, dim, offset, t.size(dim)));
        EMBER_TRY(copy_into(slot, t));
      }
      offset += t.size(dim);
    }
  }
  if (Node* n = autograd::record(GradRule::Cat, out, tensors)) {
    n->ints = {dim};
    for (const Tensor& t : tensors) n->ints.push_back(cat_skips(t) ? -1 : t.size(dim));
  }
  return out;
}

Tensor cat(Span<const Tensor> tensors, int64_t dim) { return unwrap(core::cat(tensors, dim)); }

Result<Tensor> core::stack(Span<const Tensor> tensors, int64_t dim) {
  if (amp::Cast c = amp::autocast_list(amp::Op::Stack, tensors)) return core::stack(c.args(), dim);
  EMBER_CHECK(!tensors.empty(), Status::InvalidArgument, "stack expects a non-empty TensorList");
  EMBER_ASSIGN_OR_RETURN(dim, core::wrap_dim(dim, tensors[0].dim() + 1));
  for (size_t i = 1; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].sizes() == tensors[0].sizes(), Status::ShapeMismatch,
                "stack expects each tensor to be equal size, but got ", shape_str(tensors[0].sizes()),
                " at entry 0 and ", shape_str(tensors[i].sizes()), " at entry ", i);
  }
  Tensor out;
  {
    NoGradGuard no_grad;
    std::vector<Tensor> expanded;
    expanded.reserve(tensors.size());
    for (const Tensor& t : tensors) {
      EMBER_ASSIGN_OR_RETURN(Tensor u, core::unsqueeze(t, dim));
      expanded.push_back(std::move(u));
    }
    EMBER_ASSIGN_OR_RETURN(out, core::cat(Span<const Tensor>(expanded.data(), expanded.size()), dim));
  }
  if (Node* n = autograd::record(GradRule::Stack, out, tensors)) n->ints = {dim};
  return out;
}

Tensor stack(Span<const Tensor> tensors, int64_t dim) { return unwrap(core::stack(tensors, dim)); }

// --- split and chunk ---------------------------------------------------------------

Result<std::vector<Tensor>> core::split(const Tensor& x, int64_t split_size, int64_t dim) {
  EMBER_CHECK(x.dim() != 0, Status::InvalidArgument, "split expects at least a 1-dimensional tensor");
  EMBER_CHECK(split_size >= 0, Status::InvalidArgument, "split expects split_size be non-negative, but got split_size=",
              split_size);
  EMBER_ASSIGN_OR_RETURN(dim, core::wrap_dim(dim, x.dim()));
  const int64_t size = x.size(dim);
  EMBER_CHECK(split_size > 0 || size == 0, Status::InvalidArgument,
              "split_size can only be 0 if dimension size is 0, but got dimension size of ", size);
  // One split when split_size is 0 (and the dimension empty) or larger than the dimension.
  const int64_t num_splits = split_size == 0 ? 1 : std::max<int64_t>((size + split_size - 1) / split_size, 1);
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(num_splits));
  for (int64_t i = 0; i < num_splits; ++i) {
    const int64_t start = i * split_size;
    EMBER_ASSIGN_OR_RETURN(Tensor piece, core::narrow(x, dim, start, std::min(split_size, size - start)));
    out.push_back(std::move(piece));
    autograd::rename_grad_fn(out.back(), GradRule::Split);
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  return unwrap(core::split(x, split_size, dim));
}

Result<std::vector<Tensor>> core::split(const Tensor& x, IntArrayRef split_sizes, int64_t dim) {
  EMBER_CHECK(x.dim() != 0, Status::InvalidArgument, "split expects at least a 1-dimensional tensor");
  EMBER_ASSIGN_OR_RETURN(dim, core::wrap_dim(dim, x.dim()));
  const int64_t size = x.size(dim);
  std::vector<Tensor> out;
  out.reserve(split_sizes.size());
  int64_t start = 0;
  for (int64_t length : split_sizes) {
    EMBER_CHECK(length >= 0, Status::InvalidArgument,
                "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=",
                shape_str(split_sizes));
    EMBER_ASSIGN_OR_RETURN(Tensor piece, core::narrow(x, dim, start, length));
    out.push_back(std::move(piece));
    autograd::rename_grad_fn(out.back(), GradRule::SplitWithSizes);
    start += length;
  }
  EMBER_CHECK(start == size, Status::InvalidArgument, "split_with_sizes expects split_sizes to sum exactly to ",
              size, " (input tensor's size at dimension ", dim, "), but got split_sizes=", shape_str(split_sizes));
  return out;
}

std::vector<Tensor> split(const Tensor& x, IntArrayRef split_sizes, int64_t dim) {
  return unwrap(core::split(x, split_sizes, dim));
}

Result<std::vector<Tensor>> core::chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  EMBER_CHECK(x.dim() > 0, Status::InvalidArgument, "chunk expects at least a 1-dimensional tensor");
  EMBER_CHECK(chunks > 0, Status::InvalidArgument, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  EMBER_ASSIGN_OR_RETURN(dim, core::wrap_dim(dim, x.dim()));
  const int64_t size = x.size(dim);
  const int64_t split_size = (size + chunks - 1) / chunks;
  if (split_size == 0 && size == 0) {  // `chunks` empty pieces, as PyTorch returns
    const std::vector<int64_t> sizes(static_cast<size_t>(chunks), 0);
    return core::split(x, IntArrayRef(sizes.data(), sizes.size()), dim);
  }
  return core::split(x, split_size, dim);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) { return unwrap(core::chunk(x, chunks, dim)); }

// --- pad ------------------------------------------------------------------------------

namespace {

// How PyTorch prints an (empty) tensor in some messages: "[ torch.FloatTensor{2,0} ]".
std::string tensor_type_str(const Tensor& x) {
  std::string dims;
  for (int64_t d = 0; d < x.dim(); ++d) dims += (d ? "," : "") + std::to_string(x.size(d));
  return str_cat("[ torch.", dtype_legacy_name(x.dtype()), "Tensor{", dims, "} ]");
}

// torch.constant_pad_nd: negative pads narrow the input, positive ones grow a
// value-filled output into which the (narrowed) input is copied.
Result<Tensor> constant_pad(const Tensor& x, IntArrayRef pad, double value) {
  const int64_t rank = x.dim();
  const int64_t n_pad = static_cast<int64_t>(pad.size()) / 2;
  const int64_t lead = rank - n_pad;
  Tensor in = x;
  bool all_non_positive = true;
  // narrow() as PyTorch 1.13 calls it: a start past the end fails with wrap_dim's message.
  auto narrow = [](const Tensor& t, int64_t d, int64_t start, int64_t length) -> Result<Tensor> {
    if (start != t.size(d)) EMBER_TRY(core::wrap_dim(start, t.size(d)));
    return core::narrow(t, d, start, length);
  };
  for (int64_t d = lead; d < rank; ++d) {
    const int64_t before = pad[2 * (rank - d - 1)], after = pad[2 * (rank - d - 1) + 1];
    if (before < 0) {
      EMBER_ASSIGN_OR_RETURN(in, narrow(in, d, -before, in.size(d) + before));
    } else if (before != 0) {
      all_non_positive = false;
    }
    if (after < 0) {
      EMBER_ASSIGN_OR_RETURN(in, narrow(in, d, 0, in.size(d) + after));
    } else if (after != 0) {
      all_non_positive = false;
    }
  }
  if (all_non_positive) return core::clone(in);
  Shape shape = x.sizes();
  for (int64_t d = lead; d < rank; ++d) {
    const int64_t before = pad[2 * (rank - d - 1)], after = pad[2 * (rank - d - 1) + 1];
    const int64_t size = x.size(d) + before + after;
    EMBER_CHECK(size > 0, Status::InvalidArgument, "The input size ", x.size(d), ", plus negative padding ", before,
                " and ", after, " resulted in a negative output size, which is invalid. Check dimension ", d,
                " of your input.");
    shape[d] = size;
  }
  const MemoryFormat format =
      x.suggest_memory_format() == MemoryFormat::ChannelsLast ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty(shape, TensorOptions(x.dtype()).device(x.device()), format));
  EMBER_TRY(fill_into(out, value));
  Tensor inner = out;
  for (int64_t d = lead; d < rank; ++d) {
    const int64_t before = pad[2 * (rank - d - 1)], after = pad[2 * (rank - d - 1) + 1];
    if (before > 0) {
      EMBER_ASSIGN_OR_RETURN(inner, core::narrow(inner, d, before, inner.size(d) - before));
    }
    if (after > 0) {
      EMBER_ASSIGN_OR_RETURN(inner, core::narrow(inner, d, 0, inner.size(d) - after));
    }
  }
  EMBER_TRY(copy_into(inner, in));
  return out;
}

// reflection_pad{1,2,3}d / replication_pad{1,2,3}d: the input checks and
// messages of PyTorch 1.13 (they differ between modes and ranks).
Status check_reflect_replicate(const Tensor& x, IntArrayRef pad, bool reflect) {
  const int64_t k = static_cast<int64_t>(pad.size()) / 2;  // padded dims: 1, 2 or 3
  const int64_t rank = x.dim();
  const bool batched = rank == k + 2;
  // Reflect lets dim 0 be empty; replicate only the batch dim.
  bool valid = true;
  for (int64_t d = (reflect || batched) ? 1 : 0; d < rank; ++d) valid = valid && x.size(d) != 0;
  if (reflect && k < 3) {
    EMBER_CHECK(valid, Status::InvalidArgument, k + 1, "D or ", k + 2, "D (batch mode) tensor expected for input, but got: ",
                tensor_type_str(x));
  } else {
    EMBER_CHECK(valid, Status::InvalidArgument, "Expected ", k + 1, "D or ", k + 2,
                "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: ",
                shape_str(x.sizes()));
  }
  const int64_t dim_w = rank - 1;
  const int64_t w = x.size(-1);
  const int64_t h = k >= 2 ? x.size(-2) : 0, dd = k >= 3 ? x.size(-3) : 0;
  const int64_t out_w = w + pad[0] + pad[1];
  const int64_t out_h = k >= 2 ? h + pad[2] + pad[3] : 0;
  const int64_t out_d = k >= 3 ? dd + pad[4] + pad[5] : 0;
  if (reflect) {
    // 2-D reflection names the input by its rank, the others by its shape.
    const std::string input = k == 2 ? std::to_string(rank) : shape_str(x.sizes());
    for (int64_t i = 0; i < k; ++i) {
      const int64_t size = x.size(rank - 1 - i);
      EMBER_CHECK(pad[2 * i] < size && pad[2 * i + 1] < size, Status::InvalidArgument, "Argument #", 4 + 2 * i,
                  ": Padding size should be less than the corresponding input dimension, but got: padding (",
                  pad[2 * i], ", ", pad[2 * i + 1], ") at dimension ", dim_w - i, " of input ", input);
    }
  }
  if (k == 1) {
    EMBER_CHECK(out_w >= 1, Status::InvalidArgument, reflect ? "2" : "", "input (W: ", w, reflect ? ")" : ") ",
                "is too small. Calculated output W: ", out_w);
  } else if (k == 2) {
    EMBER_CHECK(out_w >= 1 || out_h >= 1, Status::InvalidArgument, "input (H: ", h, ", W: ", w,
                reflect ? ")" : " ) ", "is too small. Calculated output H: ", out_h, " W: ", out_w);
  } else {
    EMBER_CHECK(out_w >= 1 || out_h >= 1 || out_d >= 1, Status::InvalidArgument, "input (D: ", dd, " H: ", h,
                ", W: ", w, ") is too small. Calculated output D: ", out_d, " H: ", out_h, " W: ", out_w);
  }
  // Float16 on other devices (as PyTorch's CUDA kernels): the device's kernel table decides.
  const bool half_off_cpu = x.dtype() == DType::Float16 && !x.device().is_cpu();
  if (!is_floating(x.dtype()) || (x.dtype() == DType::Float16 && !half_off_cpu) || x.dtype() == DType::BFloat16) {
    return fail(Status::NotSupported, "\"", reflect ? "reflection" : "replication", "_pad", k, "d",
                reflect ? "" : "_cpu", "\" not implemented for '", dtype_legacy_name(x.dtype()), "'");
  }
  return Status::Ok;
}

// at::_pad_circular: (N, C, spatial...) input; pads may not wrap more than once.
Status check_circular(const Tensor& x, IntArrayRef pad) {
  const int64_t k = x.dim() - 2;
  EMBER_CHECK(static_cast<int64_t>(pad.size()) + 4 == x.dim() * 2, Status::InvalidArgument,
              "Invalid padding size, expected ", k * 2, " but got ", pad.size());
  for (int64_t i = 0; i < k; ++i) {
    const int64_t before = pad[2 * (k - i - 1)], after = pad[2 * (k - i - 1) + 1];
    const int64_t size = x.size(2 + i);
    EMBER_CHECK(before <= size && after <= size, Status::InvalidArgument,
                "Padding value causes wrapping around more than once.");
    EMBER_CHECK(size + before + after >= 0, Status::InvalidArgument,
                "Negative padding value is resulting in an empty dimension");
  }
  for (int64_t i = 0; i < k; ++i) {
    const int64_t before = pad[2 * i], after = pad[2 * i + 1];
    const int64_t kept = x.size(-1 - i) - std::max<int64_t>(-before, 0) - std::max<int64_t>(-after, 0);
    // PyTorch fills the pads by copying the output onto itself; a pad longer
    // than what cropping leaves makes that copy overlap, which PyTorch refuses.
    EMBER_CHECK(kept <= 0 || (before <= kept && after <= kept), Status::InvalidArgument,
                "unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                "single memory location. Please clone() the tensor before performing the operation.");
    // PyTorch returns uninitialized memory here; ember refuses.
    EMBER_CHECK(kept > 0 || (before <= 0 && after <= 0), Status::InvalidArgument,
                "circular padding of a dimension that negative padding left empty is undefined");
  }
  return Status::Ok;
}

}  // namespace

Result<Tensor> core::pad(const Tensor& x, IntArrayRef pad, std::string_view mode, double value) {
  PadMode kind;
  if (mode == "constant") {
    kind = PadMode::Constant;
  } else if (mode == "reflect") {
    kind = PadMode::Reflect;
  } else if (mode == "replicate") {
    kind = PadMode::Replicate;
  } else if (mode == "circular") {
    kind = PadMode::Circular;
  } else {
    return fail(Status::InvalidArgument, "Unrecognised padding mode ", mode);
  }
  EMBER_CHECK(pad.size() % 2 == 0, Status::InvalidArgument, "Padding length must be divisible by 2");
  EMBER_CHECK(static_cast<int64_t>(pad.size()) <= x.dim() * 2, Status::InvalidArgument, "Padding length too large");
  if (kind == PadMode::Constant) {
    Tensor out;
    {
      NoGradGuard no_grad;
      EMBER_ASSIGN_OR_RETURN(out, constant_pad(x, pad, value));
    }
    if (Node* n = autograd::record(GradRule::ConstantPad, out, {x})) n->ints.assign(pad.begin(), pad.end());
    return out;
  }

  EMBER_CHECK(value == 0.0, Status::InvalidArgument, "Padding mode \"", mode, "\" doesn't take in value argument");
  const int64_t k = static_cast<int64_t>(pad.size()) / 2;
  // reflection_pad1d/2d and replication_pad1d/2d/3d have autocast policies.
  if ((kind == PadMode::Reflect && k <= 2) || (kind == PadMode::Replicate && k <= 3)) {
    const amp::Op amp_op = kind == PadMode::Reflect ? amp::Op::ReflectionPad : amp::Op::ReplicationPad;
    if (amp::Cast c = amp::autocast(amp_op, {x})) return core::pad(c[0], pad, mode, value);
  }
  EMBER_CHECK(k >= 1 && k <= 3 && (x.dim() == k + 1 || x.dim() == k + 2), Status::NotSupported,
              "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
  if (kind == PadMode::Circular) {
    EMBER_TRY(check_circular(x, pad));
  } else {
    EMBER_TRY(check_reflect_replicate(x, pad, kind == PadMode::Reflect));
  }
  PadParams params;
  params.mode = kind;
  Shape shape = x.sizes();
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = x.dim() - 1 - i;
    params.before[d] = pad[2 * i];
    params.after[d] = pad[2 * i + 1];
    shape[d] += pad[2 * i] + pad[2 * i + 1];
  }
  EMBER_ASSIGN_OR_RETURN(Tensor out, core::empty(shape, TensorOptions(x.dtype()).device(x.device())));
  EMBER_TRY(run_kernel(OpKind::Pad, {x}, {out}, params));
  const GradRule rules[3][3] = {
      {GradRule::ReflectionPad1d, GradRule::ReflectionPad2d, GradRule::ReflectionPad3d},
      {GradRule::ReplicationPad1d, GradRule::ReplicationPad2d, GradRule::ReplicationPad3d},
      {GradRule::CircularPad, GradRule::CircularPad, GradRule::CircularPad}};
  const int mode_row = kind == PadMode::Reflect ? 0 : kind == PadMode::Replicate ? 1 : 2;
  if (Node* n = autograd::record(rules[mode_row][k - 1], out, {x})) n->ints.assign(pad.begin(), pad.end());
  return out;
}

Tensor pad(const Tensor& x, IntArrayRef pad, std::string_view mode, double value) {
  return unwrap(core::pad(x, pad, mode, value));
}

}  // namespace ember

// Detection front-ends: NonMaxSuppression (ONNX's, computed on the host: its
// output size depends on the values, as nonzero's) and RoiAlign (the RoiAlign
// reference kernel). No autograd.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/ops/dispatch.h"
#include "runtime/ops/ops.h"

namespace ember {
namespace {

// `t` on the host as a contiguous tensor of `dtype`.
Result<Tensor> host_copy(const Tensor& t, DType dtype) {
  EMBER_ASSIGN_OR_RETURN(Tensor h, core::to(t, Device(DeviceType::CPU)));
  EMBER_ASSIGN_OR_RETURN(h, core::to(h, dtype));
  return core::contiguous(h);
}

// The first value of an optional one-element run-time input (undefined or
// empty: `fallback`), read on the host.
Result<double> host_scalar(const Tensor& t, double fallback, const char* op, const char* what) {
  if (!t.defined() || t.numel() == 0) return fallback;
  EMBER_CHECK(t.numel() == 1, Status::InvalidArgument, op, ": ", what, " must have one element, got shape ",
              shape_str(t.sizes()));
  EMBER_ASSIGN_OR_RETURN(const Tensor h, host_copy(t, DType::Float64));
  return h.to_vector<double>()[0];
}

// A box as [x_min, y_min, x_max, y_max] in compute type C.
template <typename C>
struct Box {
  C x0, y0, x1, y1;
};

template <typename C>
Box<C> corners(const C* b, bool center) {
  if (center) {
    const C hw = b[2] / C(2), hh = b[3] / C(2);
    return {b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh};
  }
  return {std::min(b[1], b[3]), std::min(b[0], b[2]), std::max(b[1], b[3]), std::max(b[0], b[2])};
}

// ONNX's suppress_by_iou: IoU > threshold (in the input's precision); empty
// intersections and boxes of no area never suppress.
template <typename C>
bool suppresses(const Box<C>& a, const Box<C>& b, C iou_threshold) {
  const C ix0 = std::max(a.x0, b.x0), ix1 = std::min(a.x1, b.x1);
  if (ix1 <= ix0) return false;
  const C iy0 = std::max(a.y0, b.y0), iy1 = std::min(a.y1, b.y1);
  if (iy1 <= iy0) return false;
  const C inter = (ix1 - ix0) * (iy1 - iy0);
  if (inter <= C(0)) return false;
  const C area_a = (a.x1 - a.x0) * (a.y1 - a.y0), area_b = (b.x1 - b.x0) * (b.y1 - b.y0);
  const C uni = area_a + area_b - inter;
  if (area_a <= C(0) || area_b <= C(0) || uni <= C(0)) return false;
  return inter / uni > iou_threshold;
}

}  // namespace

Result<Tensor> core::non_max_suppression(const Tensor& boxes, const Tensor& scores,
                                         const Tensor& max_output_boxes_per_class, const Tensor& iou_threshold,
                                         const Tensor& score_threshold, const NmsParams& p) {
  EMBER_CHECK(boxes.dim() == 3 && boxes.size(2) == 4, Status::InvalidArgument,
              "NonMaxSuppression: boxes must be [num_batches, num_boxes, 4], got ", shape_str(boxes.sizes()));
  EMBER_CHECK(scores.dim() == 3 && scores.size(0) == boxes.size(0) && scores.size(2) == boxes.size(1),
              Status::ShapeMismatch,
              "NonMaxSuppression: scores must be [num_batches, num_classes, num_boxes] for boxes ",
              shape_str(boxes.sizes()), ", got ", shape_str(scores.sizes()));
  EMBER_CHECK(is_floating(boxes.dtype()) && scores.dtype() == boxes.dtype(), Status::DTypeMismatch,
              "NonMaxSuppression: boxes and scores must share one floating-point dtype, got ",
              dtype_name(boxes.dtype()), " and ", dtype_name(scores.dtype()));
  // As int64 (exported models often pass INT64_MAX: no limit); negative selects none.
  int64_t max_out = 0;
  if (max_output_boxes_per_class.defined() && max_output_boxes_per_class.numel() > 0) {
    const Tensor& m = max_output_boxes_per_class;
    EMBER_CHECK(m.numel() == 1 && !is_floating(m.dtype()) && m.dtype() != DType::Bool, Status::InvalidArgument,
                "NonMaxSuppression: max_output_boxes_per_class must be one integer, got ", dtype_name(m.dtype()), " ",
                shape_str(m.sizes()));
    EMBER_ASSIGN_OR_RETURN(const Tensor h, host_copy(m, DType::Int64));
    max_out = std::max<int64_t>(h.to_vector<int64_t>()[0], 0);
  }
  EMBER_ASSIGN_OR_RETURN(const double iou_thr, host_scalar(iou_threshold, 0.0, "NonMaxSuppression", "iou_threshold"));
  const bool has_score_thr = score_threshold.defined() && score_threshold.numel() > 0;
  EMBER_ASSIGN_OR_RETURN(const double score_thr,
                         host_scalar(score_threshold, 0.0, "NonMaxSuppression", "score_threshold"));
  EMBER_ASSIGN_OR_RETURN(Tensor b, core::to(boxes, Device(DeviceType::CPU)));
  EMBER_ASSIGN_OR_RETURN(b, core::contiguous(b));
  EMBER_ASSIGN_OR_RETURN(Tensor s, core::to(scores, Device(DeviceType::CPU)));
  EMBER_ASSIGN_OR_RETURN(s, core::contiguous(s));
  const int64_t nb = b.size(0), nbox = b.size(1), nc = s.size(1);
  std::vector<int64_t> sel;
  dispatch_dtype(b.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<T>) {
      using C = compute_t<T>;
      const T* pb = b.data_ptr<T>();
      const T* ps = s.data_ptr<T>();
      std::vector<Box<C>> bx(static_cast<size_t>(nbox));
      std::vector<int64_t> order, kept;
      for (int64_t n = 0; n < nb; ++n) {
        for (int64_t i = 0; i < nbox; ++i) {
          C v[4];
          for (int k = 0; k < 4; ++k) v[k] = static_cast<C>(pb[(n * nbox + i) * 4 + k]);
          bx[static_cast<size_t>(i)] = corners(v, p.center_point_box);
        }
        for (int64_t c = 0; c < nc; ++c) {
          const T* sc = ps + (n * nc + c) * nbox;
          auto score = [&](int64_t i) { return static_cast<C>(sc[i]); };
          order.clear();
          for (int64_t i = 0; i < nbox; ++i) {
            if (!has_score_thr || static_cast<double>(score(i)) > score_thr) order.push_back(i);
          }
          // Highest score first; equal scores by box index.
          std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return score(i) > score(j); });
          kept.clear();
          for (int64_t i : order) {
            if (static_cast<int64_t>(kept.size()) >= max_out) break;
            bool keep = true;
            for (int64_t j : kept) {
              if (suppresses(bx[static_cast<size_t>(i)], bx[static_cast<size_t>(j)], static_cast<C>(iou_thr))) {
                keep = false;
                break;
              }
            }
            if (!keep) continue;
            kept.push_back(i);
            sel.insert(sel.end(), {n, c, i});
          }
        }
      }
    }
  });
  const int64_t count = static_cast<int64_t>(sel.size()) / 3;
  EMBER_ASSIGN_OR_RETURN(const Tensor out, core::empty({count, 3}, DType::Int64));
  std::copy(sel.begin(), sel.end(), out.data_ptr<int64_t>());
  return core::to(out, boxes.device());
}

Tensor non_max_suppression(const Tensor& boxes, const Tensor& scores, const Tensor& max_output_boxes_per_class,
                           const Tensor& iou_threshold, const Tensor& score_threshold, const NmsParams& p) {
  return unwrap(
      core::non_max_suppression(boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold, p));
}

Result<Tensor> core::roi_align(const Tensor& x, const Tensor& rois, const Tensor& batch_indices,
                               const RoiAlignParams& p) {
  EMBER_CHECK(p.valid(), Status::InvalidArgument, "RoiAlign: invalid mode, output size (", p.output_height, "x",
              p.output_width, ") or sampling_ratio (", p.sampling_ratio, ")");
  EMBER_CHECK(x.dim() == 4, Status::InvalidArgument, "RoiAlign: input must be [N, C, H, W], got ",
              shape_str(x.sizes()));
  EMBER_CHECK(rois.dim() == 2 && rois.size(1) == 4, Status::InvalidArgument,
              "RoiAlign: rois must be [num_rois, 4], got ", shape_str(rois.sizes()));
  EMBER_CHECK(batch_indices.defined() && batch_indices.dim() == 1 && batch_indices.size(0) == rois.size(0),
              Status::ShapeMismatch, "RoiAlign: batch_indices must be [num_rois] for rois ", shape_str(rois.sizes()),
              ", got ", batch_indices.defined() ? shape_str(batch_indices.sizes()) : std::string("none"));
  EMBER_CHECK(is_floating(x.dtype()) && rois.dtype() == x.dtype(), Status::DTypeMismatch,
              "RoiAlign: input and rois must share one floating-point dtype, got ", dtype_name(x.dtype()), " and ",
              dtype_name(rois.dtype()));
  EMBER_CHECK(batch_indices.dtype() == DType::Int64 || batch_indices.dtype() == DType::Int32, Status::DTypeMismatch,
              "RoiAlign: batch_indices must be int64, got ", dtype_name(batch_indices.dtype()));
  EMBER_CHECK(rois.size(0) == 0 || (x.size(2) > 0 && x.size(3) > 0), Status::InvalidArgument,
              "RoiAlign: input must have non-empty spatial dims, got ", shape_str(x.sizes()));
  EMBER_TRY(check_same_device({x, rois, batch_indices}));
  EMBER_ASSIGN_OR_RETURN(const Tensor bi, core::to(batch_indices, DType::Int64));
  EMBER_ASSIGN_OR_RETURN(Tensor host, core::to(bi, Device(DeviceType::CPU)));
  EMBER_ASSIGN_OR_RETURN(host, core::contiguous(host));
  for (int64_t i = 0; i < host.numel(); ++i) {
    const int64_t v = host.data_ptr<int64_t>()[i];
    EMBER_CHECK(v >= 0 && v < x.size(0), Status::OutOfRange, "RoiAlign: batch index ", v, " of roi ", i,
                " is out of range for input ", shape_str(x.sizes()));
  }
  EMBER_ASSIGN_OR_RETURN(Tensor y, core::empty({rois.size(0), x.size(1), p.output_height, p.output_width},
                                               TensorOptions(x.dtype()).device(x.device())));
  if (y.numel() > 0) EMBER_TRY(run_kernel(OpKind::RoiAlign, {x, rois, bi}, {y}, p));
  return y;
}

Tensor roi_align(const Tensor& x, const Tensor& rois, const Tensor& batch_indices, const RoiAlignParams& p) {
  return unwrap(core::roi_align(x, rois, batch_indices, p));
}

}  // namespace ember

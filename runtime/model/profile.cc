#include "runtime/model/profile.h"

#include <string>
#include <utility>

#include "runtime/model/model_access.h"

namespace ember {

void OpTimer::begin(const Model& m, int k, bool on_cpu, Placement place, DeviceType device,
                    const std::vector<Tensor>& values) {
  const fb::Operator& op = m.op(k);
  entry_ = OpProfile();
  entry_.op = k;
  entry_.type = std::string(op_name(m.op_kind(k)));
  entry_.name = fb_str(op.name());
  entry_.device = on_cpu || place == Placement::Host ? "cpu"
                  : place == Placement::Device       ? std::string(device_type_name(device))
                                                     : "cpu (fallback)";
  for (uint32_t j = 0; j < vlen(op.inputs()); ++j) {
    const int32_t t = op.inputs()->Get(j);
    if (t >= 0 && values[static_cast<size_t>(t)].defined()) entry_.input_shapes.push_back(values[static_cast<size_t>(t)].sizes());
  }
  start_ = std::chrono::steady_clock::now();
}

OpProfile OpTimer::end() {
  entry_.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  return std::move(entry_);
}

}  // namespace ember

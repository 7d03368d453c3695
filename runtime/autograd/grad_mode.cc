#include "runtime/autograd/grad_mode.h"

namespace ember {
namespace {
thread_local bool grad_enabled = true;
}  // namespace

bool GradMode::is_enabled() { return grad_enabled; }
void GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }

}  // namespace ember

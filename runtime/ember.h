// The ember C++ API: tensors, creation, views and ops.
#pragma once

#include "runtime/autograd/grad_mode.h"
#include "runtime/autograd/node.h"
#include "runtime/core/error.h"
#include "runtime/core/rng.h"
#include "runtime/core/thread_pool.h"
#include "runtime/ops/ops.h"
#include "runtime/tensor/tensor.h"

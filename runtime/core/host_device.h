// EMBER_HD marks a function callable from both host and CUDA device code
// (kernels/cuda compiles the shared scalar math with nvcc); empty elsewhere.
#pragma once

#if defined(__CUDACC__)
#define EMBER_HD __host__ __device__
#else
#define EMBER_HD
#endif

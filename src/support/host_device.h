// CHORUS_HD marks code that host and device builds share (the IR's step semantics and tiling):
// __host__ __device__ under nvcc, nothing in a host compiler. Such code is constexpr or inline,
// uses no STL, no virtuals and no exceptions.
#pragma once

#if defined(__CUDACC__)
#define CHORUS_HD __host__ __device__
// Before a CHORUS_HD template that calls a caller-given functor: the functor may be device- or
// host-only; nvcc checks the instantiation it uses instead (thrust's exec-check pragma).
#define CHORUS_HD_TEMPLATE _Pragma("nv_exec_check_disable")
#else
#define CHORUS_HD
#define CHORUS_HD_TEMPLATE
#endif

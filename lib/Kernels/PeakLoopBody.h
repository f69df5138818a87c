//===- PeakLoopBody.h - The register-only loop, any vector -*- C++ -*-===//
//
// Included by the Peak*.cpp files only, each built for its instruction set:
// static, so each keeps its own copy.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_PEAKLOOPBODY_H
#define QOPT_LIB_KERNELS_PEAKLOOPBODY_H

#include <cstdint>

/// `Chains` independent accumulators, each updated by `step(acc, a, b)`
/// (MacsPerStep multiply-adds) per round; returns the MACs done.
template <typename Vec, int Chains, int MacsPerStep, typename Splat,
          typename Step, typename Add, typename FirstLane>
static int64_t runPeakLoop(int64_t iterations, int32_t *sink, Splat splat,
                           Step step, Add add, FirstLane firstLane) {
  Vec acc[Chains];
#pragma GCC unroll 32
  for (int i = 0; i < Chains; ++i)
    acc[i] = splat(i);
  Vec a = splat(0x01020304), b = splat(0x05060708);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 32
    for (int i = 0; i < Chains; ++i)
      acc[i] = step(acc[i], a, b);
    // Keeps the loop: the operands could otherwise be proven constant.
    __asm__ volatile("" : "+v"(a), "+v"(b));
  }
  Vec total = acc[0];
#pragma GCC unroll 32
  for (int i = 1; i < Chains; ++i)
    total = add(total, acc[i]);
  *sink = firstLane(total);
  return iterations * Chains * MacsPerStep;
}

#endif // QOPT_LIB_KERNELS_PEAKLOOPBODY_H

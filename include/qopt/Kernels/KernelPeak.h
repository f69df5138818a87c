//===- KernelPeak.h - The machine's int8 multiply-add peak -----*- C++ -*-===//
//
// What one core's multiply-add units reach at best with the instructions a
// kernel family runs, measured here and now with a loop that keeps all its
// operands in registers: the yardstick for "% of peak" in `qopt-run
// --profile` and in the kernel micro-benchmark.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_KERNELS_KERNELPEAK_H
#define QOPT_KERNELS_KERNELPEAK_H

#include "qopt/Kernels/CpuFeatures.h"

namespace qopt {
namespace kernels {

/// One core's int8 GMAC/s with the instructions of `isa`'s GEMM (vpmaddwd
/// for avx2, vpdpbusd for the VNNI families, tdpbusd for amx), the best of a
/// few timed rounds of about 10 ms each; 0 for scalar (no such loop) or a
/// family this machine does not run.
double measurePeakGmacs(Isa isa);

} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_KERNELPEAK_H

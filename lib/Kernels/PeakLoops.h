//===- PeakLoops.h - Each family's int8 MAC peak, in registers -*- C++ -*-===//
//
// Private to lib/Kernels (KernelPeak.cpp calls them; the files that
// define them are built for their instruction set). Each loop keeps its
// accumulators and operands in registers (no memory traffic), with enough
// independent chains to cover the instruction's latency: what the machine's
// multiply-add units can do at best, the yardstick for the kernels' GMAC/s.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_PEAKLOOPS_H
#define QOPT_LIB_KERNELS_PEAKLOOPS_H

#include <cstdint>

namespace qopt {
namespace kernels {
namespace peak {
/// Each runs `iterations` rounds and returns the MACs done (and a value the
/// compiler cannot drop).
int64_t peakAvx2(int64_t iterations, int32_t *sink);
int64_t peakAvxVnni(int64_t iterations, int32_t *sink);
int64_t peakAvx512Vnni(int64_t iterations, int32_t *sink);
int64_t peakAmx(int64_t iterations, int32_t *sink);
} // namespace peak
} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_PEAKLOOPS_H

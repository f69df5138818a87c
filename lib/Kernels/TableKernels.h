//===- TableKernels.h - The byte-table families' entry points --*- C++ -*-===//
//
// Private to lib/Kernels (GemmKernels.h says why the ISA files include
// nothing else).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_TABLEKERNELS_H
#define QOPT_LIB_KERNELS_TABLEKERNELS_H

#include <cstdint>

namespace qopt {
namespace kernels {
enum class Isa; // CpuFeatures.h, which the ISA files do not include
namespace table {

/// out[i] = table[in[i]] for i < count.
using Kernel = void (*)(const uint8_t *table, const uint8_t *in, int64_t count,
                        uint8_t *out);

/// The elements [0, count - count % 32) of in; the caller does the rest.
void avx2(const uint8_t *table, const uint8_t *in, int64_t count, uint8_t *out);

// The unit tests' emulated build of TableAvx512.cpp (Intrinsics.h) defines
// it under table::emulated, next to the real one.
#ifdef QOPT_EMULATED_INTRINSICS
inline namespace emulated {
#endif
/// All `count` elements, 64 at a time (AVX512-VBMI's vpermi2b).
void avx512Vbmi(const uint8_t *table, const uint8_t *in, int64_t count,
                uint8_t *out);
#ifdef QOPT_EMULATED_INTRINSICS
} // namespace emulated
#endif

/// Tests only: lookupBytes for the family `isa` (an Isa) calls `kernel`
/// for all the elements (null: its own path again). The unit tests put the
/// emulated VBMI build there on machines without VBMI.
void replaceForTesting(Isa isa, Kernel kernel);

} // namespace table
} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_TABLEKERNELS_H

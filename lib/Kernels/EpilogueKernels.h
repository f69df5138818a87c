//===- EpilogueKernels.h - The conv epilogue's vector kernel ----*- C++ -*-===//
//
// Private to lib/Kernels (GemmKernels.h says why the ISA files include
// nothing else). One output row of a conv step, from its s32 sums to the
// stored result:
//
//   y = float(acc[p][c] - zeroTerm[c]) * scale[c]  (+ bias[c])
//   r = float(residual[p][c] - residualZero) * residualScale
//   y += r (before or after the activation); activation (none, relu,
//   leaky relu, clip, sigmoid, silu); then u8 = clamp(nearbyint(y /
//   outputScale) + outputZero, 0, 255) with NaN -> 0, or y itself for a
//   float result;
//   with a pair stage (an int8 result without a residual), that u8 then
//   goes through the requantizing Add of Int8Conv.h's RequantizedAdd with
//   the pair operand's byte, as its scalar apply() computes it.
//
// Every operation is one IEEE float operation in the order the scalar
// epilogue (Int8Conv.cpp) performs it, so the vector result is the scalar
// one bit for bit: the comparison activations are comparisons and selects,
// LeakyRelu's float product equals the scalar's double product rounded to
// float, sigmoid and SiLU follow SigmoidFloat.h operation for operation
// (its fused multiply-adds as vfmadd, no other multiply fused with an add:
// the files are built with -ffp-contract=off).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_EPILOGUEKERNELS_H
#define QOPT_LIB_KERNELS_EPILOGUEKERNELS_H

#include <cstdint>

namespace qopt {
namespace kernels {
enum class Isa; // CpuFeatures.h, which the ISA files do not include
namespace epilogue {

/// The activations the vector epilogue runs.
enum class VectorActivation : uint8_t {
  None,
  Relu,
  LeakyRelu,
  Clip,
  Sigmoid,
  Silu
};

/// The row's constants, per channel of the group.
struct Params {
  const int32_t *zeroTerm; ///< input zero point * weight channel sum
  const float *scale;
  const float *bias; ///< or null
  VectorActivation activation;
  float alpha, beta; ///< leaky relu slope; clip bounds
  bool hasResidual, residualAfterActivation;
  float residualScale;
  int32_t residualZero;
  float outputScale; ///< 0: float result
  float outputZero;
  /// The pair stage (RequantizedAdd): the u8 result v and the pair
  /// operand's byte w give clamp(nearbyint(min(max(float(v - pairZeroV) *
  /// pairScaleV + float(w - pairZeroW) * pairScaleW, low), high) /
  /// pairOutputScale) + pairOutputZero, 0, 255).
  bool hasPair;
  float pairScaleV, pairZeroV, pairScaleW;
  int32_t pairZeroW;
  float pairLow, pairHigh, pairOutputScale, pairOutputZero;
};

/// `pixels` pixels of `channels` sums each (acc rows `channels` apart);
/// residual (or, with a pair stage, the pair operand) and output rows are
/// `stride` elements apart.
using Kernel = void (*)(const Params &p, const int32_t *acc, int64_t pixels,
                        int64_t channels, const uint8_t *residual, void *output,
                        int64_t stride);

// The unit tests' emulated build of the 16-lane file (Intrinsics.h)
// defines it under epilogue::emulated, next to the real one.
#ifdef QOPT_EMULATED_INTRINSICS
inline namespace emulated {
#endif

/// 8 lanes (EpilogueAvx2.cpp) and 16 lanes (EpilogueAvx512.cpp): the same
/// bits.
void avx2(const Params &p, const int32_t *acc, int64_t pixels, int64_t channels,
          const uint8_t *residual, void *output, int64_t stride);
void avx512(const Params &p, const int32_t *acc, int64_t pixels,
            int64_t channels, const uint8_t *residual, void *output,
            int64_t stride);

#ifdef QOPT_EMULATED_INTRINSICS
} // namespace emulated
#endif

/// The epilogue for the GEMM family `isa` (an Isa): avx512 for the
/// AVX-512 families (avx512vnni, amx), avx2 for the others; or what a test
/// put in its place.
Kernel forFamily(Isa isa);
/// Tests only: forFamily(isa) returns `kernel` (null: its own again). The
/// unit tests put the emulated 16-lane build there on machines without
/// AVX-512.
void replaceForTesting(Isa isa, Kernel kernel);

} // namespace epilogue
} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_EPILOGUEKERNELS_H

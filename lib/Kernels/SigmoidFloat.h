//===- SigmoidFloat.h - The epilogue's sigmoid in float ops -----*- C++ -*-===//
//
// Private to lib/Kernels. The int8 conv epilogue's sigmoid (and SiLU,
// x * sigmoid(x)) as a fixed sequence of IEEE float operations, so that the
// scalar epilogue here and the vector ones (EpilogueBody.h, 8 and 16 lanes)
// give the same bits:
//
//   c = max(min(x, 87), -88)           as minps/maxps: NaN -> 87
//   t = -c                             (never formed: folded into n and r)
//   n = nearbyint(c * -log2(e)),  r = (t - n * ln2hi) - n * ln2lo
//   e^t = 2^n * (1 + r + r^2 * P(r))     P: degree 5, the whole
//                                        polynomial by Horner's rule
//   sigmoid = 1 / (1 + e^t),  NaN stays NaN
//   SiLU = x / (1 + e^t)
//   SiLU onto a grid of scale S: x / (e^t * S + S), one division for
//     both (the quotient then rounds to the grid as any other)
//
// where every a * b + c above is one fused multiply-add (fmaf; vfmadd in
// the vector files, which the AVX2 family's CPUs all have): 8 operations
// fewer than a multiply and an add each, and one rounding fewer each. The
// product with 2^n is exact (e^t stays normal after the clamp), so the
// 16-lane file may form it with vscalefps.
//
// e^t is within 2 ulp of the true value over the clamped range, so the
// sigmoid differs from the reference's (in double, from libm's exp) by a
// few float ulp: a quantized result moves by at most one step, and only
// where the reference lies that close to a rounding boundary.
//
// Built into files with -ffp-contract=off or without FMA, so no other
// multiply is fused with an add. No includes: the ISA files include nothing
// but their private headers (GemmKernels.h says why).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_SIGMOIDFLOAT_H
#define QOPT_LIB_KERNELS_SIGMOIDFLOAT_H

namespace qopt {
namespace kernels {
namespace sigmoid {

/// The constants, shared by all versions. x's clamp keeps e^-x finite
/// and normal.
constexpr float kLowestX = -88.0f, kHighestX = 87.0f;
constexpr float kLog2E = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
/// P(r), highest power first (Cephes' expf coefficients).
constexpr float kPoly[6] = {1.9875691500e-4f, 1.3981999507e-3f,
                            8.3334519073e-3f, 4.1665795894e-2f,
                            1.6666665459e-1f, 5.0000001201e-1f};

/// maxps / minps on one lane: the second operand when either is NaN.
static inline float maxLane(float a, float b) { return a > b ? a : b; }
static inline float minLane(float a, float b) { return a < b ? a : b; }

/// e^-x, x clamped to [-88, 87] first (NaN: 87), by the sequence above.
static inline float expOfNegated(float x) {
  float c = maxLane(minLane(x, kHighestX), kLowestX);
  float n = __builtin_nearbyintf(c * -kLog2E);
  float r = __builtin_fmaf(n, -kLn2Hi, -c);
  r = __builtin_fmaf(n, -kLn2Lo, r);
  // Horner's rule, seven fused steps: two operations fewer than Estrin's
  // scheme (r^2, r^4), whose shorter chain the epilogue does not need (it
  // runs several pixels' chains at once).
  float e = kPoly[0];
  for (int i = 1; i < 6; ++i)
    e = __builtin_fmaf(e, r, kPoly[i]);
  e = __builtin_fmaf(e, r, 1.0f);
  e = __builtin_fmaf(e, r, 1.0f);
  // 2^n: n lies in [-126, 127] after the clamp.
  int bits = (int(n) + 127) << 23;
  float scale;
  __builtin_memcpy(&scale, &bits, sizeof(scale));
  return e * scale;
}

static inline float scalar(float x) {
  if (x != x)
    return x;
  return 1.0f / (1.0f + expOfNegated(x));
}

/// x * sigmoid(x) as x / (1 + e^-x); NaN stays NaN.
static inline float silu(float x) { return x / (1.0f + expOfNegated(x)); }

/// SiLU divided by `scale`, one division: x / (e^-x * scale + scale). For
/// a normal scale (at least 2^-126), so that the divisor keeps its
/// precision.
static inline float siluOverScale(float x, float scale) {
  return x / __builtin_fmaf(expOfNegated(x), scale, scale);
}

} // namespace sigmoid
} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_SIGMOIDFLOAT_H

//===- SigmoidFloat.h - The epilogue's sigmoid in float ops -----*- C++ -*-===//
//
// Private to lib/Runtime/Int8. The int8 conv epilogue's sigmoid (and SiLU,
// x * sigmoid(x)) as a fixed sequence of IEEE float operations, so that the
// scalar epilogue here and the vector one (EpilogueAvx2.cpp, the same
// operations 8 lanes at a time) give the same bits:
//
//   t = min(max(-x, -87), 88)          as maxps/minps: NaN -> -87
//   n = nearbyint(t * log2(e)),  r = (t - n * ln2hi) - n * ln2lo
//   e^t = 2^n * ((r^2 * P(r) + r) + 1)   P: degree 5, Estrin's scheme
//   sigmoid = 1 / (1 + e^t),  NaN stays NaN
//
// where every a * b + c above is one fused multiply-add (fmaf; vfmadd in
// the vector files, which the AVX2 family's CPUs all have): 8 operations
// fewer than a multiply and an add each, and one rounding fewer each.
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

#ifndef QOPT_LIB_RUNTIME_INT8_SIGMOIDFLOAT_H
#define QOPT_LIB_RUNTIME_INT8_SIGMOIDFLOAT_H

namespace qopt {
namespace rt {
namespace sigmoid {

/// The constants, shared by both versions.
constexpr float kLowest = -87.0f, kHighest = 88.0f;
constexpr float kLog2E = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
/// P(r), highest power first (Cephes' expf coefficients).
constexpr float kPoly[6] = {1.9875691500e-4f, 1.3981999507e-3f,
                            8.3334519073e-3f, 4.1665795894e-2f,
                            1.6666665459e-1f, 5.0000001201e-1f};

/// maxps / minps on one lane: the second operand when either is NaN.
static inline float maxLane(float a, float b) { return a > b ? a : b; }
static inline float minLane(float a, float b) { return a < b ? a : b; }

static inline float scalar(float x) {
  if (x != x)
    return x;
  float t = minLane(maxLane(-x, kLowest), kHighest);
  float n = __builtin_nearbyintf(t * kLog2E);
  float r = __builtin_fmaf(n, -kLn2Hi, t);
  r = __builtin_fmaf(n, -kLn2Lo, r);
  // P(r) by Estrin's scheme: three independent pairs, then r^2 and r^4,
  // half of Horner's chain of dependent operations.
  float z = r * r;
  float r4 = z * z;
  float hi = __builtin_fmaf(kPoly[0], r, kPoly[1]);
  float mid = __builtin_fmaf(kPoly[2], r, kPoly[3]);
  float lo = __builtin_fmaf(kPoly[4], r, kPoly[5]);
  float p = __builtin_fmaf(hi, r4, __builtin_fmaf(mid, z, lo));
  float e = __builtin_fmaf(p, z, r) + 1.0f;
  // 2^n: n lies in [-126, 127] after the clamp.
  int bits = (int(n) + 127) << 23;
  float scale;
  __builtin_memcpy(&scale, &bits, sizeof(scale));
  e = e * scale;
  return 1.0f / (1.0f + e);
}

} // namespace sigmoid
} // namespace rt
} // namespace qopt

#endif // QOPT_LIB_RUNTIME_INT8_SIGMOIDFLOAT_H

//===- EmulatedIntrinsics.h - x86 intrinsics in portable C++ ----*- C++ -*-===//
//
// What lib/Kernels/Intrinsics.h includes in the unit tests' second
// build of the kernel families: SIMDe's AVX2 and AVX-512 (VNNI included)
// under the intrinsics' own names, the VEX form of vpdpbusd (AVX-VNNI) as
// the EVEX one (the same arithmetic), fused multiply-adds rounded once, and
// a software AMX (EmulatedAmx.h).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_EMULATED_EMULATEDINTRINSICS_H
#define QOPT_LIB_KERNELS_EMULATED_EMULATEDINTRINSICS_H

#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#include <cstdint>
#include <cstring>

#define _mm256_dpbusd_avx_epi32(src, a, b) simde_mm256_dpbusd_epi32(src, a, b)

// What this SIMDe (0.7.4, Debian 12) leaves out.
typedef simde__mmask16 __mmask16;
#ifndef _MM_FROUND_TO_NEAREST_INT
#define _MM_FROUND_TO_NEAREST_INT SIMDE_MM_FROUND_TO_NEAREST_INT
#endif
#ifndef _MM_FROUND_NO_EXC
#define _MM_FROUND_NO_EXC SIMDE_MM_FROUND_NO_EXC
#endif
#ifndef _CMP_LT_OQ
#define _CMP_LT_OQ SIMDE_CMP_LT_OQ
#endif
#ifndef _CMP_UNORD_Q
#define _CMP_UNORD_Q SIMDE_CMP_UNORD_Q
#endif

/// vmovdqu32 with a mask: lane i is stored iff bit i of k is set.
inline void _mm512_mask_storeu_epi32(void *dst, __mmask16 k, __m512i v) {
  int32_t lanes[16];
  simde_mm512_storeu_si512(lanes, v);
  for (int i = 0; i < 16; ++i)
    if ((k >> i) & 1)
      std::memcpy(static_cast<char *>(dst) + 4 * i, &lanes[i], 4);
}

// The conversions the 16-lane epilogue uses (EpilogueAvx512.cpp), lane by
// lane as the instructions define them for the values it converts: int32
// to float rounds to nearest even, float to int32 rounds to nearest even
// (the default MXCSR mode; NaN and values out of range give INT32_MIN),
// bytes widen with zeros, int32 narrows to its low byte (or, as unsigned,
// saturates to 255).
template <typename Result, typename Out, typename In, typename Vector,
          typename Convert>
inline Result convert16Lanes(Vector v, Convert convert) {
  In in[16];
  Out out[16];
  static_assert(sizeof(in) == sizeof(Vector) && sizeof(out) == sizeof(Result),
                "16 lanes each");
  std::memcpy(in, &v, sizeof(in));
  for (int i = 0; i < 16; ++i)
    out[i] = convert(in[i]);
  Result result;
  std::memcpy(&result, out, sizeof(result));
  return result;
}
inline __m512 _mm512_cvtepi32_ps(__m512i v) {
  return convert16Lanes<__m512, float, int32_t>(
      v, [](int32_t x) { return float(x); });
}
inline __m512i _mm512_cvtps_epi32(__m512 v) {
  return convert16Lanes<__m512i, int32_t, float>(v, [](float x) {
    float r = __builtin_nearbyintf(x);
    // NaN and out of range: the "integer indefinite" value.
    return r >= -0x1p31f && r < 0x1p31f ? int32_t(r) : INT32_MIN;
  });
}
inline __m512i _mm512_cvtepu8_epi32(__m128i v) {
  return convert16Lanes<__m512i, int32_t, uint8_t>(
      v, [](uint8_t x) { return int32_t(x); });
}
inline __m128i _mm512_cvtepi32_epi8(__m512i v) {
  return convert16Lanes<__m128i, uint8_t, int32_t>(
      v, [](int32_t x) { return uint8_t(x); });
}
inline __m128i _mm512_cvtusepi32_epi8(__m512i v) {
  return convert16Lanes<__m128i, uint8_t, uint32_t>(
      v, [](uint32_t x) { return uint8_t(x > 255 ? 255 : x); });
}

// SIMDe's portable fused multiply-adds round twice (a product, then a
// sum); the epilogue's need vfmadd's one rounding, lane by lane.
template <typename Fused>
inline __m512 fuse16Lanes(__m512 a, __m512 b, __m512 c, Fused fused) {
  float x[16], y[16], z[16], r[16];
  std::memcpy(x, &a, sizeof(x));
  std::memcpy(y, &b, sizeof(y));
  std::memcpy(z, &c, sizeof(z));
  for (int i = 0; i < 16; ++i)
    r[i] = fused(x[i], y[i], z[i]);
  __m512 result;
  std::memcpy(&result, r, sizeof(result));
  return result;
}
#undef _mm512_fmadd_ps
inline __m512 _mm512_fmadd_ps(__m512 a, __m512 b, __m512 c) {
  return fuse16Lanes(a, b, c, [](float x, float y, float z) {
    return __builtin_fmaf(x, y, z);
  });
}
#undef _mm512_fnmsub_ps
inline __m512 _mm512_fnmsub_ps(__m512 a, __m512 b, __m512 c) {
  return fuse16Lanes(a, b, c, [](float x, float y, float z) {
    return __builtin_fmaf(-x, y, -z);
  });
}

// SIMDe's vscalefps multiplies by its own exp2 of the exponent; the
// instruction's product is a * 2^floor(n) rounded once, as ldexp gives it.
#undef _mm512_scalef_ps
inline __m512 _mm512_scalef_ps(__m512 a, __m512 n) {
  return fuse16Lanes(a, n, n, [](float x, float e, float) {
    return __builtin_ldexpf(x, int(__builtin_floorf(e)));
  });
}

#include "EmulatedAmx.h"

#endif // QOPT_LIB_KERNELS_EMULATED_EMULATEDINTRINSICS_H

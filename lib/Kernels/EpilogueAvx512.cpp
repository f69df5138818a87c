//===- EpilogueAvx512.cpp - The conv epilogue, 16 channels at a time ------===//
//
// Built with -mavx512f -mavx512bw -mavx512vl -mavx512dq -ffp-contract=off;
// used by the avx512vnni and amx families, whose GEMMs leave the epilogue a
// larger share of a conv than AVX2's do. EpilogueBody.h holds the loops;
// here are the lane operations on zmm registers, with mask registers for
// the compares. The same operations as the 8-lane file, so the same bits
// (and the scalar epilogue's). The unit tests build this file a second
// time over SIMDe (Intrinsics.h), so it is checked on machines without
// AVX-512 too.
//
//===----------------------------------------------------------------------===//

#include "Intrinsics.h"

#include "EpilogueBody.h"

namespace {

/// EpilogueBody.h's lane operations on zmm registers.
struct Avx512Lanes {
  static constexpr int kLanes = 16;
  static constexpr bool kIntegerGrid = true;
#ifdef QOPT_EMULATED_INTRINSICS
  static constexpr bool kMaskedTails = false; // SIMDe has no masked loads
#else
  static constexpr bool kMaskedTails = true;
#endif
  using F = __m512;
  using I = __m512i;
  using M = __mmask16;

  static QOPT_EPILOGUE_INLINE F set1(float v) { return _mm512_set1_ps(v); }
  static QOPT_EPILOGUE_INLINE I set1i(int32_t v) {
    return _mm512_set1_epi32(v);
  }
  static QOPT_EPILOGUE_INLINE F zero() { return _mm512_setzero_ps(); }
  static QOPT_EPILOGUE_INLINE F add(F a, F b) { return _mm512_add_ps(a, b); }
  static QOPT_EPILOGUE_INLINE F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static QOPT_EPILOGUE_INLINE F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static QOPT_EPILOGUE_INLINE F div(F a, F b) { return _mm512_div_ps(a, b); }
  static QOPT_EPILOGUE_INLINE F fma(F a, F b, F c) {
    return _mm512_fmadd_ps(a, b, c);
  }
  static QOPT_EPILOGUE_INLINE F fnmsub(F a, F b, F c) {
    return _mm512_fnmsub_ps(a, b, c);
  }
  /// vscalefps: one operation for the product the 8-lane file forms with
  /// three more (the exponent field built, then a multiply); the product
  /// is exact, so the same bits.
  static QOPT_EPILOGUE_INLINE F timesPowerOf2(F a, F n) {
    return _mm512_scalef_ps(a, n);
  }
  static QOPT_EPILOGUE_INLINE F min(F a, F b) { return _mm512_min_ps(a, b); }
  static QOPT_EPILOGUE_INLINE F max(F a, F b) { return _mm512_max_ps(a, b); }
  static QOPT_EPILOGUE_INLINE F round(F a) {
    return _mm512_roundscale_ps(a,
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static QOPT_EPILOGUE_INLINE I subi(I a, I b) {
    return _mm512_sub_epi32(a, b);
  }
  static QOPT_EPILOGUE_INLINE F toFloat(I a) { return _mm512_cvtepi32_ps(a); }
  static QOPT_EPILOGUE_INLINE I toInt(F a) { return _mm512_cvtps_epi32(a); }
  static QOPT_EPILOGUE_INLINE F asFloat(I a) { return _mm512_castsi512_ps(a); }
  static QOPT_EPILOGUE_INLINE M less(F a, F b) {
    return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ);
  }
  static QOPT_EPILOGUE_INLINE M unordered(F a) {
    return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
  }
  static QOPT_EPILOGUE_INLINE F select(M m, F a, F b) {
    return _mm512_mask_blend_ps(m, a, b);
  }

  // Whole vectors: kLanes values (EpilogueBody.h pads a row's last ones).
  static QOPT_EPILOGUE_INLINE I loadI(const int32_t *at) {
    return _mm512_loadu_si512(at);
  }
  static QOPT_EPILOGUE_INLINE I loadBytes(const uint8_t *at) {
    return _mm512_cvtepu8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(at)));
  }
  static QOPT_EPILOGUE_INLINE void storeF(F y, float *out) {
    _mm512_storeu_ps(out, y);
  }
#ifndef QOPT_EMULATED_INTRINSICS
  /// A row's last `count` (< 16) channels: masked loads and stores that
  /// touch no byte past them.
  static QOPT_EPILOGUE_INLINE __mmask16 firstLanes(int64_t count) {
    return __mmask16((1u << count) - 1);
  }
  static QOPT_EPILOGUE_INLINE I loadIMasked(const int32_t *at, int64_t count) {
    return _mm512_maskz_loadu_epi32(firstLanes(count), at);
  }
  static QOPT_EPILOGUE_INLINE I loadBytesMasked(const uint8_t *at,
                                                int64_t count) {
    return _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(firstLanes(count), at));
  }
  static QOPT_EPILOGUE_INLINE void storeBytesMasked(I v, uint8_t *out,
                                                    int64_t count) {
    _mm512_mask_cvtusepi32_storeu_epi8(out, firstLanes(count), v);
  }
  static QOPT_EPILOGUE_INLINE void storeFMasked(F y, float *out,
                                                int64_t count) {
    _mm512_mask_storeu_ps(out, firstLanes(count), y);
  }
#endif
  /// Lanes holding 0 or more, saturated to 255 (vpmovusdb).
  static QOPT_EPILOGUE_INLINE void storeBytes(I v, uint8_t *out) {
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out),
                     _mm512_cvtusepi32_epi8(v));
  }
  /// The float grid's values with one operation fewer: capped at 2^30
  /// (NaN stays: minps returns its second operand), rounded to nearest
  /// even by the conversion (NaN and below -2^31 give INT32_MIN), the zero
  /// point added in int32, negatives raised to 0; the store saturates.
  static QOPT_EPILOGUE_INLINE I gridInts(F quotient, I zero) {
    I rounded =
        _mm512_cvtps_epi32(_mm512_min_ps(_mm512_set1_ps(0x1p30f), quotient));
    return _mm512_max_epi32(_mm512_add_epi32(rounded, zero),
                            _mm512_setzero_si512());
  }
};

} // namespace

void qopt::kernels::epilogue::avx512(const Params &p, const int32_t *acc,
                                     int64_t pixels, int64_t channels,
                                     const uint8_t *residual, void *output,
                                     int64_t stride) {
  runEpilogue<Avx512Lanes>(p, acc, pixels, channels, residual, output, stride);
}

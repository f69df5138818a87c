//===- EpilogueAvx2.cpp - The conv epilogue, 8 channels at a time ---------===//
//
// Built with -mavx2 -mfma -ffp-contract=off; used by the AVX2 and AVX-VNNI
// families (EpilogueAvx512.cpp serves the AVX-512 ones). Each activation,
// with or without a residual, onto u8 or float, is a loop of its own
// (EpilogueBody.h): with the choices made inside the loop, it took 2-3x as
// long (relu: 0.70 against 0.31 ns an element on a Zen 3 core), which a
// VNNI or AMX GEMM would no longer hide. The last channels of a row, fewer
// than 8, go through the same code on padded copies.
//
//===----------------------------------------------------------------------===//

#include <immintrin.h>

#include "EpilogueBody.h"

namespace {

/// EpilogueBody.h's lane operations on ymm registers.
struct Avx2Lanes {
  static constexpr int kLanes = 8;
  static constexpr bool kMaskedTails = false;
  static constexpr bool kIntegerGrid = false; ///< no unsigned-saturating
                                              ///< dword-to-byte store
  using F = __m256;
  using I = __m256i;
  using M = __m256; ///< all ones where the compare holds

  static QOPT_EPILOGUE_INLINE F set1(float v) { return _mm256_set1_ps(v); }
  static QOPT_EPILOGUE_INLINE I set1i(int32_t v) {
    return _mm256_set1_epi32(v);
  }
  static QOPT_EPILOGUE_INLINE F zero() { return _mm256_setzero_ps(); }
  static QOPT_EPILOGUE_INLINE F add(F a, F b) { return _mm256_add_ps(a, b); }
  static QOPT_EPILOGUE_INLINE F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static QOPT_EPILOGUE_INLINE F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static QOPT_EPILOGUE_INLINE F div(F a, F b) { return _mm256_div_ps(a, b); }
  static QOPT_EPILOGUE_INLINE F fma(F a, F b, F c) {
    return _mm256_fmadd_ps(a, b, c);
  }
  static QOPT_EPILOGUE_INLINE F fnmsub(F a, F b, F c) {
    return _mm256_fnmsub_ps(a, b, c);
  }
  /// 2^n built in the exponent field: n + 127 shifted into place.
  static QOPT_EPILOGUE_INLINE F timesPowerOf2(F a, F n) {
    __m256i biased =
        _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_mul_ps(a, _mm256_castsi256_ps(_mm256_slli_epi32(biased, 23)));
  }
  static QOPT_EPILOGUE_INLINE F min(F a, F b) { return _mm256_min_ps(a, b); }
  static QOPT_EPILOGUE_INLINE F max(F a, F b) { return _mm256_max_ps(a, b); }
  static QOPT_EPILOGUE_INLINE F round(F a) {
    return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static QOPT_EPILOGUE_INLINE I subi(I a, I b) {
    return _mm256_sub_epi32(a, b);
  }
  static QOPT_EPILOGUE_INLINE F toFloat(I a) { return _mm256_cvtepi32_ps(a); }
  static QOPT_EPILOGUE_INLINE I toInt(F a) { return _mm256_cvtps_epi32(a); }
  static QOPT_EPILOGUE_INLINE F asFloat(I a) { return _mm256_castsi256_ps(a); }
  static QOPT_EPILOGUE_INLINE M less(F a, F b) {
    return _mm256_cmp_ps(a, b, _CMP_LT_OQ);
  }
  static QOPT_EPILOGUE_INLINE M unordered(F a) {
    return _mm256_cmp_ps(a, a, _CMP_UNORD_Q);
  }
  static QOPT_EPILOGUE_INLINE F select(M m, F a, F b) {
    return _mm256_blendv_ps(a, b, m);
  }

  // Whole vectors: kLanes values (EpilogueBody.h pads a row's last ones).
  static QOPT_EPILOGUE_INLINE I loadI(const int32_t *at) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(at));
  }
  static QOPT_EPILOGUE_INLINE I loadBytes(const uint8_t *at) {
    return _mm256_cvtepu8_epi32(
        _mm_loadl_epi64(reinterpret_cast<const __m128i *>(at)));
  }
  static QOPT_EPILOGUE_INLINE void storeF(F y, float *out) {
    _mm256_storeu_ps(out, y);
  }
  /// Lanes holding 0..255, packed to their low bytes.
  static QOPT_EPILOGUE_INLINE void storeBytes(I v, uint8_t *out) {
    __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(v),
                                     _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i *>(out),
                     _mm_packus_epi16(words, words));
  }
};

} // namespace

void qopt::kernels::epilogue::avx2(const Params &p, const int32_t *acc,
                                   int64_t pixels, int64_t channels,
                                   const uint8_t *residual, void *output,
                                   int64_t stride) {
  runEpilogue<Avx2Lanes>(p, acc, pixels, channels, residual, output, stride);
}

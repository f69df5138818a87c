//===- FloatMathBody.h - FloatMath.h's loops, per family -----*- C++ -*-===//
//
// Private to lib/Kernels. Included once by each family's file (scalar,
// AVX2, AVX-512) inside its own namespace and built with its flags and
// -ffp-contract=off: plain loops the compiler vectorizes, with selects for
// branches and blocks of 16 lanes for the sums, so each family computes
// the same operations in the same order and gives the same bits.
//
// Include it inside a namespace of qopt::kernels::floatmath, after
// FloatMathKernels.h; it includes nothing itself. kFamily is the table of
// the loops for FloatMath.cpp's dispatch.
//
//===----------------------------------------------------------------------===//

/// Lanes of the partial sums and the chunk every loop works in.
constexpr int kLanes = 16;

/// Horner's rule, highest coefficient first.
template <int N> inline float polynomial(const float (&c)[N], float t) {
  float r = c[0];
  for (int i = 1; i < N; ++i)
    r = r * t + c[i];
  return r;
}

/// e^x for x <= 0 (softmax's differences; 0 below -87.3, 1 above 0), NaN
/// for NaN.
/// Cephes' expf: x = n ln2 + r with |r| <= ln2 / 2, e^r by a degree-7
/// polynomial, 2^n by the exponent bits.
inline float expNonPositive(float x) {
  const float kLog2e = 1.44269504088896341f;
  const float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  const float kRound = 12582912.0f; // 1.5 * 2^23: adding it rounds to int
  static const float c[] = {1.9875691500e-4f, 1.3981999507e-3f,
                            8.3334519073e-3f, 4.1665795894e-2f,
                            1.6666665459e-1f, 5.0000001201e-1f};
  bool under = x < -87.3f;
  // Into [-87.3, 0], a NaN too (the comparison fails): no NaN or large
  // value reaches the conversion to int below. The NaN comes back at the end.
  float xc = x >= -87.3f ? x : -87.3f;
  xc = xc <= 0.0f ? xc : 0.0f;
  float n = (xc * kLog2e + kRound) - kRound;
  float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = polynomial(c, r) * (r * r) + r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  __builtin_memcpy(&scale, &bits, sizeof scale);
  float e = p * scale;
  e = under ? 0.0f : e;
  return x != x ? x : e;
}

/// e^x for x in [-16, 0] (erf's tail: -x^2 + R(x) there).
inline float expTail(float x) { return expNonPositive(x); }

inline float erfOf(float x) {
  // |x| <= 0.85: x * P(x^2); 0.85 < |x| < 4: 1 - e^(-x^2 + R(u)), u =
  // (|x| - 2.425) / 1.575 in [-1, 1]; least-squares fits on Chebyshev nodes
  // (FloatMath.h).
  static const float a[] = {
      8.895125569e-05f, -8.257478877e-04f, 5.210418392e-03f, -2.686292763e-02f,
      1.128375541e-01f, -3.761263747e-01f, 1.128379167e+00f};
  static const float b[] = {
      6.054270986e-05f,  -3.429348831e-04f, 1.292896887e-03f,
      -4.425561943e-03f, 1.433374109e-02f,  -4.505658415e-02f,
      1.454252571e-01f,  -5.690216786e-01f, -1.530043979e+00f};
  float ax = x < 0 ? -x : x;
  float t = ax * ax;
  float small = polynomial(a, t) * ax;
  float bx = ax < 4.0f ? ax : 4.0f;
  float u = (bx - 2.425f) * (1.0f / 1.575f);
  float large = 1.0f - expTail(-(bx * bx) + polynomial(b, u));
  float r = ax <= 0.85f ? small : ax < 4.0f ? large : 1.0f;
  r = ax != ax ? x : r; // NaN stays NaN
  return x < 0 ? -r : r;
}

inline void erfLoop(const float *x, float *y, int64_t n) {
  // One vector's erf is a long chain of dependent multiplies and adds;
  // four side by side keep the units busy (AVX-512: 50 -> 20 us for 16384
  // values). Each lane's operations are the same: the same bits.
#if defined(__clang__) && defined(__AVX512F__)
#pragma clang loop vectorize(enable) interleave_count(4)
#elif defined(__clang__)
#pragma clang loop vectorize(enable) interleave_count(2)
#endif
  for (int64_t i = 0; i < n; ++i)
    y[i] = erfOf(x[i]);
}

/// One softmax row in f32; false (y unspecified) when its max or sum is
/// not finite.
inline bool softmaxRow(const float *x, float *y, int64_t n) {
  float lanes[kLanes];
  for (int j = 0; j < kLanes; ++j)
    lanes[j] = -__builtin_inff();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j)
      lanes[j] = x[i + j] > lanes[j] ? x[i + j] : lanes[j];
  for (int j = 0; i + j < n; ++j)
    lanes[j] = x[i + j] > lanes[j] ? x[i + j] : lanes[j];
  float max = lanes[0];
  for (int j = 1; j < kLanes; ++j)
    max = lanes[j] > max ? lanes[j] : max;
  if (!__builtin_isfinite(max))
    return false;
  for (int j = 0; j < kLanes; ++j)
    lanes[j] = 0.0f;
  for (i = 0; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      float e = expNonPositive(x[i + j] - max);
      y[i + j] = e;
      lanes[j] += e;
    }
  for (int j = 0; i + j < n; ++j) {
    float e = expNonPositive(x[i + j] - max);
    y[i + j] = e;
    lanes[j] += e;
  }
  float sum = 0.0f;
  for (int j = 0; j < kLanes; ++j)
    sum += lanes[j];
  if (!__builtin_isfinite(sum) || !(sum > 0.0f))
    return false;
  for (i = 0; i < n; ++i)
    y[i] = y[i] / sum;
  return true;
}

/// The reference's HardSigmoid and HardSwish (ActivationMath.h) in double,
/// each element rounded once to f32: the same operations in the same order
/// as the scalar reference (no contraction), so the same bits, a vector of
/// doubles at a time. NaN stays NaN (both comparisons fail).
inline void hardSigmoidLoop(const float *x, float *y, int64_t n, double alpha,
                            double beta) {
  for (int64_t i = 0; i < n; ++i) {
    double v = alpha * double(x[i]) + beta;
    y[i] = float(v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v));
  }
}

inline void hardSwishLoop(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    double v = double(x[i]);
    double g = v / 6.0 + 0.5;
    y[i] = float(v * (g < 0.0 ? 0.0 : (g > 1.0 ? 1.0 : g)));
  }
}

/// sumColumns (SkipZeros) or its sums of every term for a width known when
/// compiled: the sums stay in registers across the k terms.
template <int64_t W, bool SkipZeros>
inline void sumColumnsFixed(const float *a, int64_t k, const float *b,
                            int64_t ldb, double *s) {
  double acc[W] = {};
  for (int64_t p = 0; p < k; ++p) {
    double x = a[p];
    if (SkipZeros && x == 0.0)
      continue;
    const float *row = b + p * ldb;
    for (int64_t j = 0; j < W; ++j)
      acc[j] += x * double(row[j]);
  }
  for (int64_t j = 0; j < W; ++j)
    s[j] = acc[j];
}

template <bool SkipZeros>
inline void sumColumnsOfWidth(const float *a, int64_t k, const float *b,
                              int64_t ldb, double *s, int64_t width) {
  if (width == 32)
    return sumColumnsFixed<32, SkipZeros>(a, k, b, ldb, s);
  if (width == 16)
    return sumColumnsFixed<16, SkipZeros>(a, k, b, ldb, s);
  for (int64_t j = 0; j < width; ++j)
    s[j] = 0.0;
  for (int64_t p = 0; p < k; ++p) {
    double x = a[p];
    if (SkipZeros && x == 0.0)
      continue;
    for (int64_t j = 0; j < width; ++j)
      s[j] += x * double(b[p * ldb + j]);
  }
}

inline void sumColumnsLoop(const float *a, int64_t k, const float *b,
                           int64_t ldb, double *s, int64_t width) {
  sumColumnsOfWidth<true>(a, k, b, ldb, s, width);
}

/// matmulLoop's block: R rows of a (k apart) times W columns of b (ldb
/// apart), every term, each sum in double in k order, rounded once into y
/// (ldy apart). b's row is widened once for the R rows.
template <int R, int W>
inline void matmulBlock(const float *a, int64_t k, const float *b, int64_t ldb,
                        float *y, int64_t ldy) {
  double acc[R][W] = {};
  for (int64_t p = 0; p < k; ++p) {
    double wide[W];
    for (int j = 0; j < W; ++j)
      wide[j] = double(b[p * ldb + j]);
    for (int r = 0; r < R; ++r) {
      double x = a[r * k + p];
      for (int j = 0; j < W; ++j)
        acc[r][j] += x * wide[j];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < W; ++j)
      y[r * ldy + j] = float(acc[r][j]);
}

/// Rows of a block: as many as the family's registers hold sums of (16
/// columns of doubles: 8 AVX-512 or 16 AVX2 vectors). The bits do not
/// depend on it.
#ifdef __AVX512F__
constexpr int kMatMulRows = 4;
#else
constexpr int kMatMulRows = 2;
#endif
constexpr int kMatMulColumns = 16;

/// y = a b for a [rows, k] and b [k, n] in rows: matmulBlock's sums.
inline void matmulLoop(const float *a, int64_t rows, int64_t k, const float *b,
                       int64_t n, float *y) {
  int64_t j0 = 0;
  for (; j0 + kMatMulColumns <= n; j0 += kMatMulColumns) {
    int64_t i = 0;
    for (; i + kMatMulRows <= rows; i += kMatMulRows)
      matmulBlock<kMatMulRows, kMatMulColumns>(a + i * k, k, b + j0, n,
                                               y + i * n + j0, n);
    for (; i < rows; ++i)
      matmulBlock<1, kMatMulColumns>(a + i * k, k, b + j0, n, y + i * n + j0,
                                     n);
  }
  if (j0 == n)
    return;
  double sums[kMatMulColumns];
  for (int64_t i = 0; i < rows; ++i) {
    sumColumnsOfWidth<false>(a + i * k, k, b + j0, n, sums, n - j0);
    for (int64_t j = j0; j < n; ++j)
      y[i * n + j] = float(sums[j - j0]);
  }
}

/// sumScaledColumns for a width known when compiled: b's value rebuilt
/// as an f32 product, widened, then multiplied and added as sumColumns
/// does. Its values are finite, so a term with a[p] == 0 is a zero, and
/// adding it is leaving it out: a sum from +0 is never -0, and s + 0 = s
/// otherwise. No branch on a's zeros, then (the pooled features of a
/// ReLU network have them at random: mispredicted).
template <int64_t W>
inline void sumScaledColumnsFixed(const float *a, int64_t k, const int8_t *q,
                                  const float *scale, int64_t ldb, double *s) {
  double acc[W] = {};
  for (int64_t p = 0; p < k; ++p) {
    double x = a[p];
    const int8_t *row = q + p * ldb;
    for (int64_t j = 0; j < W; ++j)
      acc[j] += x * double(float(row[j]) * scale[j]);
  }
  for (int64_t j = 0; j < W; ++j)
    s[j] = acc[j];
}

inline void sumScaledColumnsLoop(const float *a, int64_t k, const int8_t *q,
                                 const float *scale, int64_t ldb, double *s,
                                 int64_t width) {
  if (width == 32)
    return sumScaledColumnsFixed<32>(a, k, q, scale, ldb, s);
  if (width == 16)
    return sumScaledColumnsFixed<16>(a, k, q, scale, ldb, s);
  for (int64_t j = 0; j < width; ++j)
    s[j] = 0.0;
  for (int64_t p = 0; p < k; ++p) {
    double x = a[p];
    for (int64_t j = 0; j < width; ++j)
      s[j] += x * double(float(q[p * ldb + j]) * scale[j]);
  }
}

constexpr Family kFamily = {
    erfLoop,        softmaxRow, hardSigmoidLoop,     hardSwishLoop,
    sumColumnsLoop, matmulLoop, sumScaledColumnsLoop};

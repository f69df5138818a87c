//===- GemmKernels.h - The per-family GEMM entry points ---------*- C++ -*-===//
//
// Private to lib/Kernels. Each family lives in its own file, compiled
// for its instruction set; those files include nothing but this header and
// the intrinsics, so no inline function of a shared header is ever compiled
// there with instructions another machine may lack (the linker could keep
// that copy for everyone).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_GEMMKERNELS_H
#define QOPT_LIB_KERNELS_GEMMKERNELS_H

#include <cstdint>
#include <type_traits>

namespace qopt {
namespace kernels {
enum class Isa; // CpuFeatures.h, which these files do not include
namespace gemm {

/// A packed B, as plain data (see Int8Gemm.h for the layout).
struct Panels {
  const void *data;
  int64_t panelBytes; ///< distance between panels
  int64_t numPanels;  ///< ceil(n / 16)
  int64_t numGroups;  ///< ceil(k / 4)
  int64_t n, k;
};

/// A row of A, one k group at a time: 4 bytes, zero past the row's end.
static inline uint32_t loadGroup(const uint8_t *row, int64_t group, int64_t k) {
  int64_t first = group * 4;
  if (first + 4 <= k)
    return uint32_t(row[first]) | uint32_t(row[first + 1]) << 8 |
           uint32_t(row[first + 2]) << 16 | uint32_t(row[first + 3]) << 24;
  uint32_t v = 0;
  for (int64_t i = first; i < k; ++i)
    v |= uint32_t(row[i]) << (8 * (i - first));
  return v;
}

/// Calls step(g, rowGroup) for each k group g of b in order, where
/// rowGroup(row, g) is the 4 bytes of group g of a row of A as an int32:
/// one 4-byte load for the whole groups, then the last one zero-padded
/// past k (when k is not a multiple of 4). Keeping the check for the end
/// of k out of the whole groups' loop matters: with it inside, byte by
/// byte, the AVX-VNNI tile ran at a quarter of the vpdpbusd rate in
/// llvm-mca's models (bench/mca_kernels.py).
template <typename Step>
static inline void forEachGroup(const Panels &b, Step &&step) {
  int64_t fullGroups = b.k / 4;
  for (int64_t g = 0; g < fullGroups; ++g)
    step(g, [](const uint8_t *row, int64_t group) {
      int32_t bytes;
      __builtin_memcpy(&bytes, row + group * 4, 4);
      return bytes;
    });
  if (fullGroups < b.numGroups)
    step(fullGroups, [&](const uint8_t *row, int64_t group) {
      return int32_t(loadGroup(row, group, b.k));
    });
}

// Where a tile reads its rows of A: DenseRows or GatheredRows, each with
// from(row), the source of the rows from `row` on, and eachGroup<Rows>(b,
// step), which calls step(g, rowGroup) for each k group g, rowGroup(r)
// giving row r's 4 bytes of it. In an anonymous namespace: each family's
// file keeps its own copy, built for its own instructions.
namespace {

/// Rows of A in memory, `lda` apart.
struct DenseRows {
  const uint8_t *a;
  int64_t lda;

  DenseRows from(int64_t row) const { return {a + row * lda, lda}; }
  /// step(g, rowGroup) for each k group g, rowGroup(r) giving row r's 4
  /// bytes of it.
  template <int Rows, typename Step>
  __attribute__((always_inline)) void eachGroup(const Panels &b,
                                                Step &&step) const {
    forEachGroup(b, [&](int64_t g, auto rowGroup) {
      step(g, [&](int r) { return rowGroup(a + r * lda, g); });
    });
  }
};

/// Rows of A gathered from runs of bytes (an indirect GEMM): row i is
/// `taps` runs of b.k / taps bytes (whole k groups), run t at
/// runs[i * taps + t] + offset.
struct GatheredRows {
  const uint8_t *const *runs;
  int64_t taps, offset;

  GatheredRows from(int64_t row) const {
    return {runs + row * taps, taps, offset};
  }
  template <int Rows, typename Step>
  __attribute__((always_inline)) void eachGroup(const Panels &b,
                                                Step &&step) const {
    int64_t runGroups = b.k / 4 / taps;
    for (int64_t t = 0; t < taps; ++t) {
      const uint8_t *row[Rows];
#pragma GCC unroll 32
      for (int r = 0; r < Rows; ++r)
        row[r] = runs[r * taps + t] + offset;
      for (int64_t g = 0; g < runGroups; ++g)
        step(t * runGroups + g, [&](int r) {
          int32_t bytes;
          __builtin_memcpy(&bytes, row[r] + g * 4, 4);
          return bytes;
        });
    }
  }
};

} // namespace

/// Calls f(std::integral_constant<int, rows>()) for 1 <= rows <= Max: the
/// register tile for the rows left at the bottom of A.
template <int Max, typename F>
static inline void withRowCount(int64_t rows, F &&f) {
  if constexpr (Max > 0) {
    if (rows == Max)
      f(std::integral_constant<int, Max>());
    else
      withRowCount<Max - 1>(rows, f);
  }
}

/// The driver of the one-panel families: for each panel of 16 channels,
/// rows of A MaxRows at a time, then the rows left. Calls
/// tile(count, rows, panelBytes, cRows, channels) with count an
/// std::integral_constant and rows the source from the tile's first row.
template <int MaxRows, typename Source, typename Tile>
static inline void eachPanelTileOf(const Source &rows, int64_t m,
                                   const Panels &b, int32_t *c, int64_t ldc,
                                   Tile &&tile) {
  for (int64_t p = 0; p < b.numPanels; ++p) {
    const char *panel = static_cast<const char *>(b.data) + p * b.panelBytes;
    int64_t channels = b.n - p * 16;
    int64_t row = 0;
    for (; row + MaxRows <= m; row += MaxRows)
      tile(std::integral_constant<int, MaxRows>(), rows.from(row), panel,
           c + row * ldc + p * 16, channels);
    withRowCount<MaxRows - 1>(m - row, [&](auto count) {
      tile(count, rows.from(row), panel, c + row * ldc + p * 16, channels);
    });
  }
}

// The unit tests' emulated build of the families (Intrinsics.h) defines
// them under gemm::emulated, next to the real ones.
#ifdef QOPT_EMULATED_INTRINSICS
inline namespace emulated {
#endif

void scalar(const uint8_t *a, int64_t lda, int64_t m, const Panels &b,
            int32_t *c, int64_t ldc);
/// A is widened to 16 bits into `scratch` first (m * avx2WidenedStride
/// values, 64-byte aligned), interleaved by register tile (GemmAvx2.cpp).
void avx2(const uint8_t *a, int64_t lda, int64_t m, const Panels &b, int32_t *c,
          int64_t ldc, void *scratch);
/// The avx2 family's widened row: whole k groups, rounded up to 32 bytes.
static inline int64_t avx2WidenedStride(int64_t numGroups) {
  return (numGroups * 4 + 15) / 16 * 16;
}
void avxVnni(const uint8_t *a, int64_t lda, int64_t m, const Panels &b,
             int32_t *c, int64_t ldc);
/// avxVnni on gathered rows, as avx512VnniGathered.
void avxVnniGathered(const uint8_t *const *runs, int64_t taps, int64_t offset,
                     int64_t m, const Panels &b, int32_t *c, int64_t ldc);
void avx512Vnni(const uint8_t *a, int64_t lda, int64_t m, const Panels &b,
                int32_t *c, int64_t ldc);
/// avx512Vnni on rows of A gathered from runs of bytes (an indirect GEMM,
/// a conv without im2col): row i is `taps` runs of b.k / taps bytes, a
/// multiple of 4, run t at runs[i * taps + t] + offset.
void avx512VnniGathered(const uint8_t *const *runs, int64_t taps,
                        int64_t offset, int64_t m, const Panels &b, int32_t *c,
                        int64_t ldc);
/// The rows of a block of fewer than 32 are copied into `scratch` first
/// (amxScratchBytes, 64-byte aligned), rows a whole number of 64-byte chunks
/// of k apart (GemmAmx.cpp). b's panels hold whole chunks of 16 k groups.
void amx(const uint8_t *a, int64_t lda, int64_t m, const Panels &b, int32_t *c,
         int64_t ldc, void *scratch);

#ifdef QOPT_EMULATED_INTRINSICS
} // namespace emulated
#endif

/// Any family's entry point (scratch ignored by the families that take
/// none).
using Kernel = void (*)(const uint8_t *a, int64_t lda, int64_t m,
                        const Panels &b, int32_t *c, int64_t ldc,
                        void *scratch);
/// Tests only: gemmU8S8 runs `kernel` for the weights packed for family
/// `isa` (an Isa), or the family's own again for null. The unit tests put
/// the emulated builds of the families this machine lacks there, so that
/// Int8Conv runs them as it would run the real ones.
void replaceFamilyForTesting(Isa isa, Kernel kernel);
/// A family's gathered entry point (avx512VnniGathered's signature).
using GatheredKernel = void (*)(const uint8_t *const *runs, int64_t taps,
                                int64_t offset, int64_t m, const Panels &b,
                                int32_t *c, int64_t ldc);
/// Tests only: gemmU8S8Gathered runs `kernel` for family `isa`'s weights,
/// or the family's own again for null.
void replaceGatheredForTesting(Isa isa, GatheredKernel kernel);

/// k rounded up to the amx family's chunks of 64 (one A tile row).
static inline int64_t amxPaddedDepth(int64_t k) { return (k + 63) / 64 * 64; }
/// The amx family's scratch: one block of 32 rows of A, padded.
static inline int64_t amxScratchBytes(int64_t k) {
  return 32 * amxPaddedDepth(k);
}

} // namespace gemm
} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_GEMMKERNELS_H

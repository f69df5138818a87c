//===- Int8Gemm.h - u8 x s8 -> s32 products, per ISA ------------*- C++ -*-===//
//
// The core of every int8 conv and Gemm step of the CPU plan:
//
//   C[m][n] = sum_k A[m][k] * B[n][k]       A u8 (M x K, rows lda apart)
//                                           B s8 (N x K: one row per output
//                                             channel, as weights are stored)
//                                           C s32 (M x N, rows ldc apart)
//
// B is packed once, when the plan is built, in the layout of the kernel
// family that will read it. Every family computes exactly the same integers
// (no saturating step anywhere), so a plan gives the same bits on every
// machine; only the speed differs.
//
// Layouts (N padded to panels of 16 output channels, K to groups of 4):
//   scalar, avxvnni, avx512vnni, amx:  per panel, per k group, 16 channels x
//     4 bytes (64 bytes): what one vpdpbusd reads, and one row of an AMX B
//     tile;
//   avx2: each byte widened to 16 bits (vpmaddwd reads pairs of 16-bit
//     values, whose products cannot saturate), and each panel stored as two
//     halves of 8 channels, one after the other: per k group, 8 channels x
//     4 values (64 bytes). The kernel reads one half at a time, so it
//     streams adjacent cache lines (about 10% faster on weights that come
//     from memory: 1.09-1.12x on ResNet-18's last layers' GEMMs);
//   amx: each panel padded with zero groups to a multiple of 16 groups (64
//     values of k), so that every 16 groups are one whole B tile.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_KERNELS_INT8GEMM_H
#define QOPT_KERNELS_INT8GEMM_H

#include "qopt/Kernels/CpuFeatures.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace qopt {
namespace kernels {

/// Output channels per panel, and k values per group.
constexpr int64_t kPanelChannels = 16;
constexpr int64_t kGroupDepth = 4;

class PackedInt8Weights {
public:
  /// Packs B (n x k s8, rows ldb apart) for `isa`.
  PackedInt8Weights(Isa isa, const int8_t *b, int64_t n, int64_t k,
                    int64_t ldb);

  Isa getIsa() const { return isa; }
  int64_t getNumChannels() const { return n; }
  int64_t getDepth() const { return k; }
  int64_t getNumPanels() const { return panels; }
  int64_t getNumGroups() const { return groups; }
  /// sum_k B[n][k] per channel: what a zero point on A contributes
  /// (zp * rowSum), and the correction when s8 activations are read as u8.
  llvm::ArrayRef<int32_t> getChannelSums() const { return sums; }
  /// Panel p's bytes (int8, or int16 for avx2), 64-byte aligned.
  const void *getPanel(int64_t p) const;
  size_t getPanelBytes() const { return panelBytes; }
  /// B back from the packed panels (n x k s8, rows ldb apart): the inverse
  /// of the constructor, for writing a plan in a form any family can pack.
  void unpack(int8_t *b, int64_t ldb) const;

private:
  Isa isa;
  int64_t n, k, panels, groups;
  size_t panelBytes;
  std::unique_ptr<char, void (*)(void *)> storage;
  std::vector<int32_t> sums;
};

/// Scratch bytes gemmU8S8 needs for m rows of A against `b` (the avx2
/// family widens A to 16 bits first, the amx family copies a last block of
/// fewer than 32 rows; the others need none).
size_t getGemmScratchBytes(const PackedInt8Weights &b, int64_t m);

/// C = A * B^T for rows [0, m) of A, by the family `b` was packed for; with
/// a panel range, only B's channels [16 * panelBegin, 16 * panelEnd) (and
/// below n), written from c's first column on. `scratch`:
/// getGemmScratchBytes(b, m) bytes, 64-byte aligned.
void gemmU8S8(const uint8_t *a, int64_t lda, int64_t m,
              const PackedInt8Weights &b, int32_t *c, int64_t ldc,
              void *scratch, int64_t panelBegin = 0, int64_t panelEnd = -1);

/// Whether gemmU8S8Gathered can run on `b` with runs of `runBytes`: the
/// avx512vnni and avxvnni families, with whole k groups in a run, a whole
/// number of runs in k. Other families read A as rows in memory (im2col).
bool hasGatheredGemm(const PackedInt8Weights &b, int64_t runBytes);

/// gemmU8S8 on rows of A gathered from runs of bytes (an indirect GEMM: a
/// conv reads its input where it lies, with no im2col copy): row i of A is
/// k / taps bytes from runs[i * taps + t] + offset for each run t in
/// order. hasGatheredGemm(b, k / taps) must hold.
void gemmU8S8Gathered(const uint8_t *const *runs, int64_t taps, int64_t offset,
                      int64_t m, const PackedInt8Weights &b, int32_t *c,
                      int64_t ldc, int64_t panelBegin = 0,
                      int64_t panelEnd = -1);

} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_INT8GEMM_H

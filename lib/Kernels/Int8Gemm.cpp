//===- Int8Gemm.cpp - Packing B, and choosing the family's kernel ---------===//

#include "qopt/Kernels/Int8Gemm.h"
#include "GemmKernels.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdlib>
#include <cstring>

using namespace qopt;
using namespace qopt::kernels;

namespace {
constexpr size_t kAlignment = 64;

/// Kernels tests put in place of a family's (replaceFamilyForTesting).
std::atomic<gemm::Kernel> familiesForTesting[size_t(Isa::Amx) + 1];
std::atomic<gemm::GatheredKernel> gatheredForTesting[size_t(Isa::Amx) + 1];

char *allocateAligned(size_t bytes) {
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void *p = std::aligned_alloc(kAlignment, rounded ? rounded : kAlignment);
  if (!p)
    llvm::report_bad_alloc_error("packing int8 weights");
  return static_cast<char *>(p);
}
} // namespace

/// k groups stored per panel: the amx family reads a panel 16 groups (one
/// B tile) at a time, so its panels are padded to whole tiles.
static int64_t storedGroupsFor(Isa isa, int64_t k) {
  return isa == Isa::Amx ? gemm::amxPaddedDepth(k) / kGroupDepth
                         : (k + kGroupDepth - 1) / kGroupDepth;
}

/// Where B[c][i] of panel-local channel c goes in its panel, in elements:
/// 16 channels x 4 values of k per group; for avx2, each half of the panel
/// (8 channels x 4 values, 64 bytes a group) stored whole, one after the
/// other, so that a kernel reading a half reads adjacent cache lines.
static int64_t panelSlot(Isa isa, int64_t c, int64_t i, int64_t storedGroups) {
  int64_t group = i / kGroupDepth, lane = i % kGroupDepth;
  if (isa == Isa::Avx2) {
    constexpr int64_t kHalf = kPanelChannels / 2;
    return ((c / kHalf) * storedGroups + group) * kHalf * kGroupDepth +
           (c % kHalf) * kGroupDepth + lane;
  }
  return group * kPanelChannels * kGroupDepth + c * kGroupDepth + lane;
}

PackedInt8Weights::PackedInt8Weights(Isa isa, const int8_t *b, int64_t n,
                                     int64_t k, int64_t ldb)
    : isa(isa), n(n), k(k), panels((n + kPanelChannels - 1) / kPanelChannels),
      groups((k + kGroupDepth - 1) / kGroupDepth), panelBytes(0),
      storage(nullptr, std::free), sums(n, 0) {
  size_t elementBytes = isa == Isa::Avx2 ? 2 : 1;
  int64_t storedGroups = storedGroupsFor(isa, k);
  panelBytes =
      size_t(storedGroups) * kPanelChannels * kGroupDepth * elementBytes;
  storage.reset(allocateAligned(panelBytes * panels));
  std::memset(storage.get(), 0, panelBytes * panels);
  for (int64_t p = 0; p < panels; ++p) {
    char *panel = storage.get() + p * panelBytes;
    for (int64_t c = 0; c < kPanelChannels && p * kPanelChannels + c < n; ++c) {
      const int8_t *row = b + (p * kPanelChannels + c) * ldb;
      for (int64_t i = 0; i < k; ++i) {
        int64_t slot = panelSlot(isa, c, i, storedGroups);
        if (elementBytes == 2)
          reinterpret_cast<int16_t *>(panel)[slot] = row[i];
        else
          reinterpret_cast<int8_t *>(panel)[slot] = row[i];
        sums[p * kPanelChannels + c] += row[i];
      }
    }
  }
}

void PackedInt8Weights::unpack(int8_t *b, int64_t ldb) const {
  bool wide = isa == Isa::Avx2;
  int64_t storedGroups = storedGroupsFor(isa, k);
  for (int64_t channel = 0; channel < n; ++channel) {
    const char *panel = storage.get() + (channel / kPanelChannels) * panelBytes;
    int64_t c = channel % kPanelChannels;
    for (int64_t i = 0; i < k; ++i) {
      int64_t slot = panelSlot(isa, c, i, storedGroups);
      b[channel * ldb + i] =
          wide ? static_cast<int8_t>(
                     reinterpret_cast<const int16_t *>(panel)[slot])
               : reinterpret_cast<const int8_t *>(panel)[slot];
    }
  }
}

const void *PackedInt8Weights::getPanel(int64_t p) const {
  return storage.get() + p * panelBytes;
}

size_t kernels::getGemmScratchBytes(const PackedInt8Weights &b, int64_t m) {
  switch (b.getIsa()) {
  case Isa::Avx2:
    return size_t(m * gemm::avx2WidenedStride(b.getNumGroups())) *
           sizeof(int16_t);
  case Isa::Amx:
    return size_t(gemm::amxScratchBytes(b.getDepth()));
  default:
    return 0;
  }
}

/// Panels [panelBegin, panelEnd) of b (all from panelBegin for a negative
/// or too large end).
static gemm::Panels getPanels(const PackedInt8Weights &b, int64_t panelBegin,
                              int64_t panelEnd) {
  if (panelEnd < 0 || panelEnd > b.getNumPanels())
    panelEnd = b.getNumPanels();
  int64_t first = panelBegin * kPanelChannels;
  int64_t channels =
      std::min(b.getNumChannels(), panelEnd * kPanelChannels) - first;
  return gemm::Panels{b.getPanel(panelBegin),
                      int64_t(b.getPanelBytes()),
                      panelEnd - panelBegin,
                      b.getNumGroups(),
                      channels,
                      b.getDepth()};
}

void kernels::gemmU8S8(const uint8_t *a, int64_t lda, int64_t m,
                       const PackedInt8Weights &b, int32_t *c, int64_t ldc,
                       void *scratch, int64_t panelBegin, int64_t panelEnd) {
  gemm::Panels panels = getPanels(b, panelBegin, panelEnd);
  Isa family = b.getIsa();
  // Tiles multiply-add 6-8 times as fast as zmm vpdpbusd (the Xeon:
  // about 2,950 against 460 GMAC/s a core), so they win while at least a
  // quarter full (a margin for the tile setup and the short blocks'
  // copies): a batch-of-one Gemm (1 row of 16) or a depthwise 3x3 (9 of 64
  // k values) runs the avx512vnni kernel, on the same panels. To be
  // measured on an AMX machine.
  if (family == Isa::Amx && std::min<int64_t>(m, 16) * b.getDepth() * 4 <
                                16 * gemm::amxPaddedDepth(b.getDepth()))
    family = Isa::Avx512Vnni;
  if (gemm::Kernel replaced = familiesForTesting[size_t(family)])
    return replaced(a, lda, m, panels, c, ldc, scratch);
  switch (family) {
  case Isa::Scalar:
    return gemm::scalar(a, lda, m, panels, c, ldc);
  case Isa::Avx2:
    return gemm::avx2(a, lda, m, panels, c, ldc, scratch);
  case Isa::AvxVnni:
    return gemm::avxVnni(a, lda, m, panels, c, ldc);
  case Isa::Avx512Vnni:
    return gemm::avx512Vnni(a, lda, m, panels, c, ldc);
  case Isa::Amx:
    return gemm::amx(a, lda, m, panels, c, ldc, scratch);
  }
}

bool kernels::hasGatheredGemm(const PackedInt8Weights &b, int64_t runBytes) {
  Isa isa = b.getIsa();
  return (isa == Isa::Avx512Vnni || isa == Isa::AvxVnni) && runBytes > 0 &&
         runBytes % kGroupDepth == 0 && b.getDepth() % runBytes == 0;
}

void kernels::gemmU8S8Gathered(const uint8_t *const *runs, int64_t taps,
                               int64_t offset, int64_t m,
                               const PackedInt8Weights &b, int32_t *c,
                               int64_t ldc, int64_t panelBegin,
                               int64_t panelEnd) {
  assert(taps > 0 && hasGatheredGemm(b, b.getDepth() / taps) &&
         "runs of whole k groups, for a family with gathered rows");
  gemm::Panels panels = getPanels(b, panelBegin, panelEnd);
  if (gemm::GatheredKernel replaced = gatheredForTesting[size_t(b.getIsa())])
    return replaced(runs, taps, offset, m, panels, c, ldc);
  if (b.getIsa() == Isa::AvxVnni)
    return gemm::avxVnniGathered(runs, taps, offset, m, panels, c, ldc);
  gemm::avx512VnniGathered(runs, taps, offset, m, panels, c, ldc);
}

void gemm::replaceFamilyForTesting(Isa isa, Kernel kernel) {
  familiesForTesting[size_t(isa)] = kernel;
}

void gemm::replaceGatheredForTesting(Isa isa, GatheredKernel kernel) {
  gatheredForTesting[size_t(isa)] = kernel;
}

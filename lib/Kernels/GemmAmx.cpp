//===- GemmAmx.cpp - u8 x s8 GEMM with AMX tiles (tdpbusd) ----------------===//
//
// Built with -mamx-tile -mamx-int8; called only where CPUID says the machine
// has AMX-INT8 and Linux granted this process the tile data state.
//
// Every tile is configured as 16 rows x 64 bytes (palette 1):
//   tmm0-3  C: a block of 2 x 2 tiles, 32 rows of A x 32 channels (s32)
//   tmm4-5  A: 16 rows x 64 k values, one for each 16 rows of the block
//   tmm6-7  B: 16 k groups x (16 channels x 4 bytes), one for each panel
// A packed panel is already in B's tile layout (k group g is the 64 bytes at
// g * 64), and the amx family pads each panel with zero groups up to whole
// chunks of 16 (Int8Gemm.cpp), so every B tile is read from its panel as is.
//
// Per chunk of 64 k values: 2 A loads, 2 B loads, 4 tdpbusd (each
// 16 x 16 x 64 products into its C tile).
//
// A is read in place, rows lda apart, except where a tile would read past
// A's end: the rows of a block of fewer than 32 are copied into the
// caller's scratch (32 rows of k rounded up to 64), and when k is not a
// multiple of 64, the last chunk of a full block whose last row is too
// close to A's end is copied into a zeroed 32 x 64 buffer. (Elsewhere that
// chunk's bytes past k are those of the rows after, which B's zero rows
// cancel.) Each C tile with fewer than 16 rows or channels to
// keep goes through a buffer and is copied out.
//
//===----------------------------------------------------------------------===//

#include "AmxTiles.h"
#include "GemmKernels.h"
#include "Intrinsics.h"

#include <cstring>

using namespace qopt::kernels;
using namespace qopt::kernels::gemm;

namespace {

using amx::kTileBytes;
using amx::kTileRows;
constexpr int kBlockRows = 2 * kTileRows;
constexpr int64_t kChunkBytes = kTileRows * kTileBytes; // one B tile

/// Stores the block's C tiles: each straight into C when all its 16 rows
/// and 16 channels are kept, else into a buffer, copied out once every tile
/// is stored (no tile holds data across a call). The tile numbers are
/// immediates: each store is written out.
template <int RowTiles, int PanelTiles>
__attribute__((always_inline)) inline void storeBlock(int32_t *c, int64_t ldc,
                                                      int rows, int channels) {
  alignas(64) int32_t buffers[4][kTileRows][16];
  int32_t *to[4];
  int64_t stride[4];
  for (int t = 0; t < 4; ++t) {
    int r = t / 2, p = t % 2;
    bool whole = rows - r * kTileRows >= kTileRows && channels - p * 16 >= 16;
    to[t] = whole ? c + r * kTileRows * ldc + p * 16 : &buffers[t][0][0];
    stride[t] = (whole ? ldc : 16) * int64_t(sizeof(int32_t));
  }
  _tile_stored(0, to[0], stride[0]);
  if constexpr (PanelTiles > 1)
    _tile_stored(1, to[1], stride[1]);
  if constexpr (RowTiles > 1) {
    _tile_stored(2, to[2], stride[2]);
    if constexpr (PanelTiles > 1)
      _tile_stored(3, to[3], stride[3]);
  }
  for (int t = 0; t < 4; ++t) {
    int r = t / 2, p = t % 2;
    int keepRows = rows - r * kTileRows, keep = channels - p * 16;
    if (r >= RowTiles || p >= PanelTiles || to[t] != &buffers[t][0][0] ||
        keepRows <= 0 || keep <= 0)
      continue;
    keepRows = keepRows < kTileRows ? keepRows : kTileRows;
    keep = keep < 16 ? keep : 16;
    int32_t *dst = c + r * kTileRows * ldc + p * 16;
    for (int row = 0; row < keepRows; ++row)
      std::memcpy(dst + row * ldc, buffers[t][row], keep * sizeof(int32_t));
  }
}

/// One block of RowTiles x PanelTiles C tiles over all of k: `chunks`
/// chunks of A read in place (rows lda apart), then, if `tail` is set, one
/// more from it (rows 64 apart). `rows` and `channels` are what C keeps.
template <int RowTiles, int PanelTiles>
void block(const uint8_t *a, int64_t lda, int64_t chunks, const uint8_t *tail,
           const int8_t *panel, int64_t panelBytes, int32_t *c, int64_t ldc,
           int rows, int channels) {
  _tile_zero(0);
  if constexpr (PanelTiles > 1)
    _tile_zero(1);
  if constexpr (RowTiles > 1) {
    _tile_zero(2);
    if constexpr (PanelTiles > 1)
      _tile_zero(3);
  }
  auto chunk = [&](const uint8_t *rowsOfA, int64_t stride, int64_t index) {
    _tile_loadd(4, rowsOfA, stride);
    if constexpr (RowTiles > 1)
      _tile_loadd(5, rowsOfA + kTileRows * stride, stride);
    _tile_loadd(6, panel + index * kChunkBytes, kTileBytes);
    if constexpr (PanelTiles > 1)
      _tile_loadd(7, panel + panelBytes + index * kChunkBytes, kTileBytes);
    _tile_dpbusd(0, 4, 6);
    if constexpr (PanelTiles > 1)
      _tile_dpbusd(1, 4, 7);
    if constexpr (RowTiles > 1) {
      _tile_dpbusd(2, 5, 6);
      if constexpr (PanelTiles > 1)
        _tile_dpbusd(3, 5, 7);
    }
  };
  for (int64_t i = 0; i < chunks; ++i)
    chunk(a + i * kTileBytes, lda, i);
  if (tail)
    chunk(tail, kTileBytes, chunks);
  storeBlock<RowTiles, PanelTiles>(c, ldc, rows, channels);
}

} // namespace

void gemm::amx(const uint8_t *a, int64_t lda, int64_t m, const Panels &b,
               int32_t *c, int64_t ldc, void *scratch) {
  if (m <= 0 || b.numPanels <= 0)
    return;
  amx::configureTiles();
  const int8_t *panels = static_cast<const int8_t *>(b.data);
  int64_t wholeChunks = b.k / kTileBytes;
  int64_t tailBytes = b.k % kTileBytes;
  int64_t paddedK = amxPaddedDepth(b.k);
  alignas(64) uint8_t tail[kBlockRows * kTileBytes];
  for (int64_t row = 0; row < m; row += kBlockRows) {
    int rows = int(m - row < kBlockRows ? m - row : kBlockRows);
    const uint8_t *blockA = a + row * lda;
    int64_t blockLda = lda, chunks = wholeChunks;
    const uint8_t *blockTail = nullptr;
    if (rows < kBlockRows) {
      // Only the rows kept: the products of the others are not stored,
      // and B is zero past k, so the bytes past each row count for nothing.
      uint8_t *copy = static_cast<uint8_t *>(scratch);
      for (int r = 0; r < rows; ++r)
        std::memcpy(copy + r * paddedK, blockA + r * lda, size_t(b.k));
      blockA = copy;
      blockLda = paddedK;
      chunks = paddedK / kTileBytes;
    } else if (tailBytes &&
               (row + kBlockRows - 1) * lda + paddedK <= (m - 1) * lda + b.k) {
      // The last chunk read in place: its bytes past k are the next rows'
      // (inside A), and B's zero rows past k cancel them.
      chunks = paddedK / kTileBytes;
    } else if (tailBytes) {
      std::memset(tail, 0, sizeof(tail));
      for (int r = 0; r < kBlockRows; ++r)
        std::memcpy(tail + r * kTileBytes,
                    blockA + r * lda + wholeChunks * kTileBytes,
                    size_t(tailBytes));
      blockTail = tail;
    }
    for (int64_t p = 0; p < b.numPanels; p += 2) {
      const int8_t *panel = panels + p * b.panelBytes;
      int32_t *cBlock = c + row * ldc + p * 16;
      int64_t left = b.n - p * 16;
      int channels = int(left < 32 ? left : 32);
      bool twoPanels = b.numPanels - p >= 2;
      if (rows > kTileRows) {
        if (twoPanels)
          block<2, 2>(blockA, blockLda, chunks, blockTail, panel, b.panelBytes,
                      cBlock, ldc, rows, channels);
        else
          block<2, 1>(blockA, blockLda, chunks, blockTail, panel, b.panelBytes,
                      cBlock, ldc, rows, channels);
      } else if (twoPanels) {
        block<1, 2>(blockA, blockLda, chunks, blockTail, panel, b.panelBytes,
                    cBlock, ldc, rows, channels);
      } else {
        block<1, 1>(blockA, blockLda, chunks, blockTail, panel, b.panelBytes,
                    cBlock, ldc, rows, channels);
      }
    }
  }
  _tile_release();
}

//===- AmxTiles.h - The one AMX tile configuration --------------*- C++ -*-===//
//
// For the files built with -mamx-tile -mamx-int8 only (GemmKernels.h says
// why): static, so each of them keeps its own copy.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_AMXTILES_H
#define QOPT_LIB_KERNELS_AMXTILES_H

#include "Intrinsics.h"

#include <cstdint>
#include <cstring>

namespace qopt {
namespace kernels {
namespace amx {

constexpr int kTileRows = 16, kTileBytes = 64;

/// LDTILECFG's 64-byte operand, palette 1 (Intel SDM vol. 1, 3.2.x).
struct TileConfig {
  uint8_t palette;
  uint8_t startRow;
  uint8_t reserved[14];
  uint16_t bytesPerRow[16];
  uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

/// Configures this thread's tmm0-7 as 16 rows x 64 bytes each. Tile state
/// is per thread: every call that uses tiles configures them first, and
/// releases them (_tile_release) when done.
static inline void configureTiles() {
  alignas(64) TileConfig config;
  std::memset(&config, 0, sizeof(config));
  config.palette = 1;
  for (int t = 0; t < 8; ++t) {
    config.bytesPerRow[t] = kTileBytes;
    config.rows[t] = kTileRows;
  }
  _tile_loadconfig(&config);
}

} // namespace amx
} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_AMXTILES_H

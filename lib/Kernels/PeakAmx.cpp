//===- PeakAmx.cpp - tdpbusd peak -----------------------------------------===//
//
// Built with -mamx-tile -mamx-int8 (lib/CMakeLists.txt); run only where
// CPUID finds AMX-INT8 and Linux granted the tile state. Four independent C
// tiles (tmm0-3) from two A and two B tiles, as the GEMM's 2 x 2 block.
//
//===----------------------------------------------------------------------===//

#include "AmxTiles.h"
#include "Intrinsics.h"
#include "PeakLoops.h"

using namespace qopt::kernels;

int64_t qopt::kernels::peak::peakAmx(int64_t iterations, int32_t *sink) {
  alignas(64) uint8_t operands[amx::kTileRows][amx::kTileBytes];
  for (int r = 0; r < amx::kTileRows; ++r)
    for (int i = 0; i < amx::kTileBytes; ++i)
      operands[r][i] = uint8_t(r + i);
  amx::configureTiles();
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operands, amx::kTileBytes);
  _tile_loadd(5, operands, amx::kTileBytes);
  _tile_loadd(6, operands, amx::kTileBytes);
  _tile_loadd(7, operands, amx::kTileBytes);
  for (int64_t it = 0; it < iterations; ++it) {
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  alignas(64) int32_t result[amx::kTileRows][amx::kTileBytes / 4];
  _tile_stored(0, result, amx::kTileBytes);
  _tile_release();
  *sink = result[0][0];
  // Each tdpbusd: 16 rows x 16 columns x 64 products.
  return iterations * 4 * amx::kTileRows * (amx::kTileBytes / 4) *
         amx::kTileBytes;
}

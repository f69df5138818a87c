//===- EmulatedAmx.h - AMX tiles and tdpbusd in portable C++ ----*- C++ -*-===//
//
// The AMX intrinsics the int8 GEMM uses, as the Intel SDM (volume 2, TILE*
// and TDPBUSD; volume 1, chapter 3.2.x "Intel AMX") defines them, on a
// thread's own eight tiles of 16 rows x 64 bytes. Every case where the
// hardware raises #UD or #GP (a tile used before LDTILECFG or after
// TILERELEASE, a palette other than 0 or 1, reserved bytes set, rows over 16
// or bytes per row over 64, operand shapes that do not agree) aborts with a
// message, so a kernel that would fault on an AMX machine fails here.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_EMULATED_EMULATEDAMX_H
#define QOPT_LIB_KERNELS_EMULATED_EMULATEDAMX_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace qopt {
namespace emulated_amx {

constexpr int kTiles = 8, kMaxRows = 16, kMaxRowBytes = 64;

struct TileState {
  bool configured = false;
  uint8_t rows[kTiles] = {};
  uint16_t rowBytes[kTiles] = {};
  uint8_t data[kTiles][kMaxRows][kMaxRowBytes] = {};
};

inline TileState &state() {
  static thread_local TileState tiles;
  return tiles;
}

[[noreturn]] inline void fault(const char *what) {
  std::fprintf(stderr, "emulated AMX: %s\n", what);
  std::abort();
}

inline TileState &configuredState(int tile) {
  TileState &s = state();
  if (!s.configured)
    fault("tile instruction before LDTILECFG (#UD)");
  if (tile < 0 || tile >= kTiles)
    fault("tile register out of range");
  return s;
}

/// LDTILECFG: 64 bytes: palette, start_row, 14 reserved bytes, 16 uint16
/// bytes-per-row, 16 uint8 rows (the last 8 of each reserved in palette 1).
/// start_row (where an interrupted tile load resumes) is not modelled: the
/// kernels write 0 there.
inline void loadConfig(const void *config) {
  const uint8_t *bytes = static_cast<const uint8_t *>(config);
  TileState &s = state();
  uint8_t palette = bytes[0];
  if (palette == 0) {
    s = TileState();
    return;
  }
  if (palette != 1)
    fault("LDTILECFG: palette other than 0 or 1 (#GP)");
  for (int i = 2; i < 16; ++i)
    if (bytes[i])
      fault("LDTILECFG: reserved byte set (#GP)");
  for (int t = 0; t < 16; ++t) {
    uint16_t rowBytes;
    std::memcpy(&rowBytes, bytes + 16 + 2 * t, 2);
    uint8_t rows = bytes[48 + t];
    if (t >= kTiles) {
      if (rowBytes || rows)
        fault("LDTILECFG: tile 8-15 configured in palette 1 (#GP)");
      continue;
    }
    if (rows > kMaxRows || rowBytes > kMaxRowBytes)
      fault("LDTILECFG: more than 16 rows or 64 bytes a row (#GP)");
    if ((rows == 0) != (rowBytes == 0))
      fault("LDTILECFG: a tile with rows but no bytes, or bytes but no rows "
            "(#GP)");
    s.rows[t] = rows;
    s.rowBytes[t] = rowBytes;
  }
  std::memset(s.data, 0, sizeof(s.data));
  s.configured = true;
}

inline void release() { state() = TileState(); }

inline void zero(int tile) {
  TileState &s = configuredState(tile);
  if (!s.rows[tile])
    fault("TILEZERO: tile not configured (#UD)");
  std::memset(s.data[tile], 0, sizeof(s.data[tile]));
}

/// TILELOADD: rows of the tile's bytes, `stride` apart; the rest is zeroed.
inline void load(int tile, const void *base, long stride) {
  TileState &s = configuredState(tile);
  if (!s.rows[tile])
    fault("TILELOADD: tile not configured (#UD)");
  std::memset(s.data[tile], 0, sizeof(s.data[tile]));
  for (int r = 0; r < s.rows[tile]; ++r)
    std::memcpy(s.data[tile][r], static_cast<const char *>(base) + r * stride,
                s.rowBytes[tile]);
}

inline void store(int tile, void *base, long stride) {
  TileState &s = configuredState(tile);
  if (!s.rows[tile])
    fault("TILESTORED: tile not configured (#UD)");
  for (int r = 0; r < s.rows[tile]; ++r)
    std::memcpy(static_cast<char *>(base) + r * stride, s.data[tile][r],
                s.rowBytes[tile]);
}

/// TDPBUSD: C[m][n] += sum over k groups g of the 4 products
/// u8 A[m][4g + i] * s8 B[g][4n + i], wrapping in 32 bits.
inline void dotProductUnsignedSigned(int c, int a, int b) {
  TileState &s = configuredState(c);
  configuredState(a);
  configuredState(b);
  if (c == a || c == b || a == b)
    fault("TDPBUSD: a tile named twice (#UD)");
  if (!s.rows[c] || !s.rows[a] || !s.rows[b])
    fault("TDPBUSD: tile not configured (#UD)");
  if (s.rows[c] != s.rows[a] || s.rowBytes[a] != 4 * s.rows[b] ||
      s.rowBytes[c] != s.rowBytes[b] || s.rowBytes[c] % 4 || s.rowBytes[a] % 4)
    fault("TDPBUSD: shapes do not agree (#UD)");
  int groups = s.rowBytes[a] / 4, columns = s.rowBytes[c] / 4;
  for (int m = 0; m < s.rows[c]; ++m)
    for (int n = 0; n < columns; ++n) {
      uint32_t acc;
      std::memcpy(&acc, &s.data[c][m][4 * n], 4);
      for (int g = 0; g < groups; ++g)
        for (int i = 0; i < 4; ++i)
          acc += uint32_t(int32_t(s.data[a][m][4 * g + i]) *
                          int32_t(int8_t(s.data[b][g][4 * n + i])));
      std::memcpy(&s.data[c][m][4 * n], &acc, 4);
    }
}

} // namespace emulated_amx
} // namespace qopt

#define _tile_loadconfig(config) ::qopt::emulated_amx::loadConfig(config)
#define _tile_release() ::qopt::emulated_amx::release()
#define _tile_zero(tile) ::qopt::emulated_amx::zero(tile)
#define _tile_loadd(tile, base, stride)                                        \
  ::qopt::emulated_amx::load(tile, base, long(stride))
#define _tile_stream_loadd(tile, base, stride)                                 \
  ::qopt::emulated_amx::load(tile, base, long(stride))
#define _tile_stored(tile, base, stride)                                       \
  ::qopt::emulated_amx::store(tile, base, long(stride))
#define _tile_dpbusd(c, a, b)                                                  \
  ::qopt::emulated_amx::dotProductUnsignedSigned(c, a, b)

#endif // QOPT_LIB_KERNELS_EMULATED_EMULATEDAMX_H

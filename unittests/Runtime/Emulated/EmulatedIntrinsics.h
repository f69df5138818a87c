//===- EmulatedIntrinsics.h - x86 intrinsics in portable C++ ----*- C++ -*-===//
//
// What lib/Runtime/Int8/Intrinsics.h includes in the unit tests' second
// build of the kernel families: SIMDe's AVX2 and AVX-512 (VNNI included)
// under the intrinsics' own names, the VEX form of vpdpbusd (AVX-VNNI) as
// the EVEX one (the same arithmetic), and a software AMX (EmulatedAmx.h).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_UNITTESTS_RUNTIME_EMULATED_EMULATEDINTRINSICS_H
#define QOPT_UNITTESTS_RUNTIME_EMULATED_EMULATEDINTRINSICS_H

#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#include <cstdint>
#include <cstring>

#define _mm256_dpbusd_avx_epi32(src, a, b) simde_mm256_dpbusd_epi32(src, a, b)

// What this SIMDe (0.7.4, Debian 12) leaves out.
typedef simde__mmask16 __mmask16;

/// vmovdqu32 with a mask: lane i is stored iff bit i of k is set.
inline void _mm512_mask_storeu_epi32(void *dst, __mmask16 k, __m512i v) {
  int32_t lanes[16];
  simde_mm512_storeu_si512(lanes, v);
  for (int i = 0; i < 16; ++i)
    if ((k >> i) & 1)
      std::memcpy(static_cast<char *>(dst) + 4 * i, &lanes[i], 4);
}

#include "EmulatedAmx.h"

#endif // QOPT_UNITTESTS_RUNTIME_EMULATED_EMULATEDINTRINSICS_H

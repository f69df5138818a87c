//===- ByteTable.h - 256-entry byte lookups, per ISA ------------*- C++ -*-===//
//
// The plan's one-operand int8 table steps (requantize, activations, their
// compositions): out[i] = table[in[i]]. A lookup is exact on every path;
// the AVX2 one looks up 32 bytes at a time with vpshufb over the table's
// sixteen 16-byte rows, the AVX-512 families' 64 at a time with vpermi2b
// where the CPU has VBMI.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_KERNELS_BYTETABLE_H
#define QOPT_KERNELS_BYTETABLE_H

#include "qopt/Kernels/CpuFeatures.h"

#include <cstdint>

namespace qopt {
namespace kernels {

/// out[i] = table[in[i]] for i < count (`table` has 256 entries; `in` and
/// `out` may be the same array).
void lookupBytes(Isa isa, const uint8_t *table, const uint8_t *in,
                 int64_t count, uint8_t *out);

} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_BYTETABLE_H

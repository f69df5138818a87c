//===- TableKernels.h - The byte-table families' entry points --*- C++ -*-===//
//
// Private to lib/Runtime/Int8 (GemmKernels.h says why the ISA files include
// nothing else).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_RUNTIME_INT8_TABLEKERNELS_H
#define QOPT_LIB_RUNTIME_INT8_TABLEKERNELS_H

#include <cstdint>

namespace qopt {
namespace rt {
namespace table {

/// The elements [0, count - count % 32) of in; the caller does the rest.
void avx2(const uint8_t *table, const uint8_t *in, int64_t count, uint8_t *out);

} // namespace table
} // namespace rt
} // namespace qopt

#endif // QOPT_LIB_RUNTIME_INT8_TABLEKERNELS_H

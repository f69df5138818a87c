//===- ByteTable.cpp - Byte lookups: the scalar loop, dispatch ------------===//

#include "qopt/Runtime/ByteTable.h"
#include "TableKernels.h"

using namespace qopt;
using namespace qopt::rt;

void rt::lookupBytes(Isa isa, const uint8_t *table, const uint8_t *in,
                     int64_t count, uint8_t *out) {
  int64_t done = 0;
  if (isa != Isa::Scalar) {
    table::avx2(table, in, count, out);
    done = count - count % 32;
  }
  for (int64_t i = done; i < count; ++i)
    out[i] = table[in[i]];
}

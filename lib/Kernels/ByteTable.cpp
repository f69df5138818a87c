//===- ByteTable.cpp - Byte lookups: the scalar loop, dispatch ------------===//

#include "qopt/Kernels/ByteTable.h"
#include "TableKernels.h"

#include <atomic>

using namespace qopt;
using namespace qopt::kernels;

namespace {
/// Kernels tests put in place of a family's (table::replaceForTesting).
std::atomic<table::Kernel> tablesForTesting[size_t(Isa::Amx) + 1];
} // namespace

void table::replaceForTesting(Isa isa, Kernel kernel) {
  tablesForTesting[size_t(isa)] = kernel;
}

void kernels::lookupBytes(Isa isa, const uint8_t *table, const uint8_t *in,
                          int64_t count, uint8_t *out) {
  if (table::Kernel replaced = tablesForTesting[size_t(isa)])
    return replaced(table, in, count, out);
  // The AVX-512 families, where the CPU has VBMI too (Ice Lake and later,
  // Zen 4; not Cascade Lake).
  static const bool vbmi = getHostCpuFeatures().avx512Vbmi;
  if ((isa == Isa::Avx512Vnni || isa == Isa::Amx) && vbmi)
    return table::avx512Vbmi(table, in, count, out);
  int64_t done = 0;
  if (isa != Isa::Scalar) {
    table::avx2(table, in, count, out);
    done = count - count % 32;
  }
  for (int64_t i = done; i < count; ++i)
    out[i] = table[in[i]];
}

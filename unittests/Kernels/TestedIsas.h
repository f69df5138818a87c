//===- TestedIsas.h - The kernel families the unit tests run ----*- C++ -*-===//
//
// This machine's families, then those it lacks that have an emulated build
// (QoptEmulatedKernels, lib/Kernels/Emulated with SIMDe): gemmU8S8 runs those
// in place of the real ones (gemm::replaceFamilyForTesting, and
// replaceGatheredForTesting for the VNNI families' gathered rows), and Int8Conv
// the emulated 16-lane epilogue for the AVX-512 ones, so Int8Conv's tiles,
// channel blocks, scratch and the amx family's fallback to avx512vnni for
// small gemms are exercised on every machine.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_UNITTESTS_RUNTIME_TESTEDISAS_H
#define QOPT_UNITTESTS_RUNTIME_TESTEDISAS_H

#include "qopt/Kernels/CpuFeatures.h"

#ifdef QOPT_HAVE_EMULATED_KERNELS
#define QOPT_EMULATED_INTRINSICS
#include "EpilogueKernels.h"
#include "GemmKernels.h"
#include "TableKernels.h"
#endif

#include <vector>

namespace qopt {
namespace kernels {

inline std::vector<Isa> getTestedIsas() {
  std::vector<Isa> isas = getSupportedIsas();
#ifdef QOPT_HAVE_EMULATED_KERNELS
  struct Emulated {
    Isa isa;
    gemm::Kernel kernel;
  };
  static const Emulated kEmulated[] = {
      {Isa::AvxVnni,
       [](const uint8_t *a, int64_t lda, int64_t m, const gemm::Panels &b,
          int32_t *c, int64_t ldc,
          void *) { gemm::emulated::avxVnni(a, lda, m, b, c, ldc); }},
      {Isa::Avx512Vnni,
       [](const uint8_t *a, int64_t lda, int64_t m, const gemm::Panels &b,
          int32_t *c, int64_t ldc,
          void *) { gemm::emulated::avx512Vnni(a, lda, m, b, c, ldc); }},
      {Isa::Amx, gemm::emulated::amx}};
  for (const Emulated &e : kEmulated) {
    if (getHostCpuFeatures().supports(e.isa))
      continue;
    gemm::replaceFamilyForTesting(e.isa, e.kernel);
    // Int8Conv's gathered rows (the VNNI families' indirect GEMM).
    if (e.isa == Isa::Avx512Vnni)
      gemm::replaceGatheredForTesting(e.isa,
                                      gemm::emulated::avx512VnniGathered);
    if (e.isa == Isa::AvxVnni)
      gemm::replaceGatheredForTesting(e.isa, gemm::emulated::avxVnniGathered);
    // The AVX-512 families' 16-lane epilogue too.
    if (e.isa == Isa::Avx512Vnni || e.isa == Isa::Amx)
      epilogue::replaceForTesting(e.isa, epilogue::emulated::avx512);
    isas.push_back(e.isa);
  }
  // The AVX-512 families' byte lookups where the CPU lacks VBMI.
  if (!getHostCpuFeatures().avx512Vbmi)
    for (Isa isa : {Isa::Avx512Vnni, Isa::Amx})
      table::replaceForTesting(isa, table::emulated::avx512Vbmi);
#endif
  return isas;
}

} // namespace kernels
} // namespace qopt

#endif // QOPT_UNITTESTS_RUNTIME_TESTEDISAS_H

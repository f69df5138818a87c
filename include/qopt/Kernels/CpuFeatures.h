//===- CpuFeatures.h - Which int8 instruction sets run here -*- C++ -*-===//
//
// The int8 kernels come in one version per instruction set. Which ones the
// machine runs is asked at run time (CPUID for the instructions, XGETBV for
// the registers the OS saves, and for AMX the OS's permission to use tile
// data), never assumed from the machine the code was built on.
//
//   QOPT_ISA=scalar|avx2|avxvnni|avx512vnni|amx   forces one (an error if
//                                                 the machine lacks it)
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_KERNELS_CPUFEATURES_H
#define QOPT_KERNELS_CPUFEATURES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace qopt {
namespace kernels {

/// The int8 kernel families, slowest first.
enum class Isa {
  Scalar,     ///< portable C++
  Avx2,       ///< 256-bit, 16-bit products (vpmaddwd)
  AvxVnni,    ///< 256-bit vpdpbusd (VEX)
  Avx512Vnni, ///< 512-bit vpdpbusd
  Amx,        ///< AMX-INT8 tiles (tdpbusd)
};

llvm::StringRef getIsaName(Isa isa);
llvm::Expected<Isa> parseIsa(llvm::StringRef name);

struct CpuFeatures {
  bool avx2 = false;
  bool avx512 = false; ///< F, BW, DQ and VL, with the OS saving zmm state
  bool avx512Vnni = false;
  bool avxVnni = false;
  bool avx512Vbmi = false; ///< with avx512: byte permutes (table lookups)
  bool amxInt8 = false;    ///< the CPU has AMX-TILE and AMX-INT8
  bool amxGranted = false; ///< and the OS let this process use tile data
  std::string model;       ///< the brand string, for reports

  bool supports(Isa isa) const;
};

/// This machine's features, detected once (the first call also asks Linux
/// for AMX tile data, as arch_prctl(ARCH_REQ_XCOMP_PERM) requires).
const CpuFeatures &getHostCpuFeatures();

/// Every family this machine runs, slowest first.
std::vector<Isa> getSupportedIsas();

/// The family to use: QOPT_ISA if set (an error if unknown or not supported
/// here), else the fastest this machine runs.
llvm::Expected<Isa> selectIsa();

} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_CPUFEATURES_H

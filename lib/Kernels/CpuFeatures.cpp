//===- CpuFeatures.cpp - CPUID, XGETBV and the AMX permission -------------===//
//
// Bits from the Intel SDM, volume 2A (CPUID) and volume 1, chapter 13 (XCR0):
//   leaf 1 ECX:            27 OSXSAVE
//   leaf 7.0 EBX:          5 AVX2, 16 AVX512F, 17 AVX512DQ, 30 AVX512BW,
//                          31 AVX512VL
//   leaf 7.0 ECX:          11 AVX512_VNNI
//   leaf 7.0 EDX:          24 AMX-TILE, 25 AMX-INT8
//   leaf 7.1 EAX:          4 AVX-VNNI
//   XCR0:                  1-2 SSE/AVX state, 5-7 opmask/zmm state,
//                          17-18 tile config/data
// Linux (5.16+) hands out AMX tile state only after
// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA).
//
//===----------------------------------------------------------------------===//

#include "qopt/Kernels/CpuFeatures.h"

#include <cpuid.h>
#include <cstdlib>
#include <cstring>
#include <sys/syscall.h>
#include <unistd.h>

using namespace qopt;
using namespace qopt::kernels;

namespace {

struct CpuidRegs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx))
    return CpuidRegs();
  return r;
}

bool bit(unsigned reg, unsigned n) { return (reg >> n) & 1u; }

uint64_t readXcr0() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t(edx) << 32) | eax;
}

/// Linux's arch_prctl codes and the tile data feature number.
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

bool requestAmxPermission() {
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0)
    return false;
  unsigned long granted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &granted) != 0)
    return false;
  return (granted >> kXfeatureXtiledata) & 1u;
}

std::string brandString() {
  unsigned maxExt = __get_cpuid_max(0x80000000u, nullptr);
  if (maxExt < 0x80000004u)
    return "unknown CPU";
  char brand[49] = {};
  for (unsigned i = 0; i < 3; ++i) {
    CpuidRegs r = cpuid(0x80000002u + i, 0);
    std::memcpy(brand + 16 * i, &r, 16);
  }
  llvm::StringRef s(brand);
  return s.trim().str();
}

CpuFeatures detect() {
  CpuFeatures f;
  f.model = brandString();
  unsigned maxLeaf = __get_cpuid_max(0, nullptr);
  if (maxLeaf < 7)
    return f;
  CpuidRegs l1 = cpuid(1, 0);
  if (!bit(l1.ecx, 27)) // no OSXSAVE: the OS saves no AVX state
    return f;
  uint64_t xcr0 = readXcr0();
  bool ymmSaved = (xcr0 & 0x6) == 0x6;
  bool zmmSaved = ymmSaved && (xcr0 & 0xe0) == 0xe0;
  bool tilesSaved = (xcr0 & 0x60000) == 0x60000;
  CpuidRegs l7 = cpuid(7, 0);
  CpuidRegs l71 = l7.eax >= 1 ? cpuid(7, 1) : CpuidRegs();
  // The AVX2 kernels use FMA3 too (every AVX2 CPU has it).
  f.avx2 = ymmSaved && bit(l7.ebx, 5) && bit(l1.ecx, 12);
  f.avx512 = zmmSaved && bit(l7.ebx, 16) && bit(l7.ebx, 17) &&
             bit(l7.ebx, 30) && bit(l7.ebx, 31);
  f.avx512Vnni = f.avx512 && bit(l7.ecx, 11);
  f.avxVnni = f.avx2 && bit(l71.eax, 4);
  f.avx512Vbmi = f.avx512 && bit(l7.ecx, 1);
  f.amxInt8 = tilesSaved && bit(l7.edx, 24) && bit(l7.edx, 25);
  f.amxGranted = f.amxInt8 && requestAmxPermission();
  return f;
}

} // namespace

llvm::StringRef kernels::getIsaName(Isa isa) {
  switch (isa) {
  case Isa::Scalar:
    return "scalar";
  case Isa::Avx2:
    return "avx2";
  case Isa::AvxVnni:
    return "avxvnni";
  case Isa::Avx512Vnni:
    return "avx512vnni";
  case Isa::Amx:
    return "amx";
  }
  return "unknown";
}

llvm::Expected<Isa> kernels::parseIsa(llvm::StringRef name) {
  for (Isa isa :
       {Isa::Scalar, Isa::Avx2, Isa::AvxVnni, Isa::Avx512Vnni, Isa::Amx})
    if (name == getIsaName(isa))
      return isa;
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "unknown instruction set '" + name.str() +
          "' (expected scalar, avx2, avxvnni, avx512vnni or amx)");
}

bool CpuFeatures::supports(Isa isa) const {
  switch (isa) {
  case Isa::Scalar:
    return true;
  case Isa::Avx2:
    return avx2;
  case Isa::AvxVnni:
    return avxVnni;
  // The AVX-512 families use the AVX2 family's quantize (and, without
  // VBMI, table) kernels too: with their FMA, as the sigmoid's AVX2
  // epilogue needs (every such CPU has both).
  case Isa::Avx512Vnni:
    return avx512Vnni && avx2;
  case Isa::Amx:
    // Gemms too small for tiles run the avx512vnni kernel (Int8Gemm.cpp).
    return amxGranted && avx512Vnni && avx2;
  }
  return false;
}

const CpuFeatures &kernels::getHostCpuFeatures() {
  static const CpuFeatures features = detect();
  return features;
}

std::vector<Isa> kernels::getSupportedIsas() {
  std::vector<Isa> out;
  for (Isa isa :
       {Isa::Scalar, Isa::Avx2, Isa::AvxVnni, Isa::Avx512Vnni, Isa::Amx})
    if (getHostCpuFeatures().supports(isa))
      out.push_back(isa);
  return out;
}

llvm::Expected<Isa> kernels::selectIsa() {
  const char *forced = std::getenv("QOPT_ISA");
  if (!forced || !*forced)
    return getSupportedIsas().back();
  auto isa = parseIsa(forced);
  if (!isa)
    return isa.takeError();
  if (!getHostCpuFeatures().supports(*isa))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "QOPT_ISA=" + std::string(forced) + ": this CPU (" +
            getHostCpuFeatures().model + ") or its OS does not support it");
  return *isa;
}

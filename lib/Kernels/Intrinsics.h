//===- Intrinsics.h - The x86 intrinsics, or their emulation ----*- C++ -*-===//
//
// For the kernel files of the families this project's machines may lack
// (avxvnni, avx512vnni, amx). A normal build gets the compiler's intrinsics.
// The unit tests build those files once more with QOPT_EMULATED_INTRINSICS:
// then the same names come from SIMDe's portable AVX-512 and a software AMX
// (unittests/Runtime/Emulated), so that every machine checks the families'
// arithmetic and memory accesses, not only the machines that have them.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_INTRINSICS_H
#define QOPT_LIB_KERNELS_INTRINSICS_H

#ifdef QOPT_EMULATED_INTRINSICS
#include "EmulatedIntrinsics.h"
#else
#include <immintrin.h>
#endif

#endif // QOPT_LIB_KERNELS_INTRINSICS_H

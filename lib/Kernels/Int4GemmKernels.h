//===- Int4GemmKernels.h - The weight-only 4-bit GEMM's ISA files -*- C++ -*-=//
//
// Private to lib/Kernels: Int4Gemm.cpp dispatches to these.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_INT4GEMMKERNELS_H
#define QOPT_LIB_KERNELS_INT4GEMMKERNELS_H

#include "qopt/Kernels/Int4Weights.h"

namespace qopt {
namespace kernels {

/// int4Gemm's contract on AVX-512F.
void int4GemmAvx512(const float *x, int64_t rows, const Int4Weights &w,
                    int64_t panelBegin, int64_t panelEnd, float *y,
                    float *scratch);

/// int4Gemm's contract on AVX2 and FMA.
void int4GemmAvx2(const float *x, int64_t rows, const Int4Weights &w,
                  int64_t panelBegin, int64_t panelEnd, float *y,
                  float *scratch);

/// Rows up to which a call reads the codes directly; above, each panel is
/// first made f32 in the scratch and reused by every row.
constexpr int64_t kInt4DirectRows = 2;

} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_INT4GEMMKERNELS_H

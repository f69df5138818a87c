//===- Int4DotGemmKernels.h - int4 x int8 GEMM's ISA files ------*- C++ -*-===//
//
// Private to lib/Kernels: Int4DotGemm.cpp quantizes the rows and dispatches
// to these.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_KERNELS_INT4DOTGEMMKERNELS_H
#define QOPT_LIB_KERNELS_INT4DOTGEMMKERNELS_H

#include "qopt/Kernels/Int4Weights.h"

namespace qopt {
namespace kernels {

/// Rows of x quantized per segment (in a call's scratch).
struct QuantizedRows {
  /// [rows][numGroups() * 4] int8, 0 past K.
  const int8_t *values;
  /// [rows][numSegments()][2]: the segment's scale sx and float(sum of its
  /// values).
  const float *segmentTerms;
  int64_t stride; // numGroups() * 4
};

/// int4DotGemm's contract on AVX-512 VNNI.
void int4DotGemmAvx512Vnni(const QuantizedRows &x, int64_t rows,
                           const Int4DotWeights &w, int64_t panelBegin,
                           int64_t panelEnd, float *y);

} // namespace kernels
} // namespace qopt

#endif // QOPT_LIB_KERNELS_INT4DOTGEMMKERNELS_H

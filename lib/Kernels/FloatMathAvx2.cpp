//===- FloatMathAvx2.cpp - The f32 loops, the avx2 family -----------------===//
//
// FloatMathBody.h's loops, built with -mavx2 and
// -ffp-contract=off; called only where CPUID finds the family.
//
//===----------------------------------------------------------------------===//

#include "FloatMathKernels.h"

namespace qopt {
namespace kernels {
namespace floatmath {
namespace avx2 {
#include "FloatMathBody.h"
} // namespace avx2

const Family &avx2Family() { return avx2::kFamily; }
} // namespace floatmath
} // namespace kernels
} // namespace qopt

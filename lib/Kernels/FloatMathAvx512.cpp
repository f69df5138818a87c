//===- FloatMathAvx512.cpp - The f32 loops, the avx512 family -------------===//
//
// FloatMathBody.h's loops, built with -mavx512f -mavx512dq and
// -ffp-contract=off; called only where CPUID finds the family.
//
//===----------------------------------------------------------------------===//

#include "FloatMathKernels.h"

namespace qopt {
namespace kernels {
namespace floatmath {
namespace avx512 {
#include "FloatMathBody.h"
} // namespace avx512

const Family &avx512Family() { return avx512::kFamily; }
} // namespace floatmath
} // namespace kernels
} // namespace qopt

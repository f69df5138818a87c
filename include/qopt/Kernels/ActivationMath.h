//===- ActivationMath.h - One value through an activation -------*- C++ -*-===//
//
// Private to lib/Interpreter. The arithmetic of the activation kernels on one
// value (computed in double from the stored float, stored back in the
// tensor's kind), shared by the ONNX kernels and the fused units' epilogue,
// so that a fused unit computes bit for bit what the chain it replaces did.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_KERNELS_ACTIVATIONMATH_H
#define QOPT_KERNELS_ACTIVATIONMATH_H

#include <algorithm>
#include <cmath>

namespace qopt {
namespace kernels {
namespace act {

inline double relu(double v) { return v < 0 ? 0.0 : v; }

inline double leakyRelu(double v, double alpha) {
  return v < 0 ? alpha * v : v;
}

inline double sigmoid(double x) {
  if (x >= 0)
    return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

/// min(1, max(0, v)) keeping NaN.
inline double clamp01(double v) {
  if (std::isnan(v))
    return v;
  return v < 0 ? 0.0 : (v > 1 ? 1.0 : v);
}

inline double hardSigmoid(double v, double alpha, double beta) {
  return clamp01(alpha * v + beta);
}

inline double hardSwish(double v) { return v * clamp01(v / 6.0 + 0.5); }

/// np.clip on floats: minimum(maximum(v, lo), hi); NaN from any side.
inline double clip(double v, double lo, double hi) {
  if (std::isnan(v) || std::isnan(lo) || std::isnan(hi))
    return NAN;
  return std::min(std::max(v, lo), hi);
}

} // namespace act
} // namespace kernels
} // namespace qopt

#endif // QOPT_KERNELS_ACTIVATIONMATH_H

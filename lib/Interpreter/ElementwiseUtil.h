//===- ElementwiseUtil.h - Helpers of the elementwise kernels ---*- C++ -*-===//
//
// Private to lib/Interpreter: what the elementwise kernel files share
// (ElementwiseKernels.cpp, ElementwiseUnary.cpp, ElementwiseBinary.cpp,
// ElementwiseCast.cpp, ReduceKernels.cpp). Element helpers called for
// every element are inline here; the input checks and broadcasting, done
// once a kernel, are in ElementwiseKernels.cpp, with the registration.
//
// Floats are computed in double and stored with one rounding to the output
// kind (Tensor::setDouble); integers use int64 arithmetic that wraps like the
// narrower ONNX type (uint64 arithmetic where C++ signed overflow would be
// undefined). Nothing here asserts on user input: bad types, shapes and
// attributes are reported through ctx.error().
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_INTERPRETER_ELEMENTWISEUTIL_H
#define QOPT_LIB_INTERPRETER_ELEMENTWISEUTIL_H

#include "qopt/Interpreter/Kernel.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace qopt {
namespace interp {
namespace elementwise {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

//===----------------------------------------------------------------------===//
// Element helpers
//===----------------------------------------------------------------------===//

inline bool isNumericKind(ElementKind k) {
  return isFloatKind(k) || isIntegerKind(k);
}
inline bool isUnsignedKind(ElementKind k) {
  return isIntegerKind(k) && !isSignedIntegerKind(k);
}

inline std::string kindName(ElementKind k) {
  return getElementKindName(k).str();
}

/// Three-way comparison of a[ia] and b[ib] (same kind): -1, 0, 1, or 2 when
/// unordered (a NaN is involved).
inline int compareAt(const Tensor &a, int64_t ia, const Tensor &b, int64_t ib) {
  ElementKind k = a.kind();
  if (isFloatKind(k)) {
    double x = a.getDouble(ia), y = b.getDouble(ib);
    if (std::isnan(x) || std::isnan(y))
      return 2;
    return (x > y) - (x < y);
  }
  if (k == ElementKind::U64) {
    uint64_t x = static_cast<uint64_t>(a.getInt(ia));
    uint64_t y = static_cast<uint64_t>(b.getInt(ib));
    return (x > y) - (x < y);
  }
  int64_t x = a.getInt(ia), y = b.getInt(ib);
  return (x > y) - (x < y);
}

// Wrapping int64 arithmetic (stores truncate to the element width after).
inline int64_t wrapAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}
inline int64_t wrapSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) -
                              static_cast<uint64_t>(b));
}
inline int64_t wrapMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) *
                              static_cast<uint64_t>(b));
}
inline int64_t wrapNeg(int64_t a) {
  return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
}

//===----------------------------------------------------------------------===//
// Input checks and broadcasting (ElementwiseKernels.cpp)
//===----------------------------------------------------------------------===//

llvm::Error requireInput(const KernelContext &ctx, size_t i, const Tensor *&t);
llvm::Error requireSameKind(const KernelContext &ctx, const Tensor &a,
                            const Tensor &b);
llvm::Error requireKind(const KernelContext &ctx, const Tensor &t, bool ok,
                        llvm::StringRef what);

/// Inputs broadcast to a common shape; offsets[k] maps each output element
/// to its element of input k (empty when input k already has the shape).
struct Broadcast {
  Shape shape;
  int64_t count = 0;
  std::vector<std::vector<int64_t>> offsets;
  int64_t at(size_t k, int64_t i) const {
    return offsets[k].empty() ? i : offsets[k][i];
  }
};

llvm::Expected<Broadcast> broadcastAll(const KernelContext &ctx,
                                       llvm::ArrayRef<const Tensor *> ins);

//===----------------------------------------------------------------------===//
// Registration, one function per file
//===----------------------------------------------------------------------===//

void registerUnaryKernels(KernelRegistry &r);
void registerBinaryKernels(KernelRegistry &r);
void registerCastKernels(KernelRegistry &r);
void registerReduceKernels(KernelRegistry &r);

} // namespace elementwise
} // namespace interp
} // namespace qopt

#endif // QOPT_LIB_INTERPRETER_ELEMENTWISEUTIL_H

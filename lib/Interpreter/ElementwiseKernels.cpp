//===- ElementwiseKernels.cpp - Reference kernels: elementwise ops --------===//
//
// Elementwise math, activations, comparisons, logic, Cast, variadic folds
// (Min/Max/Sum/Mean), reductions and ArgMax/ArgMin, with ONNX semantics and
// numpy broadcasting. The ONNX reference implementation (onnx/reference/ops)
// is the ground truth where the spec leaves a detail open.
//
// The kernels live in files by kind: ElementwiseUnary.cpp (math and
// activations of one input, IsNaN/IsInf/Not), ElementwiseBinary.cpp
// (arithmetic, comparisons, logic, Where, PRelu, Clip, variadic folds),
// ElementwiseCast.cpp (Cast, CastLike) and ReduceKernels.cpp (Reduce*,
// ArgMax, ArgMin). This file holds the input checks and broadcasting they
// share (ElementwiseUtil.h) and registers them all.
//
//===----------------------------------------------------------------------===//

#include "ElementwiseUtil.h"

using namespace qopt;
using namespace qopt::interp;
using namespace qopt::interp::elementwise;

using llvm::Error;

//===----------------------------------------------------------------------===//
// Input checks and broadcasting
//===----------------------------------------------------------------------===//

Error elementwise::requireInput(const KernelContext &ctx, size_t i,
                                const Tensor *&t) {
  t = ctx.input(i);
  if (!t || !t->isValid())
    return ctx.error("missing required input " + llvm::Twine(i));
  return Error::success();
}

Error elementwise::requireSameKind(const KernelContext &ctx, const Tensor &a,
                                   const Tensor &b) {
  if (a.kind() != b.kind())
    return ctx.error("input element types differ: " + kindName(a.kind()) +
                     " and " + kindName(b.kind()));
  return Error::success();
}

Error elementwise::requireKind(const KernelContext &ctx, const Tensor &t,
                               bool ok, llvm::StringRef what) {
  if (!ok)
    return ctx.error("expects " + what + " input, got " + kindName(t.kind()));
  return Error::success();
}

llvm::Expected<Broadcast>
elementwise::broadcastAll(const KernelContext &ctx,
                          llvm::ArrayRef<const Tensor *> ins) {
  Broadcast b;
  b.shape = ins[0]->shape();
  for (size_t k = 1; k < ins.size(); ++k) {
    auto s = broadcastShapes(b.shape, ins[k]->shape());
    if (!s)
      return ctx.error("shapes " + shapeToString(b.shape) + " and " +
                       shapeToString(ins[k]->shape()) + " do not broadcast");
    b.shape = std::move(*s);
  }
  auto n = shapeNumElements(b.shape);
  if (!n || *n > (int64_t(1) << 31))
    return ctx.error("broadcast shape " + shapeToString(b.shape) +
                     " is too large");
  b.count = *n;
  for (const Tensor *t : ins) {
    if (t->shape() == b.shape)
      b.offsets.emplace_back();
    else
      b.offsets.push_back(BroadcastIndexer(t->shape(), b.shape).offsets());
  }
  return b;
}

void interp::registerElementwiseKernels(KernelRegistry &r) {
  registerUnaryKernels(r);
  registerBinaryKernels(r);
  registerCastKernels(r);
  registerReduceKernels(r);
}

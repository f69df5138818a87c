//===- LowerPool.cpp - Pooling steps over NHWC tensors --------------------===//
//
// MaxPool on an NHWC int8 or f32 tensor is a max pool step (max commutes
// with the +128 of stored s8 bytes):
//
//   %y = onnx.MaxPool(%x) {kernel_shape = [3, 3], ...}
//     =>   max pool step (x NHWC) -> y NHWC
//
// q.pool in average or global average mode, on an int8 input on one grid,
// with no activation, is an average pool step: the value of each stored
// byte from the reference's dequantize (a 256-entry table), the window's
// mean as the reference pooling kernel computes it, and the result on its
// grid through q.quantize's rounding (or f32), so the bytes are the
// interpreter's. A global average is the window of the whole image.
//
//   %y = q.pool(%x) {mode = "global_average"} : tensor<1x64x1x1x!q>
//     =>   average pool step (x NHWC, window 7x7) -> y NHWC
//
// AveragePool, GlobalAveragePool and ReduceMean over H and W (the same
// arithmetic in the reference) on f32 that is NHWC already take the step
// too; a ReduceMean without keepdims writes its [N, C] result in ONNX
// layout, the same bytes as the pool's [N, C, 1, 1].
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

llvm::Expected<bool> PlanBuilder::lowerMaxPool(const Node &n) {
  const Value *x = n.getOperand(0);
  const Value *y = n.getResult(0);
  if (!x || isConstant(x) ||
      (n.getNumResults() > 1 && !n.getResult(1)->isAbsent()))
    return false;
  ElementKind kind = x->getType()->getStorageKind();
  if (!isByteInteger(kind) && kind != ElementKind::F32)
    return false;
  auto shapes = staticShapes({x, y});
  if (!shapes)
    return shapes.takeError();
  const Shape &xShape = (*shapes)[0], &yShape = (*shapes)[1];
  if (xShape.size() != 4)
    return false;
  auto window = PoolStep::getWindow(makeKernelOp(n), xShape, yShape);
  if (!window) {
    // The float step reports what is wrong with the attributes.
    llvm::consumeError(window.takeError());
    return false;
  }
  return addStepFor(n, {{x, PlanLayout::Nhwc}}, y, PlanLayout::Nhwc, kind,
                    [&](const PlanTensor &) {
                      return std::make_unique<PoolStep>(
                          n.getName().str(), *window, kind == ElementKind::F32);
                    });
}

/// A string attribute of `n`, or `otherwise` when it has none.
static std::string stringAttr(const Node &n, llvm::StringRef name,
                              llvm::StringRef otherwise) {
  const Attribute *a = n.getAttr(name);
  const std::string *s = a ? a->getIf<std::string>() : nullptr;
  return s ? *s : otherwise.str();
}

/// Whether ReduceMean `n` reduces axes 2 and 3 of a 4-D operand, and only
/// those (axes from its operand, or the attribute before opset 18).
static bool reducesHeightAndWidth(const Node &n) {
  std::optional<std::vector<int64_t>> given =
      n.getNumOperands() > 1 && n.getOperand(1)
          ? getConstantInts(n.getOperand(1))
          : getIntsAttrOr(n, "axes");
  if (!given || given->size() != 2)
    return false;
  std::vector<int64_t> &axes = *given;
  for (int64_t &a : axes)
    if (a < 0)
      a += 4;
  std::sort(axes.begin(), axes.end());
  return axes == std::vector<int64_t>{2, 3};
}

llvm::Expected<bool> PlanBuilder::lowerAveragePool(const Node &n) {
  const Value *x = n.getOperand(0);
  const Value *y = n.getResult(0);
  bool quantized = n.isa(ops::QPool);
  const QuantType *xq = getActivationGrid(x), *yq = getActivationGrid(y);
  // ReduceMean over H and W of NCHW: a global average pool, summed and
  // divided as the reference reduces (in double, rows then columns, by
  // H * W); without keepdims its [N, C] result is the pool's [N, C, 1, 1]
  // bytes in ONNX layout.
  bool reduceMean = n.isa(ops::ReduceMean);
  bool keepDims = !reduceMean || n.getIntAttr("keepdims").value_or(1) != 0;
  if (reduceMean && !reducesHeightAndWidth(n))
    return false;
  std::string mode = quantized ? stringAttr(n, "mode", "")
                     : n.isa(ops::GlobalAveragePool) || reduceMean
                         ? "global_average"
                         : "average";
  bool global = mode == "global_average";
  if (!x || isConstant(x) || (!global && mode != "average") ||
      (!yq && y->getType()->getStorageKind() != ElementKind::F32))
    return false;
  if (quantized ? !xq || stringAttr(n, "activation", "none") != "none"
                // f32 pooling where its input is NHWC already: a reformat
                // to NHWC would cost more than the float step it saves.
                : x->getType()->getStorageKind() != ElementKind::F32 || yq ||
                      homeLayout(x) != PlanLayout::Nhwc)
    return false;
  auto shapes = staticShapes({x, y});
  if (!shapes)
    return shapes.takeError();
  const Shape &xShape = (*shapes)[0], &yShape = (*shapes)[1];
  if (xShape.size() != 4)
    return false;
  AveragePoolStep::Params params;
  if (global) {
    const Shape &s = xShape;
    params.window = {s[0], s[1], s[2], s[3], 1, 1, s[2],
                     s[3], 1,    1,    1,    1, 0, 0};
    Shape pooled = keepDims ? Shape{s[0], s[1], 1, 1} : Shape{s[0], s[1]};
    if (yShape != pooled || s[2] < 1 || s[3] < 1)
      return false;
  } else {
    Shape padEnd;
    auto window = PoolStep::getWindow(makeKernelOp(n), xShape, yShape, &padEnd);
    if (!window) {
      // The float step reports what is wrong with the attributes.
      llvm::consumeError(window.takeError());
      return false;
    }
    params.window = *window;
    params.padBottom = padEnd[0];
    params.padRight = padEnd[1];
    params.countIncludePad = n.getIntAttr("count_include_pad").value_or(0);
  }
  if (quantized && !storedByteValues(*xq, params.values))
    return false;
  ElementKind yKind = yq ? yq->getStorageKind() : ElementKind::F32;
  return addStepFor(n, {{x, PlanLayout::Nhwc}}, y,
                    keepDims ? PlanLayout::Nhwc : PlanLayout::Onnx, yKind,
                    [&](const PlanTensor &result) {
                      if (yq)
                        params.output =
                            getQuantizeGrid(*yq, result.getStoredFlip());
                      return std::make_unique<AveragePoolStep>(
                          n.getName().str(), plan.isa, std::move(params));
                    });
}

bool PlanBuilder::storedByteValues(const QuantType &xq,
                                   std::vector<float> &values) {
  // The value of each stored byte, from the reference's dequantize.
  ElementKind xKind = xq.getStorageKind();
  uint8_t xFlip = xKind == ElementKind::I8 ? 0x80 : 0; // NHWC stores s8 + 128
  Tensor bytes(xKind, {256});
  for (int b = 0; b < 256; ++b)
    bytes.bytes()[b] = static_cast<char>(b ^ xFlip);
  KernelOp dequantize;
  dequantize.op = ops::QDequantize;
  dequantize.description = "the values of stored bytes";
  dequantize.operandQuantTypes = {copyType(&xq)};
  dequantize.resultQuantTypes = {nullptr};
  dequantize.resultPresent = {true};
  KernelContext ctx(dequantize, {&bytes}, opset);
  KernelFn fn = KernelRegistry::get().lookup(dequantize.op);
  if (!fn)
    return false;
  if (auto err = fn(ctx)) {
    llvm::consumeError(std::move(err));
    return false;
  }
  const Tensor &result = ctx.outputs[0];
  if (result.kind() != ElementKind::F32 || result.numElements() != 256)
    return false;
  values.assign(result.data<float>(), result.data<float>() + 256);
  return true;
}

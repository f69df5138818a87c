//===- LowerResize.cpp - Nearest Resize/Upsample as an NHWC pixel copy ----===//
//
//   %y = onnx.Resize(%x, %roi, %scales) {mode = "nearest", ...}
//          : tensor<NxCxHxW x int8 or f32> -> tensor<NxCxOHxOW x ...>
//     =>
//   resize step   y[n, oh, ow, :] = x[n, rows[oh], cols[ow], :]   (NHWC)
//
// The maps come from the reference kernel itself: it runs once, at build
// time, on a probe of the input's shape whose every element holds its own
// flat index (f64, exact). Nearest sampling copies elements, so the probe's
// result says where each output element came from, in whatever coordinate
// and rounding mode the node asks for. The step is taken only when that
// answer is a pixel copy: batch and channels kept, each output row from
// one input row and each column from one input column.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"
#include "qopt/IR/OpDefinition.h"

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

/// Probes larger than this (input elements) are left to the float step: the
/// probe and its result are doubles.
static constexpr int64_t kMaxProbeElements = int64_t(1) << 21;

llvm::Expected<bool> PlanBuilder::lowerResize(const Node &n) {
  const Value *x = n.getOperand(0);
  const Value *y = n.getNumResults() == 1 ? n.getResult() : nullptr;
  // tf_crop_and_resize samples outside the input too (its extrapolation
  // value); the other modes only choose which input element to copy.
  if (!x || !y || isConstant(x) ||
      getStringAttrOr(n, "mode", "nearest") != "nearest" ||
      getStringAttrOr(n, "coordinate_transformation_mode", "") ==
          "tf_crop_and_resize")
    return false;
  ElementKind kind = x->getType()->getStorageKind();
  if (kind != y->getType()->getStorageKind() ||
      !(kind == ElementKind::I8 || kind == ElementKind::U8 ||
        kind == ElementKind::F32))
    return false;
  // An f32 tensor in ONNX layout is as well resized there by the float step
  // as reformatted to NHWC and back.
  if (kind == ElementKind::F32 && homeLayout(x) != PlanLayout::Nhwc)
    return false;
  auto shapes = staticShapes({x, y});
  if (!shapes)
    return shapes.takeError();
  const Shape &xShape = (*shapes)[0], &yShape = (*shapes)[1];
  if (xShape.size() != 4 || yShape.size() != 4 || xShape[0] != yShape[0] ||
      xShape[1] != yShape[1] || yShape[2] < 1 || yShape[3] < 1)
    return false;
  auto elements = shapeNumElements(xShape);
  if (!elements || *elements < 1 || *elements > kMaxProbeElements)
    return false;

  // The probe, and the node's other operands (constant or absent).
  Tensor probe(ElementKind::F64, xShape);
  for (int64_t i = 0; i < *elements; ++i)
    probe.setDouble(i, double(i));
  std::vector<Tensor> constants;
  constants.reserve(n.getNumOperands());
  std::vector<const Tensor *> operands{&probe};
  for (unsigned i = 1; i < n.getNumOperands(); ++i) {
    const Value *v = n.getOperand(i);
    if (!v || v->isAbsent()) {
      operands.push_back(nullptr);
      continue;
    }
    const DenseElements *data = getConstantData(v);
    if (!data)
      return false; // sizes known only when run
    constants.push_back(Tensor::fromDense(*data));
    operands.push_back(&constants.back());
  }
  KernelFn fn = KernelRegistry::get().lookup(n.getOp());
  if (!fn)
    return false;
  KernelOp op = makeKernelOp(n);
  // The probe is plain f64, whatever grid the data is on.
  std::fill(op.operandQuantTypes.begin(), op.operandQuantTypes.end(), nullptr);
  std::fill(op.resultQuantTypes.begin(), op.resultQuantTypes.end(), nullptr);
  KernelContext ctx(op, std::move(operands), opset);
  if (auto err = fn(ctx)) {
    llvm::consumeError(std::move(err)); // the float step reports it
    return false;
  }
  if (ctx.outputs.empty() || !ctx.outputs[0].isValid() ||
      ctx.outputs[0].shape() != yShape)
    return false;

  // Where each output element came from, as a pixel copy or not at all.
  const Tensor &sampled = ctx.outputs[0];
  int64_t batch = xShape[0], channels = xShape[1], inH = xShape[2],
          inW = xShape[3], outH = yShape[2], outW = yShape[3];
  std::vector<int64_t> rows(outH), cols(outW);
  for (int64_t oh = 0; oh < outH; ++oh)
    rows[oh] = int64_t(sampled.getDouble(oh * outW)) / inW;
  for (int64_t ow = 0; ow < outW; ++ow)
    cols[ow] = int64_t(sampled.getDouble(ow)) % inW;
  for (int64_t r : rows)
    if (r < 0 || r >= inH)
      return false;
  for (int64_t c : cols)
    if (c < 0 || c >= inW)
      return false;
  for (int64_t plane = 0, i = 0; plane < batch * channels; ++plane)
    for (int64_t oh = 0; oh < outH; ++oh)
      for (int64_t ow = 0; ow < outW; ++ow, ++i)
        if (sampled.getDouble(i) !=
            double((plane * inH + rows[oh]) * inW + cols[ow]))
          return false;

  return addStepFor(
      n, {{x, PlanLayout::Nhwc}}, y, PlanLayout::Nhwc, kind,
      [&](const PlanTensor &) {
        return std::make_unique<ResizeStep>(
            n.getName().str(),
            ResizeStep::Geometry{batch, channels, inH, inW, outH, outW},
            std::move(rows), std::move(cols));
      });
}

//===- LowerDynamic.cpp - Dynamic quantization to int8 steps --------------===//
//
//   %q, %s, %z = onnx.DynamicQuantizeLinear(%x)      x: 1x128x256 f32
//     =>
//   dynamic quantize step  x's range -> a u8 grid; q on it, s and z as
//                          tensors of one element
//
//   %y = com.microsoft.MatMulIntegerToFloat(%q, %w, %s, %ws, %z, %wz, %b)
//        q: 1x128x256 u8, w: 256x1024 s8 constant
//     =>
//   dynamic int8 gemm step  128 rows of 256 (q's leading dims flattened), w
//                           packed as a gemm step's; at run time the
//                           epilogue's scale s * ws[n] and zero term
//                           z * sum(w[n]); plus b[n]; f32 result
//
//   %y = com.microsoft.DynamicQuantizeMatMul(%x, %w, %ws, %wz, %b)
//     =>
//   a dynamic quantize step into tensors of its own, then the gemm step
//
// The gemm step runs the node when w is a constant 2-D s8 or u8 matrix
// (u8 as s8 with the zero points moved by 128), its scale one value or one
// per column, its zero point absent or of the same count, the bias absent
// or one f32 per column, q u8 with a scale and zero point of one element,
// and the result q's rows by N. MatMulInteger -> Cast -> Mul chains reach
// here as MatMulIntegerToFloat (the fuse-dynamic-matmul pass); anything
// else runs as a float step.
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

namespace {

const Value *presentOperand(const Node &n, unsigned i) {
  const Value *v = n.getNumOperands() > i ? n.getOperand(i) : nullptr;
  return v && !v->isAbsent() ? v : nullptr;
}

} // namespace

llvm::Expected<bool> PlanBuilder::lowerDynamicQuantize(const Node &n) {
  constexpr bool none = false;
  const Value *x = presentOperand(n, 0);
  if (!x || n.getNumResults() != 3 || x->getType()->isQuantized() ||
      x->getType()->getStorageKind() != ElementKind::F32)
    return none;
  auto shape = staticShape(x);
  if (!shape)
    return shape.takeError();
  PlanLayout layout = homeLayout(x);
  auto input = tensorFor(x, layout);
  if (!input)
    return input.takeError();
  std::vector<int> outputs;
  const ElementKind kinds[] = {ElementKind::U8, ElementKind::F32,
                               ElementKind::U8};
  for (unsigned i = 0; i < 3; ++i) {
    const Value *v = n.getResult(i);
    if (v->isAbsent()) { // a place the step writes and nothing reads
      outputs.push_back(
          addTensor(n.getName().str() + "/result" + std::to_string(i), kinds[i],
                    i ? Shape{} : *shape, layout));
      continue;
    }
    auto id = defineResult(v, i ? PlanLayout::Onnx : layout, kinds[i]);
    if (!id)
      return id.takeError();
    outputs.push_back(*id);
  }
  addStep(std::make_unique<DynamicQuantizeStep>(n.getName().str(), plan.isa), n,
          {*input}, std::move(outputs));
  return true;
}

llvm::Expected<bool> PlanBuilder::lowerDynamicGemm(const Node &n) {
  constexpr bool none = false;
  // MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zp, b_zp, bias);
  // DynamicQuantizeMatMul(A, B, b_scale, b_zp, bias).
  bool quantizesHere = n.isa(ops::MsDynamicQuantizeMatMul);
  const Value *a = presentOperand(n, 0), *w = presentOperand(n, 1);
  const Value *aScale = quantizesHere ? nullptr : presentOperand(n, 2);
  const Value *aZero = quantizesHere ? nullptr : presentOperand(n, 4);
  const Value *wScale = presentOperand(n, quantizesHere ? 2 : 3);
  const Value *wZero = presentOperand(n, quantizesHere ? 3 : 5);
  const Value *bias = presentOperand(n, quantizesHere ? 4 : 6);
  const Value *y = n.getResult();
  ElementKind aKind = quantizesHere ? ElementKind::F32 : ElementKind::U8;
  if (!a || !w || !wScale || (!quantizesHere && (!aScale || !aZero)) ||
      n.getNumResults() != 1 || a->getType()->isQuantized() ||
      a->getType()->getStorageKind() != aKind ||
      y->getType()->getStorageKind() != ElementKind::F32 ||
      y->getType()->isQuantized())
    return none;
  const DenseElements *wData = getConstantData(w);
  if (!wData || wData->getDims().size() != 2 ||
      (wData->getKind() != ElementKind::I8 &&
       wData->getKind() != ElementKind::U8))
    return none;
  int64_t k = wData->getDims()[0], columns = wData->getDims()[1];
  auto shapes = staticShapes({a, y});
  if (!shapes)
    return shapes.takeError();
  const Shape &aShape = (*shapes)[0], &yShape = (*shapes)[1];
  if (aShape.size() < 2 || aShape.back() != k || k < 1 || columns < 1)
    return none;
  Shape wanted(aShape.begin(), aShape.end() - 1);
  wanted.push_back(columns);
  int64_t rows = shapeNumElements(aShape).value_or(0) / k;
  if (yShape != wanted || rows < 1)
    return none;
  if (!quantizesHere) {
    auto scalars = staticShapes({aScale, aZero});
    if (!scalars)
      return scalars.takeError();
    if (shapeNumElements((*scalars)[0]).value_or(0) != 1 ||
        shapeNumElements((*scalars)[1]).value_or(0) != 1 ||
        aScale->getType()->getStorageKind() != ElementKind::F32 ||
        aZero->getType()->getStorageKind() != ElementKind::U8)
      return none;
  }

  // The epilogue: the weight scales (times s_x at run time), the zero
  // points as s8 (u8 weights are the same numbers - 128), the bias.
  Int8Epilogue e;
  auto scales = getColumnBias(wScale, columns, 1.0); // one per column
  if (!scales)
    return none;
  e.scale = std::move(*scales);
  int32_t shift = wData->getKind() == ElementKind::U8 ? 128 : 0;
  if (wZero) {
    const DenseElements *z = getConstantData(wZero);
    if (!z || z->getKind() != wData->getKind() ||
        (z->getNumElements() != 1 && z->getNumElements() != columns))
      return none;
    for (int64_t i = 0; i < z->getNumElements(); ++i)
      e.weightZero.push_back(int32_t(z->getAsInt(i)) - shift);
  } else if (shift) {
    e.weightZero.push_back(-shift);
  }
  if (llvm::all_of(e.weightZero, [](int32_t z) { return z == 0; }))
    e.weightZero.clear();
  if (bias) {
    // One value per column, as ONNX Runtime's kernels take it.
    const DenseElements *b = getConstantData(bias);
    auto values = getColumnBias(bias, columns, 1.0);
    if (!b || b->getNumElements() != columns || !values)
      return none;
    e.bias = std::move(*values);
  }
  Int8ConvShape s = GemmStep::makeShape(rows, k, columns);
  if (auto err = Int8Conv::checkParams(s, e)) {
    llvm::consumeError(std::move(err)); // the float step runs it
    return none;
  }
  // The kernel's weights: N channels of K.
  llvm::StringRef bytes = wData->getRawBytes();
  std::vector<int8_t> weights(size_t(columns * k));
  for (int64_t c = 0; c < columns; ++c)
    for (int64_t i = 0; i < k; ++i)
      weights[c * k + i] =
          int8_t(int32_t(uint8_t(bytes[i * columns + c])) - shift);
  Int8Conv conv(options.isa, s, weights.data(), std::move(e));

  auto input = tensorFor(a, PlanLayout::Onnx);
  if (!input)
    return input.takeError();
  std::vector<int> reads;
  if (quantizesHere) {
    // A's own dynamic quantize step, into tensors only this step reads.
    std::string base = n.getName().str();
    int q = addTensor(base + "/quantized", ElementKind::U8, aShape,
                      PlanLayout::Onnx);
    int scale =
        addTensor(base + "/scale", ElementKind::F32, Shape{}, PlanLayout::Onnx);
    int zero = addTensor(base + "/zero_point", ElementKind::U8, Shape{},
                         PlanLayout::Onnx);
    addStep(std::make_unique<DynamicQuantizeStep>(base + "/quantize", plan.isa),
            n, {*input}, {q, scale, zero});
    reads = {q, scale, zero};
  } else {
    auto scale = tensorFor(aScale, PlanLayout::Onnx);
    if (!scale)
      return scale.takeError();
    auto zero = tensorFor(aZero, PlanLayout::Onnx);
    if (!zero)
      return zero.takeError();
    reads = {*input, *scale, *zero};
  }
  auto result = defineResult(y, PlanLayout::Onnx, ElementKind::F32);
  if (!result)
    return result.takeError();
  addStep(std::make_unique<DynamicGemmStep>(n.getName().str(), std::move(conv)),
          n, std::move(reads), {*result});
  return true;
}

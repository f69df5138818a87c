//===- MatMulStep.cpp - Int8 MatMul of two activations --------------------===//
//
//   y[b] = quantize(f32(double(acc[b]) * lhsScale * rhsScale))   (or the f32)
//   acc[b][m][n] = sum over k of (A[b][m][k] - za) * (B[b][k][n] - zb)
//
// A tile is up to kRowsPerTile rows of one product. The tiles a call gets
// are consecutive, so the right operand is packed once for all the rows of
// a product that one call computes. The operands are read through their
// strides, so an operand in NHWC layout (a 4-D int8 tensor a conv or
// quantize step wrote) needs no reformat.
//
// Against the reference (q.matmul: each operand dequantized to f32, the
// products summed in double, the sum rounded to f32): the s32 sum is exact,
// where the reference rounds each dequantized operand to f32 first, so the
// f32 results can differ in their last bits and a quantized result by one
// step where a value lies on a rounding boundary.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/MatMulStep.h"

#include "PlanFields.h"
#include "PlanVerifier.h"
#include "qopt/Support/Error.h"

#include <algorithm>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

namespace {

size_t alignTo64(size_t n) { return (n + 63) / 64 * 64; }

/// Element strides of tensor `t`'s logical dims as it is stored.
std::vector<int64_t> storedStrides(const PlanTensor &t) {
  const Shape &s = t.shape;
  std::vector<int64_t> strides(s.size(), 1);
  if (t.layout == PlanLayout::Nhwc) { // [N, C, H, W] stored [N, H, W, C]
    strides[1] = 1;
    strides[3] = s[1];
    strides[2] = s[3] * s[1];
    strides[0] = s[2] * strides[2];
    return strides;
  }
  for (size_t i = s.size(); i-- > 1;)
    strides[i - 1] = strides[i] * s[i];
  return strides;
}

/// An operand of the product: its matrix strides and, per batch dim, the
/// stride (0 where the dim is broadcast).
struct Operand {
  Int8Matrix matrix;
  std::vector<int64_t> batchStrides;
};

Operand operandOf(const PlanRun &run, int id, int32_t zero) {
  const PlanTensor &t = run.tensor(id);
  std::vector<int64_t> strides = storedStrides(t);
  size_t rank = t.shape.size();
  Operand o;
  o.matrix.data = reinterpret_cast<const uint8_t *>(run.read(id));
  o.matrix.rowStride = strides[rank - 2];
  o.matrix.columnStride = strides[rank - 1];
  o.matrix.isSigned = t.kind == ElementKind::I8;
  o.matrix.flip = t.getStoredFlip();
  o.matrix.zero = zero;
  for (size_t i = 0; i + 2 < rank; ++i)
    o.batchStrides.push_back(t.shape[i] == 1 ? 0 : strides[i]);
  return o;
}

} // namespace

size_t MatMulStep::getScratchBytes() const {
  return alignTo64(size_t(kernel.getPackedElements()) * sizeof(int16_t)) +
         alignTo64(size_t(kernel.getPairElements()) * sizeof(int32_t)) +
         alignTo64(size_t(kernel.getRowElements()) * sizeof(int32_t)) +
         alignTo64(size_t(kernel.getRowElements()) * sizeof(float));
}

llvm::Error MatMulStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                            void *scratch) const {
  const Params &p = params;
  Operand lhs = operandOf(run, inputs[0], p.lhsZero);
  Operand rhs = operandOf(run, inputs[1], p.rhsZero);
  const Shape &yShape = run.tensor(outputs[0]).shape;
  char *y = run.write(outputs[0]);

  auto *packed = static_cast<int16_t *>(scratch);
  auto *pairs = reinterpret_cast<int32_t *>(
      static_cast<char *>(scratch) +
      alignTo64(size_t(kernel.getPackedElements()) * sizeof(int16_t)));
  int32_t *acc = reinterpret_cast<int32_t *>(
      reinterpret_cast<char *>(pairs) +
      alignTo64(size_t(kernel.getPairElements()) * sizeof(int32_t)));
  float *row = reinterpret_cast<float *>(
      reinterpret_cast<char *>(acc) +
      alignTo64(size_t(kernel.getRowElements()) * sizeof(int32_t)));

  double scale = double(p.lhsScale) * double(p.rhsScale);
  int64_t tilesPerProduct = (p.m + kRowsPerTile - 1) / kRowsPerTile;
  int64_t packedBatch = -1;
  Int8Matrix a = lhs.matrix, b = rhs.matrix;
  for (int64_t tile = tileBegin; tile < tileEnd; ++tile) {
    int64_t batch = tile / tilesPerProduct;
    if (batch != packedBatch) {
      // The batch index, dim by dim from the last, into each offset.
      int64_t rest = batch, lhsOffset = 0, rhsOffset = 0;
      for (size_t d = lhs.batchStrides.size(); d-- > 0;) {
        int64_t index = rest % yShape[d];
        rest /= yShape[d];
        lhsOffset += index * lhs.batchStrides[d];
        rhsOffset += index * rhs.batchStrides[d];
      }
      a.data = lhs.matrix.data + lhsOffset;
      b.data = rhs.matrix.data + rhsOffset;
      kernel.packRight(b, packed);
      packedBatch = batch;
    }
    int64_t first = (tile % tilesPerProduct) * kRowsPerTile;
    int64_t last = std::min(p.m, first + kRowsPerTile);
    for (int64_t r = first; r < last; ++r) {
      kernel.multiplyRow(a, r, packed, pairs, acc);
      int64_t at = (batch * p.m + r) * p.n;
      float *out = p.output ? row : reinterpret_cast<float *>(y) + at;
      for (int64_t c = 0; c < p.n; ++c)
        out[c] = static_cast<float>(double(acc[c]) * scale);
      if (p.output)
        quantizeFloats(isa, row, p.n, *p.output,
                       reinterpret_cast<uint8_t *>(y) + at);
    }
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Fields, checks, work
//===----------------------------------------------------------------------===//

llvm::Error MatMulStep::writeFields(planfile::PlanEncoder &encoder) const {
  FieldSink &out = encoder.out;
  const Params &p = params;
  for (int64_t v : {p.batches, p.m, p.k, p.n})
    out.i64(v, "matmul geometry");
  out.f32(p.lhsScale, "matmul operands");
  out.i32(p.lhsZero, "matmul operands");
  out.f32(p.rhsScale, "matmul operands");
  out.i32(p.rhsZero, "matmul operands");
  out.optionalGrid(p.output, "output grid flag");
  return llvm::Error::success();
}

std::unique_ptr<PlanStep> planfile::readMatMulStep(PlanDecoder &decoder, Plan &,
                                                   const std::string &name) {
  FieldSource &in = decoder.in;
  MatMulStep::Params p;
  for (int64_t *v : {&p.batches, &p.m, &p.k, &p.n})
    *v = in.i64("matmul geometry");
  p.lhsScale = in.f32("matmul operands");
  p.lhsZero = in.i32("matmul operands");
  p.rhsScale = in.f32("matmul operands");
  p.rhsZero = in.i32("matmul operands");
  p.output = in.optionalGrid("output grid flag");
  if (in.failed)
    return nullptr;
  // The kernel's scratch is sized from these: the verifier checks them
  // against the tensors, a huge value must not get that far.
  if (!MatMulStep::isGeometryInRange(p)) {
    in.fail("int8 matmul '" + name + "' has a size out of range");
    return nullptr;
  }
  return std::make_unique<MatMulStep>(name, decoder.isa, p);
}

/// Operands of the result's rank, i8 or u8 in either layout, their last
/// two dims M x K and K x N, every batch dim the result's or 1; the result
/// in ONNX layout, f32 or int8 on the output grid; zero points of the
/// operands' types and scales positive and finite.
llvm::Error MatMulStep::verify(const PlanVerifier &check) const {
  const MatMulStep &step = *this;
  const Plan &plan = check.getPlan();
  if (auto err = check.checkOperands(step, 2, 1))
    return err;
  const MatMulStep::Params &p = step.getParams();
  if (!MatMulStep::isGeometryInRange(p))
    return makeError("a size is out of range");
  const PlanTensor &a = plan.tensors[step.inputs[0]];
  const PlanTensor &b = plan.tensors[step.inputs[1]];
  const PlanTensor &y = plan.tensors[step.outputs[0]];
  size_t rank = y.shape.size();
  if (rank < 2 || a.shape.size() != rank || b.shape.size() != rank)
    return makeError("its operands and result are not of one rank >= 2");
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < rank; ++i) {
    for (const PlanTensor *t : {&a, &b})
      if (t->shape[i] != 1 && t->shape[i] != y.shape[i])
        return makeError("'" + t->name + "' does not broadcast to '" + y.name +
                         "'");
    batches *= y.shape[i];
  }
  Shape lhs{p.m, p.k}, rhs{p.k, p.n}, result{p.m, p.n};
  auto lastTwo = [&](const PlanTensor &t) {
    return Shape(t.shape.end() - 2, t.shape.end());
  };
  if (batches != p.batches || lastTwo(a) != lhs || lastTwo(b) != rhs ||
      lastTwo(y) != result)
    return makeError("its geometry is not its tensors' " +
                     shapeToString(a.shape) + " x " + shapeToString(b.shape) +
                     " -> " + shapeToString(y.shape));
  for (const PlanTensor *t : {&a, &b}) {
    if (!PlanVerifier::isInt8Kind(t->kind))
      return makeError("operand '" + t->name + "' is not i8 or u8");
  }
  auto zeroFits = [](const PlanTensor &t, int32_t zero) {
    return t.kind == ElementKind::I8 ? zero >= -128 && zero <= 127
                                     : zero >= 0 && zero <= 255;
  };
  if (!zeroFits(a, p.lhsZero) || !zeroFits(b, p.rhsZero) || !(p.lhsScale > 0) ||
      !std::isfinite(p.lhsScale) || !(p.rhsScale > 0) ||
      !std::isfinite(p.rhsScale))
    return makeError("an operand's scale or zero point is out of range");
  if (y.layout != PlanLayout::Onnx)
    return makeError("its result '" + y.name + "' is not in ONNX layout");
  if (!p.output) {
    if (y.kind != ElementKind::F32)
      return makeError("its result '" + y.name + "' is not f32");
    return llvm::Error::success();
  }
  return check.checkGrid(*p.output, y);
}

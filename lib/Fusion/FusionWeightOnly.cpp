//===- FusionWeightOnly.cpp - 4-bit weight-only MatMuls as units ----------===//
//
// LLM weight-only quantization (RTN, AWQ, NVIDIA Model Optimizer's INT4)
// keeps the activations float and stores the weights in 4 bits:
//
//   %w = onnx.Constant : i4 or u4 [K, N], block-wise along K
//   %b = q.dequantize(%w)
//   %y = onnx.MatMul(%x, %b)                  x float
//
// TensorRT 10 runs this as one weight-only GEMM (INT4 weight-only
// quantization of block-quantized weights, new in 10.0); qopt's plan as an
// int4 weight-only gemm step (lib/CodeGen/LowerInt4Gemm.cpp). There it is a
// unit, its MACs counted apart from INT8 and float as INT4 weight-only.
// TensorRT 8.x's ONNX parser takes INT8 Q/DQ only, and ONNX Runtime 1.30's
// CPU provider runs the QDQ form's DequantizeLinear and a float MatMul
// (measured: 69 ms for a 4096-wide two-layer decode MLP, 9.7 ms as its own
// com.microsoft.MatMulNBits): float there, with that reason, and the fix
// to-matmul-nbits where that pass takes the weight. A MatMulNBits node is
// the unit under ONNX Runtime; TensorRT's parser and the plan read no
// com.microsoft ops (raise-qoperator writes it back as the QDQ form).
//
//===----------------------------------------------------------------------===//

#include "FusionPlanner.h"

#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Passes/QdqUtils.h"

using namespace qopt;
using namespace qopt::fusion;

/// Whether to-matmul-nbits takes a weight on `grid`: blocks along K of a
/// power of two from 16, or one scale per column or one for all.
static bool nbitsTakes(const QuantType *grid) {
  if (!grid->isBlocked())
    return !grid->isPerAxis() || grid->getAxis() == 1;
  int64_t b = grid->getBlockSize();
  return grid->getAxis() == 0 && b >= 16 && (b & (b - 1)) == 0;
}

/// A weight-only 4-bit unit of MatMul-like `n` reading x (operand 0).
static FusionUnit weightOnlyUnit(Node &n) {
  FusionUnit unit;
  unit.kind = "weight-only matmul";
  unit.weightOnly4Bit = true;
  unit.members.push_back(&n);
  unit.macs = countMacs(n);
  unit.inputs.push_back({n.getOperand(0), nullptr});
  unit.outputs.push_back({n.getResult(), nullptr});
  return unit;
}

bool Planner::tryMatMulNBits(Node &n) {
  if (!n.isa(ops::MsMatMulNBits))
    return false;
  if (rules.name != "ort") {
    FloatCause c;
    c.reason = rules.title.str() + " reads no com.microsoft ops (ONNX "
                                   "Runtime's own 4-bit MatMul)";
    c.fixPipeline = "raise-qoperator";
    markFloat(n, std::move(c));
    return true;
  }
  addUnit(weightOnlyUnit(n));
  return true;
}

bool Planner::tryWeightOnly(Node &n) {
  if (tryMatMulNBits(n))
    return true;
  if (!n.isa(ops::MatMul) || n.getNumOperands() != 2)
    return false;
  Node *dq = getProducer(n.getOperand(1), ops::QDequantize);
  const QuantType *grid = dq ? getStoredQuantType(dq->getOperand(0)) : nullptr;
  if (!grid || !isConstantValue(dq->getOperand(0)) ||
      (grid->getStorageKind() != ElementKind::I4 &&
       grid->getStorageKind() != ElementKind::U4) ||
      getProducer(n.getOperand(0), ops::QDequantize))
    return false;
  // Blocks along K (axis 0), one scale per column (axis 1) or one for all:
  // the layouts TensorRT's block quantization and the plan's step take.
  if (grid->isPerAxis() && grid->getAxis() != (grid->isBlocked() ? 0 : 1))
    return false;
  if (!rules.int4WeightOnlyGemm) {
    FloatCause c;
    if (rules.name == "trt") {
      c.reason = "TensorRT " + rules.version.str() +
                 "'s ONNX parser takes INT8 Q/DQ only: INT4 weight-only "
                 "GEMMs (block-quantized weights) came in TensorRT 10.0";
      c.fixInModel = "build with TensorRT 10, or quantize the weight to INT8";
    } else {
      c.reason = rules.title.str() +
                 " runs a 4-bit DequantizeLinear and a float MatMul (its "
                 "4-bit kernels take com.microsoft.MatMulNBits)";
      if (rules.name == "ort" && nbitsTakes(grid))
        c.fixPipeline = "to-matmul-nbits";
      else
        c.fixInModel = "write the layer as com.microsoft.MatMulNBits for "
                       "ONNX Runtime";
    }
    markFloat(n, std::move(c));
    return true;
  }
  FusionUnit unit = weightOnlyUnit(n);
  unit.absorbed.push_back(dq);
  unit.inputs.push_back({n.getOperand(1), grid});
  addUnit(std::move(unit));
  return true;
}

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
// NVFP4 weights (NVIDIA Model Optimizer, TorchAO) are FP4 (E2M1) codes in
// blocks of 16, each block's scale an FP8 code that one float32 scale
// dequantizes:
//
//   %s = q.dequantize(%s8)        %s8: f8E4M3FN constant, per tensor
//   %b = onnx.DequantizeLinear(%w4, %s) {block_size = 16}   %w4: f4E2M1
//   %y = onnx.MatMul(%x, %b)                                x float
//
// TensorRT 10.8 keeps the FP4 constant and dequantizes it in the GEMM's
// prologue, the activations in high precision (FP4 came in 10.8 for
// Blackwell GPUs): one weight-only unit, its MACs FP4 weight-only. Earlier
// versions, ONNX Runtime 1.30 (no FLOAT4E2M1 kernel) and qopt's plan (the
// weight folds to f32) compute it in float.
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
  FusionUnit unit = weightOnlyUnit(n);
  unit.outputs.push_back({n.getResult(), nullptr});
  addUnit(std::move(unit));
  return true;
}

void Planner::addWeightOnlyUnit(FusionUnit unit, Node &gemm) {
  unit.outputs.push_back({rules.weightOnlyGemmEpilogue
                              ? absorbGemmEpilogue(unit, gemm.getResult())
                              : gemm.getResult(),
                          nullptr});
  addUnit(std::move(unit));
}

/// The DQs of the constant FP4 weight `v` is, the weight's first: a
/// q.dequantize or onnx.DequantizeLinear of an f4E2M1 constant whose scale
/// is a constant or (NVFP4) the DQ of a constant float8 tensor. Empty for
/// anything else.
static std::vector<Node *> fp4WeightDequantize(const Value *v) {
  auto isDequantize = [](const Node *n) {
    return n && (n->isa(ops::QDequantize) || n->isa(ops::DequantizeLinear)) &&
           n->getNumOperands() >= 1 && n->getOperand(0);
  };
  auto constantOperands = [](const Node &n, unsigned from) {
    for (unsigned i = from; i < n.getNumOperands(); ++i)
      if (n.getOperand(i) && !isConstantValue(n.getOperand(i)))
        return false;
    return true;
  };
  Node *dq = v ? v->getDefiningNode() : nullptr;
  if (!isDequantize(dq) ||
      dq->getOperand(0)->getType()->getStorageKind() != ElementKind::F4E2M1 ||
      !isConstantValue(dq->getOperand(0)))
    return {};
  std::vector<Node *> chain{dq};
  if (dq->isa(ops::QDequantize) || constantOperands(*dq, 1))
    return chain;
  // Two-level: the scale is the DQ of float8 codes by constants.
  Node *scaleDq = dq->getNumOperands() > 1 && dq->getOperand(1)
                      ? dq->getOperand(1)->getDefiningNode()
                      : nullptr;
  if (!isDequantize(scaleDq) || !constantOperands(*dq, 2) ||
      !isFloat8Kind(scaleDq->getOperand(0)->getType()->getStorageKind()) ||
      !constantOperands(*scaleDq, 0))
    return {};
  chain.push_back(scaleDq);
  return chain;
}

bool Planner::tryFp4WeightOnly(Node &n) {
  if (!(n.isa(ops::MatMul) || n.isa(ops::Gemm)) || n.getNumOperands() < 2 ||
      !n.getOperand(0))
    return false;
  std::vector<Node *> weight = fp4WeightDequantize(n.getOperand(1));
  const Node *xProducer = n.getOperand(0)->getDefiningNode();
  if (weight.empty() || (xProducer && (xProducer->isa(ops::QDequantize) ||
                                       xProducer->isa(ops::DequantizeLinear))))
    return false;
  if (!rules.fp4WeightOnlyGemm) {
    FloatCause c;
    if (rules.name == "trt") {
      c.reason = "TensorRT " + rules.version.str() +
                 " has no FP4 (E2M1) type: FP4 weights (NVFP4) came in "
                 "TensorRT 10.8, for Blackwell GPUs";
      c.fixInModel = "build with TensorRT 10.8 or newer on a Blackwell GPU, "
                     "or quantize the weight to INT4 or INT8";
    } else if (rules.name == "ort") {
      c.reason = "ONNX Runtime 1.30 has no CPU kernel for FLOAT4E2M1 "
                 "weights (its DequantizeLinear does not take FP4)";
      c.fixInModel = "quantize the weight to INT4 (MatMulNBits) for ONNX "
                     "Runtime";
    } else {
      c.reason = rules.title.str() + " has no FP4 kernel: the FP4 weight "
                                     "folds to float32 and the GEMM runs in "
                                     "float";
      c.fixInModel = "quantize the weight to INT4 for the CPU";
    }
    markFloat(n, std::move(c));
    return true;
  }
  FusionUnit unit = weightOnlyUnit(n);
  unit.kind = "fp4 weight-only " + n.getOpType().lower();
  unit.fp4 = true;
  unit.absorbed = weight;
  unit.inputs.push_back({n.getOperand(1), nullptr});
  addWeightOnlyUnit(std::move(unit), n);
  return true;
}

bool Planner::tryWeightOnly(Node &n) {
  if (tryMatMulNBits(n) || tryFp4WeightOnly(n))
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
  addWeightOnlyUnit(std::move(unit), n);
  return true;
}

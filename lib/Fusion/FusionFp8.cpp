//===- FusionFp8.cpp - FP8 Conv and GEMM units ----------------------------===//
//
// NVIDIA Model Optimizer's FP8 recipe puts per-tensor E4M3 Q/DQ on both
// inputs of every Conv, MatMul and Gemm (the weight stored as an FP8
// initializer behind its DQ):
//
//   %q = onnx.QuantizeLinear(%x, %s, %z) : f8E4M3FN
//   %d = onnx.DequantizeLinear(%q, %s, %z)
//   %w = onnx.DequantizeLinear(%w8, %ws, %wz)       (constant)
//   %y = onnx.MatMul(%d, %w)
//
// TensorRT 10 runs that as one FP8 GEMM (its Q/DQ fusion in FP8, new in
// 10.0): a unit whose MACs count as FP8, with the activation after it
// that TensorRT fuses into GEMMs. FP8 Q/DQ stay opaque
// onnx.QuantizeLinear/DequantizeLinear nodes in qopt's IR, so the rules
// read them here. An FP8 Q/DQ that feeds no such GEMM only converts, in
// float; TensorRT 8.x's parser has no FP8 Q/DQ (only custom TRT_FP8 ops),
// ONNX Runtime's CPU provider and qopt's plan compute them as float
// conversions.
//
//===----------------------------------------------------------------------===//

#include "FusionPlanner.h"

#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpNames.h"

using namespace qopt;
using namespace qopt::fusion;

namespace {

bool isFloat8Quantize(const Node &n) {
  return n.isa(ops::QuantizeLinear) && n.getNumResults() == 1 &&
         isFloat8Kind(n.getResult()->getType()->getStorageKind());
}

bool isFloat8Dequantize(const Node &n) {
  return n.isa(ops::DequantizeLinear) && n.getNumOperands() >= 1 &&
         n.getOperand(0) &&
         isFloat8Kind(n.getOperand(0)->getType()->getStorageKind());
}

/// The FP8 DQ that produces `v`, or null.
Node *float8Dequantize(const Value *v) {
  Node *p = v ? v->getDefiningNode() : nullptr;
  return p && isFloat8Dequantize(*p) ? p : nullptr;
}

/// A Conv, MatMul or Gemm whose data input and weight both come from FP8
/// DQs.
bool isFp8Gemm(const Node &n) {
  if (!(n.isa(ops::Conv) || n.isa(ops::MatMul) || n.isa(ops::Gemm)) ||
      n.getNumOperands() < 2)
    return false;
  return float8Dequantize(n.getOperand(0)) && float8Dequantize(n.getOperand(1));
}

/// Whether every reader of `n`'s result is an FP8 GEMM (through an FP8 DQ
/// for a Q).
bool feedsOnlyFp8Gemms(const Node &n) {
  const Value *v = n.getResult();
  if (v->isGraphOutput() || !v->hasUses())
    return false;
  for (const Use &u : v->getUses()) {
    if (!u.user)
      return false;
    bool ok = isFloat8Quantize(n)
                  ? isFloat8Dequantize(*u.user) && feedsOnlyFp8Gemms(*u.user)
                  : isFp8Gemm(*u.user);
    if (!ok)
      return false;
  }
  return true;
}

} // namespace

bool Planner::tryFp8(Node &n) {
  if (isFloat8Quantize(n) || isFloat8Dequantize(n)) {
    if (rules.fp8Gemm && feedsOnlyFp8Gemms(n))
      return true; // placed with the GEMM that reads it
    FloatCause c;
    if (rules.name == "trt" && !rules.fp8Gemm) {
      c.reason = "TensorRT " + rules.version.str() +
                 "'s ONNX parser has no FP8 Q/DQ (8.x took FP8 only as "
                 "custom TRT_FP8 ops; FP8 Q/DQ came in TensorRT 10.0)";
      c.fixInModel = "build with TensorRT 10, or quantize to INT8";
    } else if (rules.fp8Gemm) {
      c.reason = rules.title.str() +
                 " runs FP8 in Conv and GEMM layers whose inputs both have "
                 "FP8 Q/DQ: this one only converts";
      c.fixInModel = "FP8 Q/DQ on both inputs of a Conv/MatMul/Gemm, or none";
    } else {
      c.reason = rules.title.str() +
                 " computes FP8 Q/DQ as float conversions (no FP8 kernels)";
      c.fixInModel = "none: FP8 is for GPUs with FP8 tensor cores";
    }
    markFloat(n, std::move(c));
    return true;
  }
  if (!rules.fp8Gemm || !isFp8Gemm(n))
    return false;
  FusionUnit unit;
  unit.kind = "fp8 " + n.getOpType().lower();
  unit.fp8 = true;
  unit.members.push_back(&n);
  unit.macs = countMacs(n);
  for (unsigned i = 0; i < 2; ++i) {
    Node *dq = float8Dequantize(n.getOperand(i));
    unit.absorbed.push_back(dq);
    if (Node *q = dq->getOperand(0)->getDefiningNode();
        q && isFloat8Quantize(*q))
      unit.absorbed.push_back(q);
    unit.inputs.push_back({n.getOperand(i), nullptr});
  }
  // An activation the backend fuses into a GEMM (Relu, Clip, ...) joins,
  // as it joins an INT8 one.
  Value *out = n.getResult();
  while (out->hasOneUse() && !out->isGraphOutput()) {
    Node *user = out->getUses().front().user;
    const OpRule *r = user ? rules.lookup(user->getOp()) : nullptr;
    if (!r || !r->epilogue || user->getNumResults() != 1 ||
        user->getOperand(0) != out)
      break;
    unit.members.push_back(user);
    out = user->getResult();
  }
  unit.outputs.push_back({out, nullptr});
  addUnit(std::move(unit));
  return true;
}

//===- FusionFp8.cpp - FP8 Conv and GEMM units ----------------------------===//
//
// NVIDIA Model Optimizer's FP8 recipe puts per-tensor E4M3 Q/DQ on both
// inputs of every Conv, MatMul and Gemm (the weight stored as an FP8
// initializer behind its DQ):
//
//   %q = q.quantize(%x) : !quant.uniform<f8E4M3FN:f32, s>
//   %d = q.dequantize(%q)
//   %w = q.dequantize(%w8)                           (constant)
//   %y = onnx.MatMul(%d, %w)
//
// TensorRT 10 runs that as one FP8 GEMM (its Q/DQ fusion in FP8, new in
// 10.0): a unit whose MACs count as FP8, with the activation after it
// that TensorRT fuses into GEMMs. The INT8 rules and the placement passes
// leave minifloat Q/DQ alone (isMinifloatQdq), so these rules read them
// here, typed or, with a nonzero zero point, as onnx.QuantizeLinear/
// DequantizeLinear. An FP8 Q/DQ that feeds no such GEMM only converts, in
// float; TensorRT 8.x's parser has no FP8 Q/DQ (only custom TRT_FP8 ops),
// ONNX Runtime's CPU provider and qopt's plan compute them as float
// conversions.
//
// Attention with FP8 Q/DQ on both inputs of the first batched MatMul, on
// the Softmax's output and on V (Model Optimizer's FP8 MHA placement) is
// one fused FP8 attention kernel in TensorRT 10 (the "Fused Attention"
// section of its documentation; 10.6 added it on Ada GPUs): one unit from
// the first MatMul through the second, the scale, mask and Softmax inside.
// The sequence and head-size limits of the fused kernels depend on the GPU
// (10.6 on Ada: sequences up to 3072, heads up to 64) and are not modelled.
//
//===----------------------------------------------------------------------===//

#include "FusionPlanner.h"

#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Passes/QdqUtils.h"

using namespace qopt;
using namespace qopt::fusion;

namespace {

bool isFloat8Quantize(const Node &n) {
  return (n.isa(ops::QQuantize) || n.isa(ops::QuantizeLinear)) &&
         n.getNumResults() == 1 &&
         isFloat8Kind(n.getResult()->getType()->getStorageKind());
}

bool isFloat8Dequantize(const Node &n) {
  return (n.isa(ops::QDequantize) || n.isa(ops::DequantizeLinear)) &&
         n.getNumOperands() >= 1 && n.getOperand(0) &&
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

/// The FP8 DQ of an activation (not a constant) that produces `v`.
static Node *activationDequantize(const Value *v) {
  Node *dq = float8Dequantize(v);
  return dq && !isConstantValue(dq->getOperand(0)) ? dq : nullptr;
}

bool Planner::tryFp8Attention(Node &bmm1) {
  if (!rules.fp8Gemm || !bmm1.isa(ops::MatMul) || bmm1.getNumOperands() != 2)
    return false;
  Node *qdq = activationDequantize(bmm1.getOperand(0));
  Node *kdq = activationDequantize(bmm1.getOperand(1));
  std::optional<AttentionScores> scores =
      qdq && kdq ? matchAttentionScores(bmm1) : std::nullopt;
  if (!scores)
    return false;
  // Softmax -> FP8 Q -> FP8 DQ -> the second MatMul, V through an FP8 DQ.
  Node *q = soleUser(scores->softmax->getResult());
  Node *dq = q && isFloat8Quantize(*q) ? soleUser(q->getResult()) : nullptr;
  Node *bmm2 =
      dq && isFloat8Dequantize(*dq) ? soleUser(dq->getResult()) : nullptr;
  Node *vdq = bmm2 && bmm2->isa(ops::MatMul) && bmm2->getNumOperands() == 2 &&
                      bmm2->getOperand(0) == dq->getResult()
                  ? activationDequantize(bmm2->getOperand(1))
                  : nullptr;
  if (!vdq)
    return false;
  FusionUnit unit;
  unit.kind = "fp8 attention";
  unit.fp8 = true;
  unit.members = scores->members;
  unit.members.push_back(bmm2);
  unit.macs = countMacs(bmm1) + countMacs(*bmm2);
  // Each FP8 input's DQ (and the Q before it) runs in the kernel, and so do
  // the Softmax's Q/DQ.
  for (Node *in : {qdq, kdq, vdq}) {
    unit.absorbed.push_back(in);
    if (Node *inQ = in->getOperand(0)->getDefiningNode();
        inQ && isFloat8Quantize(*inQ))
      unit.absorbed.push_back(inQ);
  }
  unit.absorbed.push_back(q);
  unit.absorbed.push_back(dq);
  unit.inputs.push_back({bmm1.getOperand(0), nullptr});
  unit.inputs.push_back({bmm1.getOperand(1), nullptr});
  if (scores->maskInput)
    unit.inputs.push_back({scores->maskInput, nullptr});
  unit.inputs.push_back({bmm2->getOperand(1), nullptr});
  unit.outputs.push_back({bmm2->getResult(), nullptr});
  addUnit(std::move(unit));
  return true;
}

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
  if (tryFp8Attention(n))
    return true;
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
  Value *out = absorbGemmEpilogue(unit, n.getResult());
  unit.outputs.push_back({out, nullptr});
  addUnit(std::move(unit));
  return true;
}

Value *Planner::absorbGemmEpilogue(FusionUnit &unit, Value *out) {
  // A constant bias Add right after it (MatMul + bias, as exporters write
  // a Linear layer), then an activation the backend fuses into a GEMM
  // (Relu, Clip, ..., GELU's Erf chain), join, as they join an INT8 one.
  if (Node *add = soleUser(out);
      add && add->isa(ops::Add) && add->getNumOperands() == 2 &&
      isConstantValue(add->getOperand(add->getOperand(0) == out ? 1 : 0))) {
    unit.members.push_back(add);
    out = add->getResult();
  }
  while (!out->isGraphOutput()) {
    if (rules.geluEpilogue)
      if (std::vector<Node *> gelu = matchErfGelu(out); !gelu.empty()) {
        unit.members.insert(unit.members.end(), gelu.begin(), gelu.end());
        out = gelu.back()->getResult();
        continue;
      }
    if (!out->hasOneUse())
      break;
    Node *user = out->getUses().front().user;
    const OpRule *r = user ? rules.lookup(user->getOp()) : nullptr;
    if (!r || !r->epilogue || user->getNumResults() != 1 ||
        user->getOperand(0) != out)
      break;
    unit.members.push_back(user);
    out = user->getResult();
  }
  return out;
}

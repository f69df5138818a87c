//===- FusionDynamic.cpp - Dynamic quantization as INT8 units -------------===//
//
// ONNX Runtime's quantize_dynamic writes each MatMul with a constant weight
// as
//
//   %q, %s, %z = onnx.DynamicQuantizeLinear(%x)    "dynamic-quantize" unit
//   %acc = onnx.MatMulInteger(%q, %W, %z, %wz)     "matmul" unit: the
//   %f = onnx.Cast(%acc) {to = FLOAT}                integer product, its
//   %p = onnx.Mul(%s, %ws)                           scale to float and an
//   %y = onnx.Mul(%f, %p)                            optional bias, one
//   [%y2 = onnx.Add(%y, %bias)]                      kernel
//
// (ConvInteger likewise), and ONNX Runtime's optimizer runs the chain as
// MatMulIntegerToFloat (MLAS's u8 x s8 GEMM with the scale in its
// epilogue); com.microsoft DynamicQuantizeMatMul and MatMulIntegerToFloat
// are that kernel already. Where the backend has dynamic quantization these
// are units and their MACs INT8; elsewhere they run in float, and the
// reason says so (TensorRT's Q/DQ take constant scales only).
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

bool isDynamicOp(const Node &n) {
  return n.isa(ops::DynamicQuantizeLinear) || n.isa(ops::MatMulInteger) ||
         n.isa(ops::ConvInteger) || n.isa(ops::MsDynamicQuantizeMatMul) ||
         n.isa(ops::MsMatMulIntegerToFloat);
}

} // namespace

bool Planner::tryDynamic(Node &n) {
  if (!isDynamicOp(n))
    return false;
  if (!rules.dynamicQuantization) {
    FloatCause c;
    if (rules.name == "trt") {
      c.reason =
          "TensorRT has no dynamic quantization: " + n.getOpType().str() +
          " takes scales computed at run time, TensorRT's Q/DQ "
          "constant ones";
      c.fixInModel = "calibrate and export static Q/DQ (constant scales) "
                     "for TensorRT's INT8";
    } else {
      c.reason = rules.title.str() + " has no INT8 kernel for " +
                 n.getOpType().str() + " (dynamic quantization)";
      c.fixInModel = "export static Q/DQ (constant scales)";
    }
    markFloat(n, std::move(c));
    return true;
  }
  FusionUnit unit;
  unit.members.push_back(&n);
  for (unsigned i = 0; i < n.getNumOperands(); ++i)
    if (const Value *v = n.getOperand(i); v && !isConstantValue(v))
      unit.inputs.push_back({v, nullptr});
  if (n.isa(ops::DynamicQuantizeLinear)) {
    unit.kind = "dynamic-quantize";
    for (unsigned r = 0; r < n.getNumResults(); ++r)
      unit.outputs.push_back({n.getResult(r), nullptr});
    addUnit(std::move(unit));
    return true;
  }
  unit.kind = n.isa(ops::ConvInteger) ? "conv" : "matmul";
  unit.macs = countMacs(n);
  unit.dynamicInt8 = true;
  Value *out = n.getResult();
  // The integer result scaled to float: Cast -> Mul by the scale product
  // (a Mul of two scalars, itself part of the kernel) -> optional bias Add.
  if (n.isa(ops::MatMulInteger) || n.isa(ops::ConvInteger))
    if (Node *cast = getSoleUserOfKind(out, ops::Cast))
      if (Node *mul = getSoleUserOfKind(cast->getResult(), ops::Mul)) {
        Value *scale = getOtherOperand(*mul, cast->getResult());
        Node *product = scale ? scale->getDefiningNode() : nullptr;
        if (product && product->isa(ops::Mul) && scale->hasOneUse()) {
          for (Node *m : {cast, mul, product}) {
            unit.members.push_back(m);
            if (floatNodes.erase(m))
              llvm::erase_value(floatOrder, m);
          }
          out = mul->getResult();
          if (Node *add = getSoleUserOfKind(out, ops::Add))
            if (Value *bias = getOtherOperand(*add, out);
                bias && isConstantValue(bias)) {
              unit.members.push_back(add);
              out = add->getResult();
            }
        }
      }
  if (rules.dynamicMatMulToFloatOnly) {
    const Value *w = n.getNumOperands() > 1 ? n.getOperand(1) : nullptr;
    const DenseElements *wData = w ? getConstantData(w) : nullptr;
    std::string why;
    if (n.isa(ops::ConvInteger))
      why = "it has no dynamic ConvInteger kernel (its dynamic MatMuls run "
            "as int8 gemm steps)";
    else if (n.isa(ops::MatMulInteger) && out == n.getResult())
      why = "it runs MatMulInteger only with its int32 result scaled to "
            "float (Cast -> Mul by a_scale x b_scale)";
    else if (!wData || wData->getDims().size() != 2)
      why = "its dynamic int8 gemm step takes a constant 2-D weight";
    if (!why.empty()) {
      // The chain's other nodes were taken above: they stay float with it.
      FloatCause c;
      c.reason = rules.title.str() + ": " + why;
      c.fixInModel = "export static Q/DQ (constant scales), or "
                     "quantize_dynamic's MatMul form";
      for (Node *m : unit.members)
        markFloat(*m, c);
      return true;
    }
  }
  unit.outputs.push_back({out, nullptr});
  addUnit(std::move(unit));
  return true;
}

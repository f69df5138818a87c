//===- ScaleAnalysis.cpp - Quantization parameters of every tensor --------===//

#include "qopt/Passes/ScaleAnalysis.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"

using namespace qopt;

AnalysisKey ScaleAnalysis::Key;

/// Ops whose outputs hold a subset/rearrangement of input 0's elements.
static bool movesDataOnly(const Node &n) {
  static const char *const kOps[] = {
      "onnx.Reshape", "onnx.Flatten",      "onnx.Transpose",
      "onnx.Squeeze", "onnx.Unsqueeze",    "onnx.Slice",
      "onnx.Split",   "onnx.Gather",       "onnx.Identity",
      "onnx.MaxPool", "onnx.DepthToSpace", "onnx.SpaceToDepth"};
  for (const char *op : kOps)
    if (n.getOp() == op)
      return true;
  if (n.isa("onnx.Resize")) {
    const Attribute *mode = n.getAttr("mode");
    return !mode ||
           (mode->isString() && *mode->getIf<std::string>() == "nearest");
  }
  if (n.isa("onnx.Pad")) {
    const Attribute *mode = n.getAttr("mode");
    bool constantMode = !mode || (mode->isString() &&
                                  *mode->getIf<std::string>() == "constant");
    // Only the default pad value 0, which every zero point represents.
    return constantMode && (n.getNumOperands() < 3 || !n.getOperand(2));
  }
  return false;
}

ScaleAnalysis::Result ScaleAnalysis::run(Graph &g, AnalysisManager &) {
  Result result;
  result.graph = &g;
  auto note = [&](const Value *v, ScaleInfo si) { result.info[v] = si; };
  for (const Value *in : g.getInputs())
    if (const QuantType *q = in->getType()->getQuantType())
      note(in, {q, in});
  for (const Node &n : g.getNodes()) {
    // Values stored quantized carry their own parameters.
    bool anyQuantResult = false;
    for (const Value *r : n.getResults())
      if (const QuantType *q = r->getType()->getQuantType()) {
        note(r, {q, r});
        anyQuantResult = true;
      }
    if (anyQuantResult || n.getNumOperands() == 0)
      continue;
    if (n.isa(ops::Dequantize)) {
      if (const ScaleInfo *si = result.lookup(n.getOperand(0)))
        note(n.getResult(), *si);
      continue;
    }
    if (movesDataOnly(n) && n.getOperand(0)) {
      const ScaleInfo *si = result.lookup(n.getOperand(0));
      if (!si || si->quant->isPerAxis())
        continue;
      ScaleInfo copy = *si;
      for (const Value *r : n.getResults())
        if (!r->isAbsent())
          note(r, copy);
      continue;
    }
    if (n.isa("onnx.Concat")) {
      const ScaleInfo *first = nullptr;
      bool same = true;
      for (const Value *operand : n.getOperands()) {
        const ScaleInfo *si = operand ? result.lookup(operand) : nullptr;
        if (!si || si->quant->isPerAxis()) {
          same = false;
          break;
        }
        if (!first)
          first = si;
        else
          same &= si->quant->hasSameParams(first->quant) &&
                  si->quant->getStorageKind() == first->quant->getStorageKind();
      }
      if (same && first)
        note(n.getResult(), *first);
    }
  }
  return result;
}

void ScaleAnalysis::Result::print(llvm::raw_ostream &os) const {
  auto printOne = [&](const Value *v) {
    const ScaleInfo *si = lookup(v);
    if (!si)
      return;
    os << "  " << formatValueName(v->getName()) << ": "
       << typeToString(si->quant);
    if (si->source != v)
      os << " (from " << formatValueName(si->source->getName()) << ")";
    os << "\n";
  };
  for (const Value *in : graph->getInputs())
    printOne(in);
  for (const Node &n : graph->getNodes())
    for (const Value *r : n.getResults())
      printOne(r);
}

//===- ModelSummary.cpp - One-screen overview of a model ------------------===//

#include "qopt/IR/ModelSummary.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/Support/Error.h"

#include <map>

using namespace qopt;

void qopt::printModelSummary(const Model &model, llvm::raw_ostream &os) {
  const Graph &g = model.getGraph();
  std::map<std::string, unsigned> opCounts;
  unsigned initializers = 0, perTensor = 0, perAxis = 0;
  std::map<std::string, unsigned> storage;
  auto noteType = [&](const TensorType *t) {
    if (const QuantType *q = t->getQuantType()) {
      (q->isPerAxis() ? perAxis : perTensor)++;
      storage[getElementKindName(q->getStorageKind()).str()]++;
    }
  };
  for (const Value *in : g.getInputs())
    noteType(in->getType());
  for (const Node &n : g.getNodes()) {
    if (n.isa(ops::Constant) && n.getName().empty()) {
      ++initializers;
    } else {
      opCounts[n.getOp().str()]++;
    }
    for (const Value *r : n.getResults())
      noteType(r->getType());
  }
  os << "graph @" << toPrintableLine(g.getName()) << ": " << g.getNumInputs()
     << " inputs, " << g.getNumOutputs() << " outputs, "
     << (g.getNumNodes() - initializers) << " nodes, " << initializers
     << " initializers; opset " << model.getDefaultOpsetVersion() << "\n";
  os << "  ops:";
  for (const auto &[op, count] : opCounts)
    os << " " << op << "=" << count;
  os << "\n  quantized tensors: " << perTensor << " per-tensor, " << perAxis
     << " per-axis";
  if (!storage.empty()) {
    os << " (";
    bool first = true;
    for (const auto &[kind, count] : storage) {
      os << (first ? "" : ", ") << kind << " " << count;
      first = false;
    }
    os << ")";
  }
  unsigned opaqueQdq =
      opCounts["onnx.QuantizeLinear"] + opCounts["onnx.DequantizeLinear"];
  os << "\n  Q/DQ kept as plain ONNX ops (non-constant or disagreeing "
        "parameters): "
     << opaqueQdq << "\n";
}

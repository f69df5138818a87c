//===- OnnxImportFold.cpp - Constant chains folded at import --------------===//
//
// The importer's first stage: nodes that read nothing but constants are
// emitted, folded by the op table's fold hooks (qopt/IR/ConstantFolding.h)
// and erased, so the Q/DQ typing after it sees their results as constants.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporterImpl.h"
#include "qopt/IR/ConstantFolding.h"
#include "qopt/IR/OpDefinition.h"

using namespace qopt;
using namespace qopt::onnximport;

/// Nodes that read nothing but constants (exporters' Identity on shared
/// initializers, Cast/Reshape/Unsqueeze of constants, small constant math)
/// are emitted first and folded by the op table's fold hooks: their results
/// become constants like initializers, so a Q/DQ whose zero point an
/// Identity reads is a q.quantize/q.dequantize with typed parameters.
/// Initializers that are graph inputs (overridable) are not constants here.
llvm::Error Importer::foldConstantNodes() {
  const onnx::GraphProto &g = proto.graph();
  Graph &graph = model->getGraph();
  for (int i : order) {
    const onnx::NodeProto &n = g.node(i);
    if (!isDefaultDomain(n.domain()) || !captureIds[i].empty())
      continue;
    const OpDef *def = lookupOpDef("onnx." + n.op_type());
    if (!def || !def->fold)
      continue;
    llvm::ArrayRef<NameId> ins = inputsOf(i), outs = outputsOf(i);
    if (outs.size() == 1 && outs[0] != kNoName && constantNodes[outs[0]])
      continue; // a Constant with a tensor is a constant already
    bool constantInputs = llvm::all_of(ins, [&](NameId id) {
      return id == kNoName ||
             (constantData(id) && !isInitializerInput.test(id));
    });
    if (!constantInputs || outs.empty() ||
        llvm::any_of(outs, [](NameId id) { return id == kNoName; }))
      continue;
    for (NameId id : ins)
      if (id != kNoName && constantNodes[id] && !values[id] &&
          !emitted.test(producers[id]))
        if (auto c = emitNode(producers[id]); !c)
          return c.takeError();
    auto node = emitNode(i);
    if (!node)
      return node.takeError();
    // Folded or not, the node goes again: a node that does not fold is
    // emitted in its turn, after the Q/DQ types are known (its result may
    // carry a quantized type), and reads its constants then.
    auto results = foldNode(**node);
    llvm::SmallVector<Node *, 4> operandNodes;
    for (Value *v : (*node)->getOperands())
      if (v && v->getDefiningNode() &&
          !llvm::is_contained(operandNodes, v->getDefiningNode()))
        operandNodes.push_back(v->getDefiningNode());
    typesAsInferred.erase(*node);
    (*node)->dropAllOperands();
    graph.eraseNode(*node);
    for (size_t k = 0; k < outs.size(); ++k) {
      values[outs[k]] = nullptr;
      if (!results)
        continue;
      constantCache[outs[k]] = (*results)[k];
      foldedValues.set(outs[k]);
    }
    if (!results)
      emitted.reset(i);
    // Constants nothing else reads yet are not emitted: an initializer,
    // folded value or Constant node is emitted again when a later node
    // reads it.
    for (Node *c : operandNodes) {
      if (c->getResult()->hasUses())
        continue;
      auto id =
          nameIds.find(llvm::CachedHashStringRef(c->getResult()->getName()));
      if (id != nameIds.end() && values[id->second] == c->getResult()) {
        values[id->second] = nullptr;
        readOnlyByFolds.set(id->second);
      }
      typesAsInferred.erase(c);
      graph.eraseNode(c);
    }
  }
  return llvm::Error::success();
}

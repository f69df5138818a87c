//===- EnsureUniqueQdq.cpp - One DQ per consumer, one Q per DQ ------------===//
//
// Exact. Backends form node units around one consumer: ONNX Runtime's QDQ
// selectors take a DQ only when it feeds nothing else, and a Q read by
// several DQs cannot be rewritten for one of them alone (its int8->uint8
// conversion is blocked). Duplicating is free at run time once units fuse.
//
// ensure-unique-dq: a q.dequantize with several uses (operands of nodes,
// graph outputs) gets a copy for every use but the first; a graph output
// keeps the original.
//
//   %d = q.dequantize(%x)              %d  = q.dequantize(%x)
//   %a = onnx.Conv(%d, %w)      =>     %d1 = q.dequantize(%x)
//   %b = onnx.Add(%d, %y)              %a  = onnx.Conv(%d1, %w)
//   return %d                          %d2 = q.dequantize(%x)
//                                      %b  = onnx.Add(%d2, %y)
//                                      return %d
//
// ensure-unique-q: a q.quantize whose result feeds several q.dequantize
// nodes gets a copy per DQ but the first (only when every use is a DQ: a Q
// that is also a graph output or feeds an integer op stays shared).
//
//   %q = q.quantize(%x)                %q  = q.quantize(%x)
//   %d1 = q.dequantize(%q)      =>     %d1 = q.dequantize(%q)
//   %d2 = q.dequantize(%q)             %q1 = q.quantize(%x)
//                                      %d2 = q.dequantize(%q1)
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/Passes/QdqUtils.h"

using namespace qopt;

/// "<node>_dup<i>" so that engine logs and Netron tell the copies apart.
static std::string uniqueCopyName(const Node &n, size_t i) {
  return n.getName().empty() ? std::string()
                             : n.getName().str() + "_dup" + std::to_string(i);
}

PreservedAnalyses EnsureUniqueDequantizePass::run(Graph &g, AnalysisManager &) {
  bool changed = false;
  PatternRewriter r(g);
  std::vector<Node *> dqs;
  for (Node &n : g.getNodes())
    if (n.isa(ops::QDequantize) && n.getResult()->getNumUses() > 1)
      dqs.push_back(&n);
  for (Node *dq : dqs) {
    Value *out = dq->getResult();
    // The original stays with the graph output if there is one, else with
    // the first node that reads it.
    auto users = getUsers(out);
    for (size_t i = out->isGraphOutput() ? 0 : 1; i < users.size(); ++i) {
      auto [user, index] = users[i];
      r.setRoot(dq);
      r.setInsertionPoint(user);
      Node *copy =
          createDequantize(r, dq->getOperand(0), dq, uniqueCopyName(*dq, i));
      user->setOperand(index, copy->getResult());
      changed = true;
    }
  }
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

PreservedAnalyses EnsureUniqueQuantizePass::run(Graph &g, AnalysisManager &) {
  bool changed = false;
  PatternRewriter r(g);
  std::vector<Node *> qs;
  for (Node &n : g.getNodes())
    if (n.isa(ops::QQuantize) && n.getResult()->getNumUses() > 1 &&
        allUsersAre(n.getResult(), ops::QDequantize))
      qs.push_back(&n);
  for (Node *q : qs) {
    auto users = getUsers(q->getResult());
    for (size_t i = 1; i < users.size(); ++i) {
      auto [dq, index] = users[i];
      r.setRoot(q);
      r.setInsertionPoint(dq);
      Node *copy = createQuantize(r, q->getOperand(0),
                                  getStoredQuantType(q->getResult()), q,
                                  uniqueCopyName(*q, i));
      dq->setOperand(index, copy->getResult());
      changed = true;
    }
  }
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

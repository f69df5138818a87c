//===- ScaleAnalysis.cpp - Quantization grids of every tensor -------------===//

#include "qopt/Passes/ScaleAnalysis.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"

#include "llvm/ADT/DenseSet.h"

using namespace qopt;

AnalysisKey ScaleAnalysis::Key;

namespace {

/// Params text without the storage/expressed prefix noise, for reasons.
std::string gridText(const QuantType *q) { return typeToString(q); }

/// The message of an op-table error without the node prefix (the printout
/// already names the value).
std::string reasonOf(llvm::Error err, const Node &n) {
  std::string msg = llvm::toString(std::move(err));
  std::string prefix = n.describe() + ": ";
  if (llvm::StringRef(msg).startswith(prefix))
    msg = msg.substr(prefix.size());
  return msg;
}

bool sameGrid(const QuantType *a, const QuantType *b) {
  return a == b ||
         (a->hasSameParams(b) && a->getStorageKind() == b->getStorageKind());
}

class Propagation {
public:
  explicit Propagation(ScaleAnalysis::Result &r) : r(r) {}

  void forward(const Graph &g) {
    for (const Value *in : g.getInputs())
      if (const QuantType *q = in->getType()->getQuantType())
        r.forward[in] = {q, in};
    for (const Node &n : g.getNodes())
      forwardNode(n);
  }

  void backward(const Graph &g) {
    std::vector<const Node *> order;
    for (const Node &n : g.getNodes())
      order.push_back(&n);
    for (auto it = order.rbegin(); it != order.rend(); ++it)
      backwardNode(**it);
  }

private:
  void forwardNode(const Node &n) {
    bool stored = false;
    for (const Value *res : n.getResults())
      if (const QuantType *q = res->getType()->getQuantType()) {
        r.forward[res] = {q, res};
        stored = true;
      }
    if (stored)
      return;
    if (n.isa(ops::QDequantize)) {
      // Copied before inserting: insertion may move the map's entries.
      if (const ScaleInfo *si = r.lookup(n.getOperand(0))) {
        ScaleInfo copy = *si;
        r.forward[n.getResult()] = copy;
      }
      return;
    }
    bool anyGrid = false;
    for (const Value *v : n.getOperands())
      anyGrid |= v && r.lookup(v);
    if (!anyGrid)
      return;
    const OpDef *def = n.getOpDef();
    std::string why;
    if (!def)
      why = n.getOp().str() + " is opaque to qopt";
    else if (!def->hasTrait(OpTrait::DataMovement) &&
             !def->hasTrait(OpTrait::Monotonic))
      why = n.getOp().str() + " computes new values";
    else
      why = passOn(n, *def);
    if (why.empty())
      return;
    for (const Value *res : n.getResults())
      if (!res->isAbsent() && !r.lookup(res))
        r.stops[res] = why;
  }

  /// Passes the data operands' grid to the data results; returns the
  /// reason when it cannot.
  std::string passOn(const Node &n, const OpDef &def) {
    llvm::SmallVector<unsigned, 4> data = getDataOperands(n);
    const ScaleInfo *first = nullptr;
    for (unsigned i : data) {
      const ScaleInfo *si =
          n.getOperand(i) ? r.lookup(n.getOperand(i)) : nullptr;
      if (!si)
        return "input " + std::to_string(i) + " has no grid";
      if (!first) {
        first = si;
      } else if (!sameGrid(si->quant, first->quant)) {
        return "inputs are on different grids: input " + std::to_string(i) +
               " on " + gridText(si->quant) + ", input " +
               std::to_string(data.front()) + " on " + gridText(first->quant);
      }
    }
    // Copied: inserting results below may move the map's entries.
    const ScaleInfo grid = *first;
    first = nullptr;
    const QuantType *q = grid.quant;
    std::string blocked = whyGridCannotCross(n, q);
    if (!blocked.empty())
      return blocked;
    const SignatureSlot *dataSlot = def.operandSlot(data.front());
    std::string why;
    for (unsigned i = 0; i < n.getNumResults(); ++i) {
      const Value *res = n.getResult(i);
      const SignatureSlot *slot = def.resultSlot(i);
      if (res->isAbsent() || !slot || slot->typeVar != dataSlot->typeVar)
        continue; // not the data (MaxPool's Indices)
      const QuantType *out = q;
      if (q->isPerAxis()) {
        auto axis = def.remapQuantAxis(n, q->getAxis(), i);
        if (!axis) {
          why = reasonOf(axis.takeError(), n);
          r.stops[res] = why;
          continue;
        }
        out = quant::withAxis(n.getGraph()->getContext(), q, *axis);
      }
      r.forward[res] = {out, grid.source};
    }
    return {};
  }

  /// A value its consumers would quantize differently gets no backward
  /// grid, and (visited in reverse order, consumers first) passes none on.
  void noteBackward(const Value *v, ScaleInfo si) {
    if (conflicted.count(v))
      return;
    auto [it, inserted] = r.backward.try_emplace(v, si);
    if (!inserted && !sameGrid(it->second.quant, si.quant)) {
      r.backward.erase(it);
      conflicted.insert(v);
    }
  }

  void backwardNode(const Node &n) {
    if (n.isa(ops::QQuantize)) {
      noteBackward(n.getOperand(0),
                   {n.getResult()->getType()->getQuantType(), n.getResult()});
      return;
    }
    const OpDef *def = n.getOpDef();
    if (!def || !(def->hasTrait(OpTrait::DataMovement) ||
                  def->hasTrait(OpTrait::Monotonic)))
      return;
    llvm::SmallVector<unsigned, 4> data = getDataOperands(n);
    if (data.empty())
      return;
    const SignatureSlot *dataSlot = def->operandSlot(data.front());
    const ScaleInfo *grid = nullptr;
    for (unsigned i = 0; i < n.getNumResults(); ++i) {
      const Value *res = n.getResult(i);
      const SignatureSlot *slot = def->resultSlot(i);
      if (res->isAbsent() || !slot || slot->typeVar != dataSlot->typeVar)
        continue;
      const ScaleInfo *si = r.lookupBackward(res);
      // Every data result must be quantized the same way, per tensor.
      if (!si || si->quant->isPerAxis() ||
          (grid && !sameGrid(grid->quant, si->quant)))
        return;
      grid = si;
    }
    if (!grid)
      return;
    const ScaleInfo copy = *grid; // noteBackward may move the map's entries
    for (unsigned i : data)
      if (const Value *v = n.getOperand(i))
        if (!v->getType()->isQuantized())
          noteBackward(v, copy);
  }

  ScaleAnalysis::Result &r;
  llvm::DenseSet<const Value *> conflicted;
};

} // namespace

ScaleAnalysis::Result ScaleAnalysis::run(Graph &g, AnalysisManager &) {
  Result result;
  result.graph = &g;
  Propagation p(result);
  p.forward(g);
  p.backward(g);
  return result;
}

void ScaleAnalysis::Result::print(llvm::raw_ostream &os) const {
  auto printOne = [&](const Value *v) {
    const ScaleInfo *fw = lookup(v);
    const ScaleInfo *bw = lookupBackward(v);
    llvm::StringRef why = whyStopped(v);
    if (!fw && !bw && why.empty())
      return;
    os << "  " << formatValueName(v->getName()) << ":";
    if (fw) {
      os << " " << typeToString(fw->quant);
      if (fw->source != v)
        os << " (from " << formatValueName(fw->source->getName()) << ")";
    } else if (!why.empty()) {
      os << " stops: " << why;
    }
    if (bw)
      os << (fw || !why.empty() ? ";" : "") << " -> " << typeToString(bw->quant)
         << " (into " << formatValueName(bw->source->getName()) << ")";
    os << "\n";
  };
  for (const Value *in : graph->getInputs())
    printOne(in);
  for (const Node &n : graph->getNodes())
    for (const Value *r : n.getResults())
      printOne(r);
}

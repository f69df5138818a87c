//===- FuseTables.cpp - Table steps composed with what feeds them ---------===//
//
// A table step whose operand is the result of another table step (and that
// result has no other reader) looks both up at once: the composition of two
// exact tables is one exact table, over the first step's operand.
//
//   %s = table t1 (%x)            =>   %y = table f (%x)
//   %y = table t2 (%x, %s)               f[v] = t2[v * 256 + t1[v]]
//
//   %s = table t1 (%x)            =>   %y = table f (%x)
//   %y = table t2 (%s)                   f[v] = t2[t1[v]]
//
// The first form is a separately quantized SiLU (x * sigmoid(x), YOLO with
// Q/DQ everywhere): one pass over the tensor through 256 entries instead of
// a pass through 256 and one through 65,536. The bytes are the two steps'.
//
// A one-operand table step that reads an int8 conv step's result alone
// becomes the conv's output table: each output row is looked up while it is
// in cache, not in a pass of its own over the tensor.
//
//   %c = int8 conv (%x)           =>   %y = int8 conv (%x), output table t
//   %y = table t (%c)
//
// So does a two-operand one whose other operand is a tensor of the same
// shape (a residual Add or Mul on int8 operands, each rounded to its own
// grid first, as QAT exports write ResNet's blocks): the conv reads that
// operand too, and runs where the table step was, once both are ready.
//
//   %c = int8 conv (%x)           =>   %y = int8 conv (%x, %s),
//   %y = table t2 (%c, %s)                  pair table p[v * 256 + w] =
//                                             t2[v * 256 + w]
//
//   %y = table t2 (%s, %c)        =>   ... p[v * 256 + w] = t2[w * 256 + v]
//
// A pair table that is a requantizing Add (RequantizedAdd, checked entry by
// entry when lowered) is computed in the conv's vector epilogue instead.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"

#include "llvm/Support/Casting.h"

#include <algorithm>

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

namespace {

/// The one-byte arity-1 table step that writes `id`, if any.
const TableStep *producingTable(const Plan &plan, int id) {
  for (const auto &s : plan.steps) {
    const auto *t = llvm::dyn_cast<TableStep>(s.get());
    if (t && t->getArity() == 1 && t->getResultBytes() == 1 &&
        t->outputs[0] == id)
      return t;
  }
  return nullptr;
}

} // namespace

void codegen::fuseTableChains(Plan &plan) {
  for (size_t i = 0; i < plan.steps.size();) {
    const auto *outer = llvm::dyn_cast<TableStep>(plan.steps[i].get());
    if (!outer || outer->getBroadcast().operand >= 0) {
      ++i;
      continue;
    }
    Readers readers(plan);
    int arity = outer->getArity(), bytes = outer->getResultBytes();
    // The operand an inner table writes (read by nothing else), and for two
    // operands, the other one must be the inner table's operand.
    const TableStep *inner = nullptr;
    int innerAt = -1;
    for (int k = 0; k < arity && !inner; ++k) {
      const TableStep *t = producingTable(plan, outer->inputs[k]);
      if (t && readers.onlyReader(outer->inputs[k], 1) &&
          (arity == 1 || outer->inputs[1 - k] == t->inputs[0])) {
        inner = t;
        innerAt = k;
      }
    }
    if (!inner) {
      ++i;
      continue;
    }
    std::vector<uint8_t> fused(256 * bytes);
    llvm::ArrayRef<uint8_t> t1 = inner->getTable(), t2 = outer->getTable();
    for (size_t v = 0; v < 256; ++v) {
      size_t entry = arity == 1     ? t1[v]
                     : innerAt == 1 ? v << 8 | t1[v]
                                    : size_t(t1[v]) << 8 | v;
      std::copy_n(&t2[entry * bytes], bytes, &fused[v * bytes]);
    }
    auto step = std::make_unique<TableStep>(
        (inner->getName() + "+" + outer->getName()).str(), 1, bytes,
        std::move(fused), outer->getNumElements());
    step->op = inner->op + "+" + outer->op;
    step->inputs = {inner->inputs[0]};
    step->outputs = outer->outputs;
    plan.steps[i] = std::move(step);
    // Drop the inner step; the fused one may start another chain, so it is
    // looked at again.
    for (size_t j = 0; j < i; ++j)
      if (plan.steps[j].get() == inner) {
        plan.steps.erase(plan.steps.begin() + j);
        --i;
        break;
      }
  }
}

namespace {

/// The conv step writing `id` when its int8 result could take a table of
/// what `table` reads: `table` is its one reader, and the table's result
/// has the conv result's layout, shape and byte size.
ConvStep *convFeeding(const Plan &plan, const std::vector<int> &producer,
                      const Readers &readers, const TableStep &table, int id) {
  int at = producer[id];
  auto *conv =
      at < 0 ? nullptr : llvm::dyn_cast<ConvStep>(plan.steps[at].get());
  if (!conv || !readers.onlyReader(id, 1) ||
      conv->getConv().getEpilogue().outputScale == 0)
    return nullptr;
  const PlanTensor &from = plan.tensors[id];
  const PlanTensor &to = plan.tensors[table.outputs[0]];
  if (to.layout != from.layout || to.shape != from.shape ||
      getElementByteSize(to.kind) != 1 ||
      table.getNumElements() != from.numElements())
    return nullptr;
  return conv;
}

} // namespace

void codegen::fuseTablesIntoConvs(Plan &plan) {
  Readers readers(plan);
  std::vector<int> producer = findProducers(plan);
  bool fused = false;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const auto *table = llvm::dyn_cast_or_null<TableStep>(plan.steps[i].get());
    if (!table || table->getResultBytes() != 1 ||
        table->getBroadcast().operand >= 0)
      continue;
    ConvStep *conv = nullptr;
    int convAt = -1, other = -1;
    bool convFirst = true;
    if (table->getArity() == 1) {
      conv = convFeeding(plan, producer, readers, *table, table->inputs[0]);
      convAt = conv ? producer[table->inputs[0]] : -1;
    } else {
      for (int k = 0; k < 2 && !conv; ++k) {
        int id = table->inputs[k], rest = table->inputs[1 - k];
        ConvStep *c = convFeeding(plan, producer, readers, *table, id);
        const PlanTensor &pair = plan.tensors[rest];
        if (!c || rest == id || !c->getConv().getEpilogue().pairTable.empty() ||
            pair.layout != plan.tensors[id].layout ||
            pair.shape != plan.tensors[id].shape ||
            getElementByteSize(pair.kind) != 1)
          continue;
        conv = c;
        convAt = producer[id];
        other = rest;
        convFirst = k == 0;
      }
    }
    if (!conv)
      continue;
    Int8Conv merged = conv->takeConv();
    std::vector<int> inputs = conv->inputs;
    if (other < 0) {
      merged.composeOutputTable(table->getTable());
    } else {
      llvm::ArrayRef<uint8_t> t = table->getTable();
      std::vector<uint8_t> pairs(t.begin(), t.end());
      if (!convFirst)
        for (size_t v = 0; v < 256; ++v)
          for (size_t w = 0; w < 256; ++w)
            pairs[v << 8 | w] = t[w << 8 | v];
      merged.setPairTable(std::move(pairs));
      // Computed in the epilogue where the conv's own table was none.
      if (const auto &add = table->getArithmetic())
        merged.setPairArithmetic(convFirst ? *add : add->swapped());
      inputs.push_back(other);
    }
    auto step = std::make_unique<ConvStep>(
        (conv->getName() + "+" + table->getName()).str(), std::move(merged));
    step->op = conv->op + "+" + table->op;
    step->inputs = std::move(inputs);
    step->outputs = table->outputs;
    // A pair table's conv runs where the table was: its other operand may
    // be computed after the conv. An output table's stays where it was, so
    // that its input is not kept longer.
    int at = other < 0 ? convAt : int(i);
    producer[table->outputs[0]] = at;
    plan.steps[at] = std::move(step);
    plan.steps[at == convAt ? i : convAt].reset();
    fused = true;
  }
  if (fused)
    plan.steps.erase(std::remove(plan.steps.begin(), plan.steps.end(), nullptr),
                     plan.steps.end());
}

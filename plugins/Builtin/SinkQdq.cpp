//===- SinkQdq.cpp - Move Q/DQ through data-movement ops (sink-qdq) -------===//
//
// Exact. Data-movement ops (op table trait DataMovement: Reshape, Flatten,
// Transpose, Squeeze, Unsqueeze, Slice, Split, Gather, Identity, Expand,
// Tile, Pad, Resize in nearest mode, DepthToSpace, SpaceToDepth, Concat) and
// MaxPool only copy or select elements, so they commute with per-tensor
// quantization (MaxPool because scales are > 0). Moving the Q/DQ across
// them lets the integer data flow through, and puts the DQ right before the
// op that computes (where backends fuse it) and the Q right after it.
//
// DQ forward: the op runs on the stored integers, the DQ follows.
//
//   %d = q.dequantize(%q)                 %m = onnx.MaxPool(%q) : i8 grid A
//   %m = onnx.MaxPool(%d)         =>      %d = q.dequantize(%m)
//   %c = onnx.Conv(%m, ...)               %c = onnx.Conv(%d, ...)
//
// Concat moves only when every input comes from a DQ of the same grid.
//
// Q backward: the Q moves before a single-result op whose only use it is.
//
//   %s = onnx.Slice(%x, ...)              %q = q.quantize(%x) : grid B
//   %q = q.quantize(%s) : grid B  =>      %s = onnx.Slice(%q, ...) : grid B
//
// A pure reshape (Reshape, Flatten, Squeeze, Unsqueeze) between a Q and its
// DQs moves above the Q, so that the Q/DQ pair is adjacent (TensorRT and
// ONNX Runtime read `Q -> Squeeze -> DQ` as two half units) -- unless the Q
// quantizes the output of a weighted op, which keeps its Q:
//
//   %q = q.quantize(%x)                   %s = onnx.Squeeze(%x, %axes)
//   %s = onnx.Squeeze(%q, %axes)  =>      %q = q.quantize(%s)
//   %d = q.dequantize(%s)                 %d = q.dequantize(%q)
//
// A DQ read by several consumers moves into each consumer that allows it
// and stays for the others. Per-axis parameters cross when the op table can
// remap their axis (Transpose permutes it; Reshape keeps it when its
// dimension survives; MaxPool does not pool it); otherwise the move is
// refused. Pad's constant value (0 when absent) must lie on the grid and is
// rewritten as the stored integer (per-axis: only an absent value with zero
// points 0); Resize must be in nearest mode, and in tf_crop_and_resize mode
// its extrapolation value must be its own stored integer. The op must accept
// the storage type (MaxPool has no 16-bit form).
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"

using namespace qopt;

namespace {

bool isPureReshape(const Node &n) {
  return n.isa(ops::Reshape) || n.isa(ops::Flatten) || n.isa(ops::Squeeze) ||
         n.isa(ops::Unsqueeze);
}

/// Ops sink-qdq moves Q/DQ across.
bool isMovable(const Node &n) {
  return hasTrait(n, OpTrait::DataMovement) || n.isa(ops::MaxPool);
}

/// The grid each data result of `n` gets when its data operands are on `q`,
/// or an empty vector when `n` cannot carry it (also when the op table does
/// not let the op run on q's storage type: MaxPool has no i16/u16 form).
std::vector<const QuantType *> resultGrids(const Node &n, const QuantType *q) {
  if (!whyGridCannotCross(n, q).empty())
    return {};
  const OpDef *def = n.getOpDef();
  const SignatureSlot *slot =
      def ? def->operandSlot(getDataOperands(n).front()) : nullptr;
  if (!slot || !(slot->allowed & typeSetOf(q->getStorageKind())))
    return {};
  std::vector<const QuantType *> grids(n.getNumResults(), nullptr);
  for (unsigned i = 0; i < n.getNumResults(); ++i) {
    if (!isDataResult(n, i))
      continue;
    auto across = quantTypeAcross(n, q, i);
    if (!across) {
      llvm::consumeError(across.takeError());
      return {};
    }
    grids[i] = *across;
  }
  return grids;
}

/// Clones `n` with `operands`, its data results typed with `grids` (the
/// other results keep their types).
Node *cloneWith(PatternRewriter &r, const Node &n,
                llvm::ArrayRef<Value *> operands,
                llvm::ArrayRef<const QuantType *> grids) {
  std::vector<ResultSpec> results;
  for (unsigned i = 0; i < n.getNumResults(); ++i) {
    const Value *res = n.getResult(i);
    const TensorType *t = res->getType();
    if (i < grids.size() && grids[i])
      t = withElement(t, grids[i]);
    results.push_back({t, "", res->isAbsent()});
  }
  return r.create(n.getOp(), operands, results, n.getAttrs(),
                  n.getName().str());
}

/// Gives `v` the name `name` when no value holds it any more (the value a
/// rewrite replaced has been erased), so moved tensors keep their names.
void takeNameIfFree(Value *v, const std::string &name) {
  if (!name.empty() && !v->isGraphOutput() && !v->getGraph()->lookupValue(name))
    v->setName(name);
}

std::vector<std::string> resultNames(const Node &n) {
  std::vector<std::string> names;
  for (const Value *res : n.getResults())
    names.push_back(res->getName().str());
  return names;
}

/// DQ forward: DQ(x) -> M  =>  M(x) -> DQ.
struct SinkDequantize : RewritePattern {
  SinkDequantize() : RewritePattern("", 1, "sink-dequantize") {}
  bool matchAndRewrite(Node &m, PatternRewriter &r) const override {
    if (!isMovable(m))
      return false;
    llvm::SmallVector<unsigned, 4> data = getDataOperands(m);
    const QuantType *grid = nullptr;
    Node *firstDq = nullptr;
    for (unsigned i : data) {
      Node *dq = getProducer(m.getOperand(i), ops::QDequantize);
      if (!dq)
        return false;
      const QuantType *q = getStoredQuantType(dq->getOperand(0));
      if (grid && q != grid)
        return false;
      grid = q;
      firstDq = firstDq ? firstDq : dq;
    }
    if (!grid)
      return false;
    std::vector<const QuantType *> grids = resultGrids(m, grid);
    if (grids.empty())
      return false;

    r.setRoot(&m);
    r.setInsertionPoint(&m);
    std::vector<Value *> operands(m.getOperands().begin(),
                                  m.getOperands().end());
    for (unsigned i : data)
      operands[i] = m.getOperand(i)->getDefiningNode()->getOperand(0);
    if (!integerOperands(r, m, operands, grid))
      return false;
    Node *moved = cloneWith(r, m, operands, grids);
    std::vector<std::string> names = resultNames(m);
    std::vector<Value *> replacements;
    for (unsigned i = 0; i < m.getNumResults(); ++i) {
      Value *res = moved->getResult(i);
      if (grids[i] && !res->isAbsent())
        res = createDequantize(
                  r, res, firstDq,
                  m.getName().empty()
                      ? std::string()
                      : m.getName().str() + "_dq" +
                            (m.getNumResults() > 1 ? std::to_string(i) : ""))
                  ->getResult();
      replacements.push_back(res);
    }
    r.replaceNode(m, replacements);
    // The integer result takes the op's name; its DQ is "<name>_dq".
    for (unsigned i = 0; i < moved->getNumResults(); ++i) {
      Value *res = moved->getResult(i);
      if (res->isAbsent())
        continue;
      takeNameIfFree(res, names[i]);
      if (replacements[i] != res)
        takeNameIfFree(replacements[i], names[i] + "_dq");
    }
    return true;
  }
};

/// Q backward: M(x) -> Q  =>  Q(x) -> M (single-result M, its only use).
struct HoistQuantize : RewritePattern {
  HoistQuantize() : RewritePattern(ops::QQuantize, 1, "hoist-quantize") {}
  bool matchAndRewrite(Node &q, PatternRewriter &r) const override {
    Node *m = q.getOperand(0)->getDefiningNode();
    if (!m || !isMovable(*m) || isPureReshape(*m) || m->getNumResults() != 1)
      return false;
    Value *mid = m->getResult();
    if (mid->getNumUses() != 1 || mid->isGraphOutput() || mid->isCaptured())
      return false;
    llvm::SmallVector<unsigned, 4> data = getDataOperands(*m);
    if (data.size() != 1)
      return false;
    Value *x = m->getOperand(data.front());
    const QuantType *grid = getStoredQuantType(q.getResult());
    // Per-axis grids would need the inverse axis remap; an input from a DQ
    // is sink-dequantize's case.
    if (grid->isPerAxis() || x->getType()->isQuantized() ||
        getProducer(x, ops::QDequantize))
      return false;
    std::vector<const QuantType *> grids = resultGrids(*m, grid);
    if (grids.empty())
      return false;

    r.setRoot(&q);
    r.setInsertionPoint(m);
    std::vector<Value *> operands(m->getOperands().begin(),
                                  m->getOperands().end());
    if (!integerOperands(r, *m, operands, grid))
      return false;
    Node *hoisted = createQuantize(r, x, grid, &q, q.getName().str());
    operands[data.front()] = hoisted->getResult();
    r.setInsertionPoint(&q);
    Node *moved = cloneWith(r, *m, operands, grids);
    std::string qName = q.getResult()->getName().str();
    std::string mName = mid->getName().str();
    r.replaceNode(q, {moved->getResult()});
    r.eraseNode(*m);
    // The quantized input is "<x>_q"; the moved op's result keeps the name
    // of the Q's result, which its users read.
    takeNameIfFree(moved->getResult(), qName);
    takeNameIfFree(hoisted->getResult(), x->getName().str() + "_q");
    return true;
  }
};

/// Q -> reshape -> DQ  =>  reshape -> Q -> DQ.
struct ReshapeBeforeQuantize : RewritePattern {
  ReshapeBeforeQuantize()
      : RewritePattern(ops::QQuantize, 2, "reshape-before-quantize") {}
  bool matchAndRewrite(Node &q, PatternRewriter &r) const override {
    Value *stored = q.getResult();
    if (stored->getNumUses() != 1 || stored->isGraphOutput())
      return false;
    Node *reshape = stored->getUses().front().user;
    if (!reshape || !isPureReshape(*reshape) ||
        stored->getUses().front().index != 0)
      return false;
    Value *reshaped = reshape->getResult();
    if (!allUsersAre(reshaped, ops::QDequantize))
      return false;
    Node *producer = q.getOperand(0)->getDefiningNode();
    if (producer && hasTrait(*producer, OpTrait::Weighted))
      return false;
    const QuantType *grid = getStoredQuantType(stored);
    const QuantType *after = getStoredQuantType(reshaped);
    if (!after)
      return false;

    r.setRoot(reshape);
    r.setInsertionPoint(reshape);
    std::vector<Value *> operands(reshape->getOperands().begin(),
                                  reshape->getOperands().end());
    operands[0] = q.getOperand(0);
    const Type *floatElem =
        r.getGraph().getContext().getElementType(grid->getExpressedKind());
    Node *floatReshape =
        r.create(reshape->getOp(), operands,
                 {{withElement(reshaped->getType(), floatElem), ""}},
                 reshape->getAttrs(), reshape->getName().str());
    Node *moved = createQuantize(r, floatReshape->getResult(), after, &q,
                                 q.getName().str());
    std::string reshapedName = reshaped->getName().str();
    std::string qName = stored->getName().str();
    r.replaceNode(*reshape, {moved->getResult()});
    r.eraseNode(q);
    takeNameIfFree(floatReshape->getResult(), reshapedName);
    takeNameIfFree(moved->getResult(), qName);
    return true;
  }
};

} // namespace

PreservedAnalyses SinkQdqPass::run(Graph &g, AnalysisManager &) {
  PatternList patterns;
  patterns.push_back(std::make_unique<SinkDequantize>());
  patterns.push_back(std::make_unique<HoistQuantize>());
  patterns.push_back(std::make_unique<ReshapeBeforeQuantize>());
  GreedyRewriteConfig config;
  config.maxIterations = 64;
  GreedyRewriteResult result = applyPatternsGreedily(g, patterns, config);
  return result.changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

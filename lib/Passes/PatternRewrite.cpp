//===- PatternRewrite.cpp - Rewrite patterns and the greedy driver --------===//

#include "qopt/Passes/PatternRewrite.h"
#include "qopt/IR/OpNames.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>

using namespace qopt;

/// What a node is called in value names: its first named result, else its
/// ONNX node name.
static std::string nameOf(const Node &n) {
  for (const Value *r : n.getResults())
    if (!r->isAbsent() && !r->getName().empty())
      return r->getName().str();
  return n.getName().str();
}

void PatternRewriter::setRoot(Node *root) {
  rootName = root ? nameOf(*root) : std::string();
}

std::string PatternRewriter::nameBase() const {
  if (!rootName.empty())
    return rootName;
  return insertionPoint ? nameOf(*insertionPoint) : std::string();
}

Node *PatternRewriter::create(llvm::StringRef op,
                              llvm::ArrayRef<Value *> operands,
                              llvm::ArrayRef<ResultSpec> results,
                              std::vector<NamedAttribute> attrs,
                              std::string name) {
  std::vector<ResultSpec> unique(results.begin(), results.end());
  llvm::StringSet<> taken; // names chosen for earlier results of this node
  std::string opType = op.rsplit('.').second.str();
  if (opType.empty())
    opType = op.str();
  for (ResultSpec &r : unique) {
    if (r.absent)
      continue;
    std::string base = r.name;
    if (base.empty()) {
      std::string root = nameBase();
      base = root.empty() ? opType : root + "." + opType;
    }
    r.name = graph.makeUniqueName(base);
    for (unsigned k = 1; !taken.insert(r.name).second; ++k)
      r.name = graph.makeUniqueName(base + "_" + std::to_string(k));
  }
  Node *n = graph.createNode(op, operands, unique, std::move(attrs),
                             std::move(name), insertionPoint);
  onCreated(*n);
  return n;
}

void PatternRewriter::replaceAllUsesWith(Value *from, Value *to) {
  for (const Use &u : from->getUses())
    if (!u.isGraphOutput())
      onModified(*u.user);
  from->replaceAllUsesWith(to);
  onUsersChanged(*to);
}

bool PatternRewriter::mustKeepName(const Value &v) {
  return v.isGraphInput() || v.isGraphOutput() || v.isCaptured();
}

bool PatternRewriter::replacementNeedsIdentity(const Value &result,
                                               const Value &replacement) {
  return (result.isGraphOutput() || result.isCaptured()) &&
         mustKeepName(replacement);
}

void PatternRewriter::replaceNode(Node &node, llvm::ArrayRef<Value *> values) {
  if (values.size() != node.getNumResults())
    llvm::report_fatal_error(
        "PatternRewriter::replaceNode: " + llvm::Twine(values.size()) +
        " values for " + llvm::Twine(node.getNumResults()) + " results");
  for (unsigned i = 0; i < node.getNumResults(); ++i)
    if (!values[i] && node.getResult(i)->hasUses())
      llvm::report_fatal_error("PatternRewriter::replaceNode: no replacement "
                               "for a result that is still used");
  for (unsigned i = 0; i < node.getNumResults(); ++i) {
    Value *r = node.getResult(i);
    Value *to = values[i];
    if (!to)
      continue;
    if (!r->isGraphOutput() && !r->isCaptured()) {
      replaceAllUsesWith(r, to);
      continue;
    }
    // Graph outputs (and names read by subgraphs) are produced by name.
    std::string name = r->getName().str();
    r->setName(graph.makeUniqueName(name + ".replaced"));
    if (!mustKeepName(*to)) {
      to->setName(name);
      replaceAllUsesWith(r, to);
      continue;
    }
    // `to` has its own fixed name: an Identity produces `name` from it and
    // takes over the named uses; the other users read `to` directly.
    Node *copy = create(ops::Identity, {to}, {{to->getType(), name}});
    Value *named = copy->getResult();
    replaceAllUsesWith(r, named);
    std::vector<Use> operandUses;
    for (const Use &u : named->getUses())
      if (!u.isGraphOutput() && !u.isCapture())
        operandUses.push_back(u);
    for (const Use &u : operandUses)
      u.user->setOperand(u.index, to);
    onUsersChanged(*to);
  }
  eraseNode(node);
}

void PatternRewriter::setType(Value &v, const TensorType *t) {
  if (v.getType() == t)
    return;
  v.setType(t);
  if (Node *def = v.getDefiningNode())
    onModified(*def);
  onUsersChanged(v);
}

void PatternRewriter::eraseNode(Node &node) {
  if (&node == insertionPoint) { // keep inserting where the node was
    auto next = std::next(node.getIterator());
    insertionPoint = next == graph.getNodes().end() ? nullptr : &*next;
  }
  onErasing(node);
  graph.eraseNode(&node);
}

void PatternRewriter::notifyModified(Node &node) { onModified(node); }

namespace {

/// The driver's rewriter: keeps a FIFO worklist in sync with edits.
class WorklistRewriter : public PatternRewriter {
public:
  WorklistRewriter(Graph &g, const GreedyRewriteConfig &config)
      : PatternRewriter(g), config(config) {}

  void push(Node *n) {
    if (n && queued.insert(n).second)
      worklist.push_back(n);
  }
  Node *pop() {
    while (!worklist.empty()) {
      Node *n = worklist.front();
      worklist.pop_front();
      if (queued.erase(n))
        return n;
    }
    return nullptr;
  }
  /// Nodes whose operands lost a use may now be dead.
  void collectDead() {
    while (!maybeDead.empty()) {
      Node *n = maybeDead.back();
      maybeDead.pop_back();
      if (!live.count(n))
        continue;
      bool dead = n->getNumResults() > 0;
      for (Value *r : n->getResults())
        dead &= !r->hasUses();
      if (dead)
        eraseNode(*n);
    }
  }
  llvm::DenseSet<Node *> live;

protected:
  void onCreated(Node &n) override {
    live.insert(&n);
    push(&n);
  }
  void onModified(Node &n) override { push(&n); }
  void onUsersChanged(Value &v) override {
    for (const Use &u : v.getUses())
      if (!u.isGraphOutput())
        push(u.user);
  }
  void onErasing(Node &n) override {
    queued.erase(&n);
    live.erase(&n);
    for (Value *operand : n.getOperands())
      if (operand && operand->getDefiningNode()) {
        push(operand->getDefiningNode());
        if (config.eraseDeadNodes)
          maybeDead.push_back(operand->getDefiningNode());
      }
  }

private:
  const GreedyRewriteConfig &config;
  std::deque<Node *> worklist;
  llvm::DenseSet<Node *> queued;
  std::vector<Node *> maybeDead;
};

} // namespace

GreedyRewriteResult
qopt::applyPatternsGreedily(Graph &graph, const PatternList &patterns,
                            const GreedyRewriteConfig &config) {
  // Patterns by root op, highest benefit first; "" roots apply to every op.
  llvm::StringMap<std::vector<const RewritePattern *>> byOp;
  std::vector<const RewritePattern *> anyOp;
  for (const auto &p : patterns)
    (p->getRootOp().empty() ? anyOp : byOp[p->getRootOp()]).push_back(p.get());
  auto byBenefit = [](const RewritePattern *a, const RewritePattern *b) {
    return a->getBenefit() > b->getBenefit();
  };
  for (auto &entry : byOp) {
    entry.second.insert(entry.second.end(), anyOp.begin(), anyOp.end());
    std::stable_sort(entry.second.begin(), entry.second.end(), byBenefit);
  }
  std::stable_sort(anyOp.begin(), anyOp.end(), byBenefit);

  GreedyRewriteResult result;
  result.converged = false;
  for (unsigned iter = 0; iter < config.maxIterations; ++iter) {
    ++result.iterations;
    WorklistRewriter rewriter(graph, config);
    for (Node &n : graph.getNodes()) {
      rewriter.live.insert(&n);
      rewriter.push(&n);
    }
    bool changedThisSweep = false;
    // A pattern set that keeps undoing itself would never drain the
    // worklist; bound the rewrites of one sweep as well.
    uint64_t sweepBudget =
        64 * static_cast<uint64_t>(graph.getNumNodes()) + 1024;
    uint64_t sweepRewrites = 0;
    while (Node *n = rewriter.pop()) {
      if (sweepRewrites > sweepBudget)
        return result; // not converged

      auto it = byOp.find(n->getOp());
      const auto &candidates = it == byOp.end() ? anyOp : it->second;
      for (const RewritePattern *p : candidates) {
        rewriter.setInsertionPoint(n);
        rewriter.setRoot(n);
        if (p->matchAndRewrite(*n, rewriter)) {
          changedThisSweep = true;
          result.changed = true;
          ++result.rewrites;
          ++sweepRewrites;
          if (config.eraseDeadNodes)
            rewriter.collectDead();
          break; // the node may be gone; it was re-queued if modified
        }
      }
    }
    if (!changedThisSweep) {
      result.converged = true;
      break;
    }
    result.changed = true;
  }
  return result;
}

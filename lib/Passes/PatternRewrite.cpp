//===- PatternRewrite.cpp - Rewrite patterns and the greedy driver --------===//

#include "qopt/Passes/PatternRewrite.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>

using namespace qopt;

Node *PatternRewriter::create(llvm::StringRef op,
                              llvm::ArrayRef<Value *> operands,
                              llvm::ArrayRef<ResultSpec> results,
                              std::vector<NamedAttribute> attrs,
                              std::string name) {
  std::vector<ResultSpec> unique(results.begin(), results.end());
  llvm::StringSet<> taken; // names chosen for earlier results of this node
  for (ResultSpec &r : unique) {
    if (r.absent)
      continue;
    std::string base = r.name;
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
    // A graph output keeps its name: the replacement takes it over when it
    // is not itself an input or an output already.
    if (r->isGraphOutput() && values[i] && !values[i]->isGraphInput() &&
        !values[i]->isGraphOutput()) {
      std::string name = r->getName().str();
      r->setName(graph.makeUniqueName(name + ".replaced"));
      values[i]->setName(name);
    }
    if (values[i])
      replaceAllUsesWith(r, values[i]);
  }
  eraseNode(node);
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

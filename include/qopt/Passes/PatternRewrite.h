//===- PatternRewrite.h - Rewrite patterns, greedy driver ------*- C++ -*-===//
//
// Local rewrites, MLIR style: a pattern matches one root node and rewrites
// through a PatternRewriter, which keeps the driver's worklist informed.
//
//   struct FoldIdentity : RewritePattern {
//     FoldIdentity() : RewritePattern(ops::Identity, /*benefit=*/1) {}
//     bool matchAndRewrite(Node &n, PatternRewriter &r) const override {
//       // Replacing an output by an input would need an Identity again.
//       if (r.replacementNeedsIdentity(*n.getResult(), *n.getOperand(0)))
//         return false;
//       r.replaceNode(n, {n.getOperand(0)});
//       return true;
//     }
//   };
//
// applyPatternsGreedily visits nodes from a worklist, tries the patterns for
// each node's op in decreasing benefit, re-queues what a rewrite touched, and
// repeats whole sweeps until nothing changes or the iteration bound is hit
// (reported in the result, never silent).
//
// Names: a graph output keeps its name through replaceNode (ONNX produces
// outputs by name), and values the rewriter creates without a name are named
// after the root's result ("%y.Relu"), so exported models stay readable.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PASSES_PATTERNREWRITE_H
#define QOPT_PASSES_PATTERNREWRITE_H

#include "qopt/IR/Graph.h"

#include "llvm/ADT/DenseSet.h"

#include <deque>
#include <memory>
#include <vector>

namespace qopt {

class PatternRewriter;

class RewritePattern {
public:
  /// `rootOp` empty = any op. Higher benefit is tried first.
  RewritePattern(llvm::StringRef rootOp, unsigned benefit,
                 llvm::StringRef debugName = {})
      : rootOp(rootOp.str()), benefit(benefit), debugName(debugName.str()) {}
  virtual ~RewritePattern() = default;

  /// Returns true if it rewrote. Must not change anything when it returns
  /// false.
  virtual bool matchAndRewrite(Node &node, PatternRewriter &rewriter) const = 0;

  llvm::StringRef getRootOp() const { return rootOp; }
  unsigned getBenefit() const { return benefit; }
  llvm::StringRef getDebugName() const { return debugName; }

private:
  std::string rootOp;
  unsigned benefit;
  std::string debugName;
};

using PatternList = std::vector<std::unique_ptr<RewritePattern>>;

/// Graph edits made by patterns; every edit is reported to the driver.
class PatternRewriter {
public:
  explicit PatternRewriter(Graph &graph) : graph(graph) {}
  virtual ~PatternRewriter() = default;

  Graph &getGraph() { return graph; }
  /// New nodes go before this node (the root being rewritten by default).
  void setInsertionPoint(Node *before) { insertionPoint = before; }
  Node *getInsertionPoint() const { return insertionPoint; }
  /// The node being rewritten; created values are named after it. The
  /// driver sets it before each pattern. Without a root, the insertion
  /// point's node lends its name.
  void setRoot(Node *root);

  /// Creates a node at the insertion point. Result names are made unique;
  /// an empty name becomes "<root result>.<OpType>" (e.g. "y.Relu").
  Node *create(llvm::StringRef op, llvm::ArrayRef<Value *> operands,
               llvm::ArrayRef<ResultSpec> results,
               std::vector<NamedAttribute> attrs = {}, std::string name = {});
  /// Replaces every use of `node`'s results with `values`, then erases it.
  /// A result that is a graph output (or read by name from a subgraph) keeps
  /// its name: the replacement takes the name over, or, when the replacement
  /// must keep its own name (see mustKeepName), an onnx.Identity of it is
  /// inserted to produce the result under its name.
  void replaceNode(Node &node, llvm::ArrayRef<Value *> values);
  void replaceAllUsesWith(Value *from, Value *to);
  void eraseNode(Node &node);
  /// Call after changing a node in place (attributes, operands, types).
  void notifyModified(Node &node);
  /// Retypes `v`; its producer and its users are revisited by the driver.
  void setType(Value &v, const TensorType *t);

  /// Graph inputs, graph outputs and values a subgraph reads by name: their
  /// names are fixed by something other than the graph's nodes.
  static bool mustKeepName(const Value &v);
  /// True when replaceNode would insert an onnx.Identity to replace
  /// `result` by `replacement` (patterns that remove Identity nodes check
  /// this so as not to undo themselves).
  static bool replacementNeedsIdentity(const Value &result,
                                       const Value &replacement);

protected:
  virtual void onCreated(Node &) {}
  virtual void onModified(Node &) {}
  virtual void onErasing(Node &) {}
  virtual void onUsersChanged(Value &) {}

  /// Readable base for a new value's name.
  std::string nameBase() const;

  Graph &graph;
  Node *insertionPoint = nullptr;
  /// Name of the root's first named result (or of the root node); kept as a
  /// string because a pattern may erase the root before it creates nodes.
  std::string rootName;
};

struct GreedyRewriteConfig {
  /// Whole sweeps over the graph before giving up.
  unsigned maxIterations = 10;
  /// Erase nodes whose results became unused (never graph outputs).
  bool eraseDeadNodes = true;
};

struct GreedyRewriteResult {
  bool changed = false;
  /// False when the bound was hit while rewrites still applied.
  bool converged = true;
  unsigned iterations = 0;
  uint64_t rewrites = 0;
};

GreedyRewriteResult
applyPatternsGreedily(Graph &graph, const PatternList &patterns,
                      const GreedyRewriteConfig &config = {});

} // namespace qopt

#endif // QOPT_PASSES_PATTERNREWRITE_H

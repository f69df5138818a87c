//===- PatternRewriteTest.cpp - PatternRewriter edits and names -----------===//
//
// What the rewriter promises beyond the driver loop: graph outputs keep
// their names through replaceNode (an onnx.Identity when the replacement has
// a fixed name of its own), created values get names derived from the root,
// and setType revisits the retyped value's producer and users.
//
//===----------------------------------------------------------------------===//

#include "qopt/Passes/PatternRewrite.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Onnx/OnnxExporter.h"
#include "qopt/Onnx/OnnxImporter.h"

#include "gtest/gtest.h"

using namespace qopt;

namespace {

std::unique_ptr<Model> parse(llvm::StringRef text, Context &ctx) {
  auto m = parseModel(text, "test.qir", ctx);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return nullptr;
  }
  return std::move(*m);
}

std::string print(const Graph &g) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printGraph(g, os);
  return os.str();
}

/// Replaces every `op` node by its operand `operand`, unconditionally (the
/// case replaceNode has to make safe for graph outputs).
struct ForwardOperand : RewritePattern {
  ForwardOperand(llvm::StringRef op, unsigned operand = 0)
      : RewritePattern(op, 1), operand(operand) {}
  bool matchAndRewrite(Node &n, PatternRewriter &r) const override {
    r.replaceNode(n, {n.getOperand(operand)});
    return true;
  }
  unsigned operand;
};

/// The header's example: drops Identity unless that needs an Identity.
struct FoldIdentity : RewritePattern {
  FoldIdentity() : RewritePattern("onnx.Identity", 1) {}
  bool matchAndRewrite(Node &n, PatternRewriter &r) const override {
    if (r.replacementNeedsIdentity(*n.getResult(), *n.getOperand(0)))
      return false;
    r.replaceNode(n, {n.getOperand(0)});
    return true;
  }
};

GreedyRewriteResult run(Graph &g, std::unique_ptr<RewritePattern> p,
                        unsigned maxIterations = 10) {
  PatternList patterns;
  patterns.push_back(std::move(p));
  GreedyRewriteConfig config;
  config.maxIterations = maxIterations;
  return applyPatternsGreedily(g, patterns, config);
}

} // namespace

TEST(PatternRewriteTest, GraphInputReplacementKeepsTheOutputName) {
  Context ctx;
  auto m = parse(R"(model {ir_version = 8, opset_import = ["ai.onnx:13"]}
graph @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %q = onnx.Relu(%x) : tensor<4xf32>
  %s = onnx.Sigmoid(%q) : tensor<4xf32>
  return %q, %s
}
)",
                 ctx);
  ASSERT_TRUE(m);
  Graph &g = m->getGraph();
  GreedyRewriteResult r = run(g, std::make_unique<ForwardOperand>("onnx.Relu"));
  EXPECT_TRUE(r.converged);
  // The output is still called q, produced from x by an Identity; the other
  // user reads x directly.
  EXPECT_EQ(
      print(g),
      R"(graph @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %q = onnx.Identity(%x) : tensor<4xf32>
  %s = onnx.Sigmoid(%x) : tensor<4xf32>
  return %q, %s
}
)");
  EXPECT_FALSE(bool(verifyGraph(g)));

  // And in the exported file: the output is named q, not x.
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  ASSERT_FALSE(bool(exportOnnx(*m, os)));
  os.flush();
  auto again = importOnnxBuffer(bytes, ".", ctx);
  ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
  EXPECT_EQ((*again)->getGraph().getOutput(0)->getName(), "q");
  EXPECT_EQ((*again)->getGraph().getInput(0)->getName(), "x");
}

TEST(PatternRewriteTest, AnotherOutputAsReplacementKeepsBothNames) {
  Context ctx;
  auto m = parse(
      R"(graph @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = onnx.Sigmoid(%x) : tensor<4xf32>
  %b = onnx.Relu(%a) : tensor<4xf32>
  return %a, %b
}
)",
      ctx);
  ASSERT_TRUE(m);
  Graph &g = m->getGraph();
  run(g, std::make_unique<ForwardOperand>("onnx.Relu"));
  EXPECT_EQ(
      print(g),
      R"(graph @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = onnx.Sigmoid(%x) : tensor<4xf32>
  %b = onnx.Identity(%a) : tensor<4xf32>
  return %a, %b
}
)");
  EXPECT_FALSE(bool(verifyGraph(g)));
}

TEST(PatternRewriteTest, OrdinaryReplacementTakesTheOutputName) {
  Context ctx;
  auto m = parse(R"(graph @main(%x: tensor<4xf32>) -> (tensor<4xf32>) {
  %a = onnx.Sigmoid(%x) : tensor<4xf32>
  %y = onnx.Relu(%a) : tensor<4xf32>
  return %y
}
)",
                 ctx);
  ASSERT_TRUE(m);
  Graph &g = m->getGraph();
  run(g, std::make_unique<ForwardOperand>("onnx.Relu"));
  // No Identity: the Sigmoid now produces y.
  EXPECT_EQ(print(g), R"(graph @main(%x: tensor<4xf32>) -> (tensor<4xf32>) {
  %y = onnx.Sigmoid(%x) : tensor<4xf32>
  return %y
}
)");
}

TEST(PatternRewriteTest, CapturedResultKeepsTheNameTheSubgraphReads) {
  Context ctx;
  Graph g(ctx);
  auto *t = ctx.getTensorType(llvm::ArrayRef<int64_t>{4},
                              ctx.getElementType(ElementKind::F32));
  Value *x = g.addInput(t, "x");
  Node *relu = g.createNode("onnx.Relu", {x}, {{t, "r"}});
  Node *branch = g.createNode("onnx.If", {x}, {{t, "y"}});
  branch->addCapture(relu->getResult());
  g.addOutput(branch->getResult());
  run(g, std::make_unique<ForwardOperand>("onnx.Relu"));
  ASSERT_EQ(branch->getCaptures().size(), 1u);
  Value *captured = branch->getCaptures()[0];
  EXPECT_EQ(captured->getName(), "r");
  ASSERT_NE(captured->getDefiningNode(), nullptr);
  EXPECT_TRUE(captured->getDefiningNode()->isa("onnx.Identity"));
  EXPECT_EQ(captured->getDefiningNode()->getOperand(0), x);
  EXPECT_FALSE(bool(verifyGraph(g)));
}

TEST(PatternRewriteTest, IdentityFoldingConvergesAroundOutputs) {
  Context ctx;
  auto m = parse(
      R"(graph @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %i1 = onnx.Identity(%x) : tensor<4xf32>
  %i2 = onnx.Identity(%i1) : tensor<4xf32>
  %s = onnx.Sigmoid(%i2) : tensor<4xf32>
  %o = onnx.Identity(%s) : tensor<4xf32>
  return %i2, %o
}
)",
      ctx);
  ASSERT_TRUE(m);
  Graph &g = m->getGraph();
  GreedyRewriteResult r = run(g, std::make_unique<FoldIdentity>());
  EXPECT_TRUE(r.converged);
  // i1 goes; i2 (an output fed by an input) stays; o's name moves to s.
  EXPECT_EQ(
      print(g),
      R"(graph @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %i2 = onnx.Identity(%x) : tensor<4xf32>
  %o = onnx.Sigmoid(%i2) : tensor<4xf32>
  return %i2, %o
}
)");
}

namespace {
/// Splits Relu(v) into Sigmoid(Relu(v)) with unnamed results, once.
struct WrapInSigmoid : RewritePattern {
  WrapInSigmoid() : RewritePattern("onnx.Relu", 1) {}
  bool matchAndRewrite(Node &n, PatternRewriter &r) const override {
    if (n.getIntAttr("done"))
      return false;
    const TensorType *t = n.getResult()->getType();
    Node *inner = r.create("onnx.Relu", {n.getOperand(0)}, {{t, ""}},
                           {{"done", Attribute(int64_t(1))}});
    Node *outer = r.create("onnx.Sigmoid", {inner->getResult()}, {{t, ""}});
    Node *again = r.create("onnx.Sigmoid", {outer->getResult()}, {{t, ""}});
    r.replaceNode(n, {again->getResult()});
    return true;
  }
};
} // namespace

TEST(PatternRewriteTest, CreatedValuesAreNamedAfterTheRoot) {
  Context ctx;
  auto m = parse(R"(graph @main(%x: tensor<4xf32>) -> (tensor<4xf32>) {
  %feat = onnx.Relu(%x) : tensor<4xf32>
  %y = onnx.Add(%feat, %feat) : tensor<4xf32>
  return %y
}
)",
                 ctx);
  ASSERT_TRUE(m);
  Graph &g = m->getGraph();
  run(g, std::make_unique<WrapInSigmoid>());
  EXPECT_EQ(print(g), R"(graph @main(%x: tensor<4xf32>) -> (tensor<4xf32>) {
  %feat.Relu = onnx.Relu(%x) {done = 1} : tensor<4xf32>
  %feat.Sigmoid = onnx.Sigmoid(%feat.Relu) : tensor<4xf32>
  %feat.Sigmoid_1 = onnx.Sigmoid(%feat.Sigmoid) : tensor<4xf32>
  %y = onnx.Add(%feat.Sigmoid_1, %feat.Sigmoid_1) : tensor<4xf32>
  return %y
}
)");
}

TEST(PatternRewriteTest, RewriterWithoutRootNamesAfterTheInsertionPoint) {
  Context ctx;
  Graph g(ctx);
  auto *t = ctx.getTensorType(llvm::ArrayRef<int64_t>{4},
                              ctx.getElementType(ElementKind::F32));
  Value *x = g.addInput(t, "x");
  Node *conv = g.createNode("onnx.Relu", {x}, {{t, "act"}});
  g.addOutput(conv->getResult());
  PatternRewriter r(g);
  r.setInsertionPoint(conv);
  Node *n = r.create("com.microsoft.Gelu", {x}, {{t, ""}});
  EXPECT_EQ(n->getResult()->getName(), "act.Gelu");
  r.setInsertionPoint(nullptr);
  Node *m = r.create("onnx.Tanh", {x}, {{t, ""}});
  EXPECT_EQ(m->getResult()->getName(), "Tanh");
}

namespace {
/// Records what the rewriter reports.
struct RecordingRewriter : PatternRewriter {
  using PatternRewriter::PatternRewriter;
  std::vector<Node *> modified;
  std::vector<Value *> usersChanged;

protected:
  void onModified(Node &n) override { modified.push_back(&n); }
  void onUsersChanged(Value &v) override { usersChanged.push_back(&v); }
};
} // namespace

TEST(PatternRewriteTest, SetTypeReportsProducerAndUsers) {
  Context ctx;
  Graph g(ctx);
  auto *unknown = ctx.getUnknownTensorType();
  auto *t = ctx.getTensorType(llvm::ArrayRef<int64_t>{4},
                              ctx.getElementType(ElementKind::F32));
  Value *x = g.addInput(t, "x");
  Node *a = g.createNode("onnx.Relu", {x}, {{unknown, "a"}});
  Node *b = g.createNode("onnx.Relu", {a->getResult()}, {{unknown, "b"}});
  RecordingRewriter r(g);
  r.setType(*a->getResult(), t);
  EXPECT_EQ(a->getResult()->getType(), t);
  EXPECT_EQ(r.modified, std::vector<Node *>{a});
  EXPECT_EQ(r.usersChanged, std::vector<Value *>{a->getResult()});
  // Same type again: nothing to revisit.
  r.setType(*a->getResult(), t);
  EXPECT_EQ(r.modified.size(), 1u);
  (void)b;
}

namespace {
/// Relu(v): when v's type is known and the result's is not, copy it over.
struct PropagateForward : RewritePattern {
  PropagateForward() : RewritePattern("onnx.Relu", 1) {}
  bool matchAndRewrite(Node &n, PatternRewriter &r) const override {
    const TensorType *in = n.getOperand(0)->getType();
    if (in->isUnknown() || !n.getResult()->getType()->isUnknown())
      return false;
    r.setType(*n.getResult(), in);
    return true;
  }
};
/// Relu(v): when the result's type is known and v's is not, copy it back.
struct PropagateBackward : RewritePattern {
  PropagateBackward() : RewritePattern("onnx.Relu", 1) {}
  bool matchAndRewrite(Node &n, PatternRewriter &r) const override {
    Value *in = n.getOperand(0);
    if (!in->getType()->isUnknown() || n.getResult()->getType()->isUnknown())
      return false;
    r.setType(*in, n.getResult()->getType());
    return true;
  }
};
/// "test.seed"(v) types its operand once.
struct Seed : RewritePattern {
  Seed(const TensorType *t) : RewritePattern("test.seed", 1), t(t) {}
  bool matchAndRewrite(Node &n, PatternRewriter &r) const override {
    if (!n.getOperand(0)->getType()->isUnknown())
      return false;
    r.setType(*n.getOperand(0), t);
    return true;
  }
  const TensorType *t;
};
} // namespace

TEST(PatternRewriteTest, SetTypeRequeuesUsersWithinOneSweep) {
  Context ctx;
  Graph g(ctx);
  auto *unknown = ctx.getUnknownTensorType();
  auto *t = ctx.getTensorType(llvm::ArrayRef<int64_t>{4},
                              ctx.getElementType(ElementKind::F32));
  Value *x = g.addInput(unknown, "x");
  Node *a = g.createNode("onnx.Relu", {x}, {{unknown, "a"}});
  Node *b = g.createNode("onnx.Relu", {a->getResult()}, {{unknown, "b"}});
  // Visited last: typing x must send a (and then b) back to the worklist.
  g.createNode("test.seed", {x}, {{unknown, "s"}});
  g.addOutput(b->getResult());
  PatternList patterns;
  patterns.push_back(std::make_unique<PropagateForward>());
  patterns.push_back(std::make_unique<Seed>(t));
  GreedyRewriteConfig config;
  config.maxIterations = 1;
  applyPatternsGreedily(g, patterns, config);
  EXPECT_EQ(a->getResult()->getType(), t);
  EXPECT_EQ(b->getResult()->getType(), t);
}

TEST(PatternRewriteTest, SetTypeRequeuesTheProducerWithinOneSweep) {
  Context ctx;
  Graph g(ctx);
  auto *unknown = ctx.getUnknownTensorType();
  auto *t = ctx.getTensorType(llvm::ArrayRef<int64_t>{4},
                              ctx.getElementType(ElementKind::F32));
  Value *x = g.addInput(unknown, "x");
  Node *a = g.createNode("onnx.Relu", {x}, {{unknown, "a"}});
  Node *b = g.createNode("onnx.Relu", {a->getResult()}, {{unknown, "b"}});
  Node *c = g.createNode("onnx.Relu", {b->getResult()}, {{t, "c"}});
  g.addOutput(c->getResult());
  // c types b, which must bring b back to type a, which types x.
  GreedyRewriteResult r =
      run(g, std::make_unique<PropagateBackward>(), /*maxIterations=*/1);
  EXPECT_EQ(r.rewrites, 3u);
  EXPECT_EQ(b->getResult()->getType(), t);
  EXPECT_EQ(a->getResult()->getType(), t);
  EXPECT_EQ(x->getType(), t);
}

//===- PassManagerTest.cpp - Analysis caching, invalidation, callbacks ----===//
//
// In the manner of LLVM's PassManagerTest: counting analyses show exactly
// when results are computed and dropped.
//
//===----------------------------------------------------------------------===//

#include "qopt/Passes/PassManager.h"
#include "qopt/IR/Graph.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Passes/PatternRewrite.h"

#include "gtest/gtest.h"

using namespace qopt;

namespace {

/// Counts nodes; counts its own runs.
struct NodeCountAnalysis : AnalysisInfoMixin<NodeCountAnalysis> {
  struct Result {
    size_t nodes;
  };
  Result run(Graph &g, AnalysisManager &) {
    ++runs;
    return {g.getNumNodes()};
  }
  static AnalysisKey Key;
  static int runs;
};
AnalysisKey NodeCountAnalysis::Key;
int NodeCountAnalysis::runs = 0;

struct OtherAnalysis : AnalysisInfoMixin<OtherAnalysis> {
  struct Result {
    int value = 7;
  };
  Result run(Graph &, AnalysisManager &) {
    ++runs;
    return {};
  }
  static AnalysisKey Key;
  static int runs;
};
AnalysisKey OtherAnalysis::Key;
int OtherAnalysis::runs = 0;

/// Computed from NodeCountAnalysis (as fusion-plan is from scale-analysis).
struct DerivedAnalysis : AnalysisInfoMixin<DerivedAnalysis> {
  struct Result {
    size_t twice;
  };
  Result run(Graph &g, AnalysisManager &am) {
    ++runs;
    return {2 * am.getResult<NodeCountAnalysis>(g).nodes};
  }
  static AnalysisKey Key;
  static int runs;
};
AnalysisKey DerivedAnalysis::Key;
int DerivedAnalysis::runs = 0;

/// Uses NodeCountAnalysis; preserves everything (changes nothing).
struct ReadOnlyPass : PassInfoMixin<ReadOnlyPass> {
  explicit ReadOnlyPass(size_t *seen) : seen(seen) {}
  size_t *seen;
  PreservedAnalyses run(Graph &g, AnalysisManager &am) {
    *seen = am.getResult<NodeCountAnalysis>(g).nodes;
    return PreservedAnalyses::all();
  }
};

/// Adds a node; preserves only OtherAnalysis.
struct AddNodePass : PassInfoMixin<AddNodePass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &) {
    Value *x = g.getInput(0);
    g.createNode("onnx.Relu", {x}, {{x->getType(), g.makeUniqueName("r")}});
    PreservedAnalyses pa;
    pa.preserve<OtherAnalysis>();
    return pa;
  }
};

class PassManagerTest : public ::testing::Test {
protected:
  void SetUp() override {
    NodeCountAnalysis::runs = 0;
    OtherAnalysis::runs = 0;
    DerivedAnalysis::runs = 0;
    g.addInput(ctx.getUnknownTensorType(), "x");
  }
  Context ctx;
  Graph g{ctx};
};

} // namespace

TEST_F(PassManagerTest, AnalysisRunsOnceWhileCached) {
  AnalysisManager am;
  PassManager pm;
  size_t a = 0, b = 0;
  pm.addPass(ReadOnlyPass(&a));
  pm.addPass(ReadOnlyPass(&b));
  pm.run(g, am);
  EXPECT_EQ(NodeCountAnalysis::runs, 1);
  EXPECT_EQ(a, 0u);
  EXPECT_EQ(b, 0u);
  EXPECT_EQ(am.getRunCount(&NodeCountAnalysis::Key), 1u);
}

TEST_F(PassManagerTest, AnalysisRerunsExactlyAfterAPassThatDidNotPreserveIt) {
  AnalysisManager am;
  PassManager pm;
  size_t a = 0, b = 0, c = 0;
  pm.addPass(ReadOnlyPass(&a));
  pm.addPass(AddNodePass{});
  pm.addPass(ReadOnlyPass(&b));
  pm.addPass(ReadOnlyPass(&c));
  am.getResult<OtherAnalysis>(g);
  pm.run(g, am);
  EXPECT_EQ(NodeCountAnalysis::runs, 2); // before and after AddNodePass
  EXPECT_EQ(a, 0u);
  EXPECT_EQ(b, 1u);
  EXPECT_EQ(c, 1u);
  // OtherAnalysis was preserved, so it was never recomputed.
  EXPECT_EQ(OtherAnalysis::runs, 1);
  EXPECT_NE(am.getCachedResult<OtherAnalysis>(g), nullptr);
}

TEST_F(PassManagerTest, InvalidateOneAndAll) {
  AnalysisManager am;
  am.getResult<NodeCountAnalysis>(g);
  am.getResult<OtherAnalysis>(g);
  am.invalidateOne(g, &NodeCountAnalysis::Key);
  EXPECT_EQ(am.getCachedResult<NodeCountAnalysis>(g), nullptr);
  EXPECT_NE(am.getCachedResult<OtherAnalysis>(g), nullptr);
  am.invalidateOne(g, nullptr);
  EXPECT_EQ(am.getCachedResult<OtherAnalysis>(g), nullptr);
}

TEST_F(PassManagerTest, InstrumentationCallbacksRunInOrder) {
  PassInstrumentation pi;
  std::vector<std::string> log;
  pi.registerBeforePass([&](llvm::StringRef p, const Graph &) {
    log.push_back("before " + p.str());
    return true;
  });
  pi.registerAfterPass(
      [&](llvm::StringRef p, const Graph &, const PreservedAnalyses &pa) {
        log.push_back("after " + p.str() +
                      (pa.areAllPreserved() ? " (unchanged)" : " (changed)"));
      });
  pi.registerBeforeAnalysis([&](llvm::StringRef a, const Graph &) {
    log.push_back("analysis " + a.str());
  });
  pi.registerAnalysisInvalidated([&](llvm::StringRef a, const Graph &) {
    log.push_back("invalidated " + a.str());
  });
  AnalysisManager am(&pi);
  am.setDisplayName(&NodeCountAnalysis::Key, "node-count");
  PassManager pm;
  size_t a = 0, b = 0;
  pm.addPass(ReadOnlyPass(&a), "read");
  pm.addPass(AddNodePass{}, "add");
  pm.addPass(ReadOnlyPass(&b), "read");
  pm.run(g, am);
  std::vector<std::string> expected = {
      "before read", "analysis node-count",    "after read (unchanged)",
      "before add",  "invalidated node-count", "after add (changed)",
      "before read", "analysis node-count",    "after read (unchanged)"};
  EXPECT_EQ(log, expected);
}

TEST_F(PassManagerTest, SkippedPassDoesNotRun) {
  PassInstrumentation pi;
  pi.registerBeforePass(
      [](llvm::StringRef p, const Graph &) { return p != "add"; });
  AnalysisManager am(&pi);
  PassManager pm;
  pm.addPass(AddNodePass{}, "add");
  pm.run(g, am);
  EXPECT_EQ(g.getNumNodes(), 0u);
}

TEST_F(PassManagerTest, ReportedErrorStopsThePipeline) {
  PassInstrumentation pi;
  int afterCount = 0;
  pi.registerAfterPass(
      [&](llvm::StringRef, const Graph &, const PreservedAnalyses &) {
        if (++afterCount == 1)
          pi.reportError(llvm::createStringError(llvm::inconvertibleErrorCode(),
                                                 "first pass failed"));
      });
  AnalysisManager am(&pi);
  PassManager pm;
  pm.addPass(AddNodePass{}, "add");
  pm.addPass(AddNodePass{}, "add");
  llvm::Error err = pm.runAndCheck(g, am);
  ASSERT_TRUE(bool(err));
  EXPECT_EQ(llvm::toString(std::move(err)), "first pass failed");
  EXPECT_EQ(g.getNumNodes(), 1u);
}

TEST(PipelineParserTest, CanonicalTextParsesBackToItself) {
  PassRegistry registry;
  registerCoreAnalyses(registry);
  registry.registerPass<AddNodePass>("add-node", "adds a node");
  registry.registerPipeline("twice", "two adds", "add-node,add-node");
  for (const char *text :
       {"add-node", "add-node,add-node", "fixpoint(add-node)",
        "fixpoint<max-iterations=3>(add-node,verify)",
        "repeat<2>(add-node,fixpoint(add-node))",
        "require<scale-analysis>,invalidate<scale-analysis>,invalidate<all>",
        "print<scale-analysis>,print,verify"}) {
    auto pm = registry.parsePipeline(text);
    ASSERT_TRUE(bool(pm)) << text << ": " << llvm::toString(pm.takeError());
    std::string printed;
    llvm::raw_string_ostream os(printed);
    pm->printPipeline(os);
    EXPECT_EQ(os.str(), text);
  }
  auto expanded = registry.parsePipeline("default<twice>");
  ASSERT_TRUE(bool(expanded));
  std::string printed;
  llvm::raw_string_ostream os(printed);
  expanded->printPipeline(os);
  EXPECT_EQ(os.str(), "add-node,add-node");
}

TEST(PipelineParserTest, ErrorsNameTheOffendingToken) {
  PassRegistry registry;
  registerCoreAnalyses(registry);
  registry.registerPass<AddNodePass>("add-node", "adds a node");
  auto message = [&](const char *text) {
    auto pm = registry.parsePipeline(text);
    return pm ? std::string("parsed") : llvm::toString(pm.takeError());
  };
  EXPECT_EQ(message("add-nodd"),
            "unknown pass 'add-nodd' in pipeline; did you mean 'add-node'?");
  EXPECT_EQ(message("require<scale-analysys>"),
            "unknown analysis 'scale-analysys' in 'require<scale-analysys>'; "
            "did you mean 'scale-analysis'?");
  EXPECT_EQ(message("add-node<x=1>"),
            "pass 'add-node' takes no parameters, got '<x=1>'");
  EXPECT_EQ(message("fixpoint(add-node"),
            "missing ')' for 'fixpoint(' in pipeline");
  EXPECT_EQ(message("add-node,"),
            "pipeline 'add-node,' ends where a pass name was expected");
  EXPECT_EQ(message("scale-analysis"),
            "'scale-analysis' is an analysis, not a pass; use "
            "require<scale-analysis> or print<scale-analysis>");
}

TEST(PipelineParserTest, RegistrationClashIsAnError) {
  PassRegistry registry;
  registry.setCurrentPlugin("first");
  registry.registerPass<AddNodePass>("add-node", "adds a node");
  EXPECT_FALSE(bool(registry.takeRegistrationError()));
  registry.setCurrentPlugin("second");
  registry.registerPass<AddNodePass>("add-node", "again");
  llvm::Error err = registry.takeRegistrationError();
  ASSERT_TRUE(bool(err));
  EXPECT_EQ(llvm::toString(std::move(err)),
            "plugin 'second' registers pass 'add-node', but that name is "
            "already taken by pass 'add-node' from plugin 'first'");
  registry.registerPass<AddNodePass>("fixpoint", "reserved");
  err = registry.takeRegistrationError();
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("pipeline keyword"),
            std::string::npos);
}

namespace {
/// Relu(Relu(x)) -> Relu(x).
struct FoldDoubleRelu : RewritePattern {
  FoldDoubleRelu() : RewritePattern("onnx.Relu", 2) {}
  bool matchAndRewrite(Node &n, PatternRewriter &r) const override {
    Node *producer = n.getOperand(0)->getDefiningNode();
    if (!producer || !producer->isa("onnx.Relu"))
      return false;
    r.replaceNode(n, {producer->getResult()});
    return true;
  }
};
/// Flips a marker attribute on every visit: never converges.
struct Toggle : RewritePattern {
  Toggle() : RewritePattern("onnx.Relu", 1) {}
  bool matchAndRewrite(Node &n, PatternRewriter &r) const override {
    n.setAttr("t", Attribute(int64_t(n.getIntAttr("t").value_or(0) ^ 1)));
    r.notifyModified(n);
    return true;
  }
};
} // namespace

TEST(PatternDriverTest, FoldsChainsAndErasesDeadNodes) {
  Context ctx;
  Graph g(ctx);
  Value *x = g.addInput(ctx.getUnknownTensorType(), "x");
  Value *v = x;
  for (int i = 0; i < 5; ++i)
    v = g.createNode("onnx.Relu", {v},
                     {{v->getType(), "r" + std::to_string(i)}})
            ->getResult();
  g.addOutput(v);
  PatternList patterns;
  patterns.push_back(std::make_unique<FoldDoubleRelu>());
  GreedyRewriteResult r = applyPatternsGreedily(g, patterns);
  EXPECT_TRUE(r.changed);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.rewrites, 4u);
  EXPECT_EQ(g.getNumNodes(), 1u);
  EXPECT_EQ(g.getOutput(0)->getName(), "r4"); // the output keeps its name
}

TEST(PatternDriverTest, ReportsWhenTheBoundIsHit) {
  Context ctx;
  Graph g(ctx);
  Value *x = g.addInput(ctx.getUnknownTensorType(), "x");
  Node *n = g.createNode("onnx.Relu", {x}, {{x->getType(), "r"}});
  g.addOutput(n->getResult());
  PatternList patterns;
  patterns.push_back(std::make_unique<Toggle>());
  GreedyRewriteConfig config;
  config.maxIterations = 3;
  GreedyRewriteResult r = applyPatternsGreedily(g, patterns, config);
  EXPECT_TRUE(r.changed);
  EXPECT_FALSE(r.converged);
  EXPECT_LE(r.iterations, 3u);
}

TEST_F(PassManagerTest, AnAnalysisIsInvalidatedWithWhatItWasComputedFrom) {
  AnalysisManager am;
  EXPECT_EQ(am.getResult<DerivedAnalysis>(g).twice, 0u);
  // A pass that preserves DerivedAnalysis but not NodeCountAnalysis: the
  // derived result was computed from a stale one, so it goes too.
  PreservedAnalyses pa;
  pa.preserve<DerivedAnalysis>();
  pa.preserve<OtherAnalysis>();
  g.createNode("onnx.Relu", {g.getInput(0)},
               {{ctx.getUnknownTensorType(), "r"}});
  am.invalidate(g, pa);
  EXPECT_EQ(am.getCachedResult<NodeCountAnalysis>(g), nullptr);
  EXPECT_EQ(am.getCachedResult<DerivedAnalysis>(g), nullptr);
  EXPECT_EQ(am.getResult<DerivedAnalysis>(g).twice, 2u);
  EXPECT_EQ(DerivedAnalysis::runs, 2);
  // invalidateOne follows the same edges; unrelated results stay.
  am.getResult<OtherAnalysis>(g);
  am.invalidateOne(g, &NodeCountAnalysis::Key);
  EXPECT_EQ(am.getCachedResult<DerivedAnalysis>(g), nullptr);
  EXPECT_NE(am.getCachedResult<OtherAnalysis>(g), nullptr);
}

//===- ExamplePlugin.cpp - A minimal qopt pass plugin to copy -------------===//
//
// This file is the starting point for a third-party plugin. It registers one
// pass, `remove-identity`, which deletes ONNX Identity nodes:
//
//   %y = onnx.Identity(%x)
//   %z = onnx.Relu(%y)        =>   %z = onnx.Relu(%x)
//
// Build it against an installed qopt (see docs/WritingPasses.md):
//
//   find_package(qopt REQUIRED)
//   add_library(ExamplePlugin MODULE ExamplePlugin.cpp)
//   target_link_libraries(ExamplePlugin PRIVATE qopt::QoptPasses)
//
// and run it: qopt -load-pass-plugin=./ExamplePlugin.so -passes=remove-identity
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/Graph.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Passes/PassPlugin.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Passes/PatternRewrite.h"

using namespace qopt;

namespace {

/// The local rewrite: one pattern rooted at onnx.Identity.
struct RemoveIdentityPattern : RewritePattern {
  RemoveIdentityPattern() : RewritePattern(ops::Identity, /*benefit=*/1) {}

  bool matchAndRewrite(Node &node, PatternRewriter &rewriter) const override {
    Value *input = node.getOperand(0);
    Value *output = node.getResult();
    // A graph output keeps its name: if it cannot be given to the input
    // (a graph input, another output), the Identity has to stay.
    if (!input || PatternRewriter::replacementNeedsIdentity(*output, *input))
      return false;
    rewriter.replaceNode(node, {input});
    return true;
  }
};

/// A pass is a value type with run(); it says which analyses survive.
struct RemoveIdentityPass : PassInfoMixin<RemoveIdentityPass> {
  PreservedAnalyses run(Graph &graph, AnalysisManager &) {
    PatternList patterns;
    patterns.push_back(std::make_unique<RemoveIdentityPattern>());
    GreedyRewriteResult result = applyPatternsGreedily(graph, patterns);
    return result.changed ? PreservedAnalyses::none()
                          : PreservedAnalyses::all();
  }
};

} // namespace

/// The entry point qopt looks up after loading the library.
extern "C" QOPT_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "example", "1.0",
          [](PassRegistry &registry) {
            registry.registerPass<RemoveIdentityPass>(
                "remove-identity", "remove onnx.Identity nodes (example "
                                   "plugin)");
          }};
}

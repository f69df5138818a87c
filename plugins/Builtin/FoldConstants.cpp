//===- FoldConstants.cpp - Ops of constant operands become constants ------===//
//
// Exact. Every node the op table's fold hooks fold (qopt/IR/ConstantFolding.h)
// becomes a constant that keeps its result's name; nodes its results fed
// are inferred again, so shapes computed at run time become static:
//
//   %s = onnx.Shape(%x)                 : tensor<4xi64>
//   %c = onnx.Gather(%s, %one) {axis = 0}             %c = onnx.Constant()
//   %h = onnx.Div(%c, %two)              =>                 {value =
//   dense<[32]>} %y = onnx.Slice(%x, %zero, %h, %one) : <?x?x..>   %y =
//   onnx.Slice(...) : <1x32x..>
//
// The importer already folds what an ONNX file holds; the pass folds what
// other passes or a .qir text leave. Option: max-elements=N, the largest
// result it materialises (default 1,048,576 elements).
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/ConstantFolding.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Support/Error.h"

using namespace qopt;

static constexpr llvm::StringLiteral kFoldConstantsPass = "fold-constants";

llvm::Expected<FoldConstantsPass>
FoldConstantsPass::parse(llvm::StringRef params) {
  auto kv = parsePassParams(kFoldConstantsPass, params, {"max-elements"});
  if (!kv)
    return kv.takeError();
  FoldConstantsPass pass;
  auto it = kv->find("max-elements");
  if (it != kv->end() &&
      (llvm::StringRef(it->second).getAsInteger(10, pass.maxElements) ||
       pass.maxElements < 0))
    return makeError("invalid max-elements '" + it->second +
                     "' for 'fold-constants'; expected a non-negative "
                     "integer");
  return pass;
}

void FoldConstantsPass::printPipeline(llvm::raw_ostream &os) const {
  os << kFoldConstantsPass;
  if (maxElements != FoldOptions().maxElements)
    os << "<max-elements=" << maxElements << ">";
}

PreservedAnalyses FoldConstantsPass::run(Graph &g, AnalysisManager &am) {
  FoldOptions options;
  options.maxElements = maxElements;
  auto folded = foldConstants(g, options);
  if (!folded) {
    // Re-inference found a node that does not fit its folded operands: the
    // graph was inconsistent before; the verifier after the pass says where.
    if (PassInstrumentation *pi = am.getInstrumentation())
      pi->reportError(folded.takeError());
    else
      llvm::consumeError(folded.takeError());
    return PreservedAnalyses::none();
  }
  return *folded ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

//===- ChannelShuffleToGather.cpp - A channel shuffle as one Gather -------===//
//
// Exact. ShuffleNet's channel shuffle (torchvision's channel_shuffle,
// exported as view, transpose, view) permutes the channels of an NCHW
// tensor through a 5-D tensor:
//
//   %a = onnx.Reshape(%x, %s1) : tensor<1x2x24x28x28xf32>   x: 1x48x28x28
//   %b = onnx.Transpose(%a) {perm = [0, 2, 1, 3, 4]} : tensor<1x24x2x28x28xf32>
//   %y = onnx.Reshape(%b, %s2) : tensor<1x48x28x28xf32>
//   =>
//   %y = onnx.Gather(%x, %idx) {axis = 1}   idx[c * G + g] = g * (C / G) + c
//
// Channel c * G + g of the result is channel g * (C / G) + c of x. One 4-D
// op picking channels is what a backend that keeps channels innermost
// (qopt's CPU plan: NHWC) runs as a copy of each pixel's channels, where
// the 5-D transpose needs the tensor in NCHW. The intermediate values must
// have no other reader; the result keeps the last Reshape's type and the
// Gather its name.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/QdqUtils.h"

using namespace qopt;

namespace {

struct ShuffleToGather : RewritePattern {
  ShuffleToGather()
      : RewritePattern(ops::Reshape, 1, "channel-shuffle-to-gather") {}
  bool matchAndRewrite(Node &outer, PatternRewriter &r) const override {
    Value *shuffled = outer.getOperand(0);
    Node *transpose = shuffled ? shuffled->getDefiningNode() : nullptr;
    if (!transpose || !transpose->isa(ops::Transpose) ||
        !shuffled->hasOneUse() || PatternRewriter::mustKeepName(*shuffled) ||
        getIntsAttrOr(*transpose, "perm") !=
            std::vector<int64_t>{0, 2, 1, 3, 4})
      return false;
    Value *grouped = transpose->getOperand(0);
    Node *inner = grouped ? grouped->getDefiningNode() : nullptr;
    if (!inner || !inner->isa(ops::Reshape) || !grouped->hasOneUse() ||
        PatternRewriter::mustKeepName(*grouped))
      return false;
    Value *x = inner->getOperand(0);
    auto xDims = x->getType()->getStaticDims();
    auto gDims = grouped->getType()->getStaticDims();
    auto yDims = outer.getResult()->getType()->getStaticDims();
    if (!xDims || !gDims || !yDims || xDims->size() != 4 ||
        gDims->size() != 5 || *yDims != *xDims)
      return false;
    int64_t channels = (*xDims)[1], groups = (*gDims)[1],
            perGroup = (*gDims)[2];
    if (groups < 1 || perGroup < 1 || groups * perGroup != channels ||
        (*gDims)[0] != (*xDims)[0] || (*gDims)[3] != (*xDims)[2] ||
        (*gDims)[4] != (*xDims)[3])
      return false;
    std::vector<int64_t> indices(channels);
    for (int64_t c = 0; c < perGroup; ++c)
      for (int64_t g = 0; g < groups; ++g)
        indices[c * groups + g] = g * perGroup + c;
    Context &ctx = r.getGraph().getContext();
    Value *idx = createConstant(
        r, *quant::makeDenseInt(ElementKind::I64, {channels}, indices),
        ctx.getElementType(ElementKind::I64), "channel_shuffle_indices");
    Node *gather =
        r.create(ops::Gather, {x, idx}, {{outer.getResult()->getType(), ""}},
                 {{"axis", Attribute(int64_t(1))}}, outer.getName().str());
    r.replaceNode(outer, {gather->getResult()});
    r.eraseNode(*transpose);
    r.eraseNode(*inner);
    return true;
  }
};

} // namespace

PreservedAnalyses ChannelShuffleToGatherPass::run(Graph &g, AnalysisManager &) {
  PatternList patterns;
  patterns.push_back(std::make_unique<ShuffleToGather>());
  GreedyRewriteResult result = applyPatternsGreedily(g, patterns);
  return result.changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

//===- FusionShapes.cpp - What the fusion rules read off shapes -----------===//
//
// Multiply-accumulates of the weighted ops (the INT8 share of the summary)
// and NVIDIA Model Optimizer's rule for the convs and GEMMs that TensorRT
// leaves in float.
//
//===----------------------------------------------------------------------===//

#include "FusionPlanner.h"

#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"

using namespace qopt;

static int64_t staticElements(const Value *v) {
  const TensorType *t = v->getType();
  if (!t->hasRank())
    return 0;
  int64_t n = 1;
  for (const Dim &d : t->getShape()) {
    if (!d.isStatic())
      return 0;
    n *= d.size;
  }
  return n;
}

int64_t qopt::countMacs(const Node &n) {
  if (n.getNumOperands() < 2)
    return 0;
  // MatMulNBits: every output element sums K products (the attribute; B is
  // the packed codes).
  if (n.isa(ops::MsMatMulNBits))
    return staticElements(n.getResult()) * getIntAttrOr(n, "K", 0);
  const Value *x = n.getOperand(0), *w = n.getOperand(1);
  const TensorType *wt = w->getType();
  if (!wt->hasRank() || !wt->hasStaticShape())
    return 0;
  auto wdims = wt->getShape();
  bool conv = n.isa(ops::Conv) || n.isa(ops::QConv);
  bool convTranspose = n.isa(ops::ConvTranspose) || n.isa(ops::QConvTranspose);
  bool gemm = n.isa(ops::Gemm) || n.isa(ops::QGemm);
  bool matmul =
      n.isa(ops::MatMul) || n.isa(ops::QMatmul) || n.isa(ops::MatMulInteger) ||
      n.isa(ops::MsMatMulIntegerToFloat) || n.isa(ops::MsDynamicQuantizeMatMul);
  conv = conv || n.isa(ops::ConvInteger);
  if (conv) {
    // Every output element: (C/group) * prod(kernel) products.
    int64_t perOutput = 1;
    for (size_t i = 1; i < wdims.size(); ++i)
      perOutput *= wdims[i].size;
    return staticElements(n.getResult()) * perOutput;
  }
  if (convTranspose) {
    // Every input element is scattered through (M/group) * prod(kernel).
    int64_t perInput = 1;
    for (size_t i = 1; i < wdims.size(); ++i)
      perInput *= wdims[i].size;
    return staticElements(x) * perInput;
  }
  if (gemm || matmul) {
    // Every output element: K products, K the shared dimension.
    const TensorType *xt = x->getType();
    if (!xt->hasRank() || xt->getRank() < 1)
      return 0;
    int64_t k = gemm && getIntAttrOr(n, "transA", 0)
                    ? xt->getShape().front().size
                    : xt->getShape().back().size;
    return k > 0 ? staticElements(n.getResult()) * k : 0;
  }
  return 0;
}

namespace qopt {
namespace fusion {

/// NVIDIA Model Optimizer's ONNX quantizer leaves these weighted ops in
/// float for TensorRT, which has no INT8 kernel that pays off for them
/// (modelopt/onnx/quantization/graph_utils.py,
/// find_nodes_from_convs_to_exclude and the MatMul/Gemm K/N check):
/// - Conv with fewer than 16 output or input channels (weight dims 0 and
///   1), unless: group 1, one of them a multiple of 8, the other >= 16 (or
///   the Conv reads a graph input) and a square kernel; or grouped with
///   output channels a multiple of 8 and every kernel dim >= 3.
/// - Gemm/MatMul with N or K below 16.
/// Returns the reason, or empty when the op gets an INT8 kernel.
std::string whyTooSmallForInt8(const Node &n) {
  const TensorType *wt = n.getOperand(1)->getType();
  if (!wt->hasRank() || wt->getRank() < 2 || !wt->hasStaticShape())
    return {};
  auto dims = wt->getShape();
  if (n.isa(ops::Conv)) {
    int64_t oc = dims[0].size, ic = dims[1].size;
    if (oc >= 16 && ic >= 16)
      return {};
    int64_t group = getIntAttrOr(n, "group", 1);
    std::vector<int64_t> kernel;
    for (size_t i = 2; i < dims.size(); ++i)
      kernel.push_back(dims[i].size);
    bool square = std::all_of(kernel.begin(), kernel.end(),
                              [&](int64_t k) { return k == kernel.front(); });
    bool readsInput = n.getOperand(0)->isGraphInput();
    if (group == 1 && (oc % 8 == 0 || ic % 8 == 0) &&
        (readsInput || oc >= 16 || ic >= 16) && square)
      return {};
    if (group > 1 && oc % 8 == 0 &&
        std::all_of(kernel.begin(), kernel.end(),
                    [](int64_t k) { return k >= 3; }))
      return {};
    return std::to_string(ic) + " input / " + std::to_string(oc) +
           " output channels (per group): Model Optimizer leaves such convs "
           "in float for TensorRT (fewer than 16 channels without the "
           "multiple-of-8 exceptions)";
  }
  if (n.isa(ops::Gemm) || n.isa(ops::MatMul)) {
    bool transB = n.isa(ops::Gemm) && getIntAttrOr(n, "transB", 0);
    int64_t k = transB ? dims.back().size : dims[dims.size() - 2].size;
    const TensorType *yt = n.getResult()->getType();
    int64_t nn =
        yt->hasRank() && yt->getRank() >= 2 ? yt->getShape().back().size : 0;
    if ((k > 0 && k < 16) || (nn > 0 && nn < 16))
      return "K " + std::to_string(k) + ", N " + std::to_string(nn) +
             ": Model Optimizer leaves GEMMs with K or N below 16 in float "
             "for TensorRT";
  }
  return {};
}

} // namespace fusion
} // namespace qopt

//===- ToUint8Activations.cpp - int8 activations as uint8 -----------------===//
//
// Exact. ONNX Runtime's CPU kernels (QLinearConv, QLinearMatMul, QLinearAdd,
// ...) are fastest with uint8 activations and int8 weights; TensorRT-style
// exports use int8 activations. Shifting the stored integers by 128 keeps
// every dequantized value:
//
//   DQ_u8(q + 128; zp + 128) = (q + 128 - zp - 128) * s = DQ_i8(q; zp)
//   Q_u8(x; zp + 128)        = Q_i8(x; zp) + 128        (saturation included)
//
//   %q = q.quantize(%x) : !quant.uniform<i8:f32, 0.05>
//   =>
//   %q = q.quantize(%x) : !quant.uniform<u8:f32, 0.05:128>
//
// The whole stored region moves together (the Q, data-movement ops and
// MaxPool on the integers, Concat inputs, up to the DQs and requantizes
// that read it); a requantize producing int8 becomes uint8 too. Regions
// that touch a graph input or output, a constant (weights stay int8),
// per-axis parameters or an op reading the integers are left alone.
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/Passes/QdqUtils.h"

#include "llvm/ADT/SmallPtrSet.h"

using namespace qopt;

PreservedAnalyses ToUint8ActivationsPass::run(Graph &g, AnalysisManager &) {
  PatternRewriter r(g);
  Context &ctx = g.getContext();
  llvm::SmallPtrSet<Value *, 16> done;
  bool changed = false;
  std::vector<Value *> starts;
  for (Node &n : g.getNodes())
    if ((isActivationQuantize(n) || n.isa(ops::QRequantize)) &&
        getStoredQuantType(n.getResult())->getStorageKind() == ElementKind::I8)
      starts.push_back(n.getResult());
  for (Value *start : starts) {
    if (done.count(start))
      continue;
    StoredRegion region = collectStoredRegion(start);
    done.insert(region.values.begin(), region.values.end());
    const QuantType *q = getStoredQuantType(start);
    if (!region.blocker.empty() || q->isPerAxis())
      continue;
    bool allActivations = llvm::all_of(region.producers, [](Node *p) {
      return p->isa(ops::QRequantize) || isActivationQuantize(*p);
    });
    if (!allActivations)
      continue;
    const QuantType *u8 = withParams(ctx, q, ElementKind::U8, q->getScales(),
                                     {q->getZeroPoint() + 128});
    retypeRegion(r, region, u8);
    changed = true;
  }
  return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

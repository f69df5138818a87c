//===- RescalePlugin.cpp - Test plugin whose pass changes Q/DQ scales -----===//
//
// `double-q-scales` doubles the scale of every q.quantize result by changing
// the result's type and nothing else: the quantized type is the one source
// of truth, so the q.dequantize reading the value follows, -verify-each
// passes and export writes the new scale.
//
//   %q = q.quantize(%x) : tensor<4x!quant.uniform<u8:f32, 0.05:128>>
//   =>
//   %q = q.quantize(%x) : tensor<4x!quant.uniform<u8:f32, 0.1:128>>
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/Passes/PassPlugin.h"
#include "qopt/Passes/PassRegistry.h"

using namespace qopt;

namespace {
struct DoubleQuantizeScalesPass : PassInfoMixin<DoubleQuantizeScalesPass> {
  PreservedAnalyses run(Graph &g, AnalysisManager &) {
    bool changed = false;
    Context &ctx = g.getContext();
    for (Node &n : g.getNodes()) {
      if (!n.isa(ops::QQuantize))
        continue;
      Value *r = n.getResult();
      const QuantType *q = r->getType()->getQuantType();
      std::vector<float> scales(q->getScales().begin(), q->getScales().end());
      for (float &s : scales)
        s *= 2;
      std::optional<int64_t> axis;
      if (q->isPerAxis())
        axis = q->getAxis();
      r->setType(r->getType()->withElementType(
          ctx.getQuantType(q->getStorageKind(), q->getExpressedKind(), axis,
                           scales, q->getZeroPoints())));
      changed = true;
    }
    return changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
  }
};
} // namespace

extern "C" QOPT_PLUGIN_EXPORT QoptPassPluginInfo qoptGetPassPluginInfo() {
  return {QOPT_PLUGIN_API_VERSION, "rescale-test", "0", [](PassRegistry &r) {
            r.registerPass<DoubleQuantizeScalesPass>(
                "double-q-scales", "doubles every Q's scale (test)");
          }};
}

//===- ScaleAnalysis.h - Quantization parameters of every tensor -*- C++
//-*-===//
//
// For every value: the quantized type it is stored in or lies on. A float
// value produced by q.dequantize lies on its operand's grid; data-movement
// ops that commute with per-tensor quantization (Reshape, Flatten,
// Transpose, Squeeze, Unsqueeze, Slice, Split, Gather, Identity, MaxPool,
// nearest Resize, constant Pad, Concat of equal parameters) pass it on.
//
//   %d = q.dequantize(%x)            %d: !quant.uniform<u8:f32, 0.05:128> (from
//   %x) %t = onnx.Transpose(%d)          %t: same (from %x)
//
// Per-axis parameters stop at ops that move axes (not remapped yet).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PASSES_SCALEANALYSIS_H
#define QOPT_PASSES_SCALEANALYSIS_H

#include "qopt/Passes/PassManager.h"

#include "llvm/ADT/DenseMap.h"

namespace qopt {

class QuantType;
class Value;

struct ScaleInfo {
  const QuantType *quant = nullptr;
  /// The quantized value the parameters come from.
  const Value *source = nullptr;
};

class ScaleAnalysis : public AnalysisInfoMixin<ScaleAnalysis> {
public:
  struct Result {
    const Graph *graph = nullptr;
    llvm::DenseMap<const Value *, ScaleInfo> info;
    const ScaleInfo *lookup(const Value *v) const {
      auto it = info.find(v);
      return it == info.end() ? nullptr : &it->second;
    }
    void print(llvm::raw_ostream &os) const;
  };
  Result run(Graph &g, AnalysisManager &am);
  static AnalysisKey Key;
};

} // namespace qopt

#endif // QOPT_PASSES_SCALEANALYSIS_H

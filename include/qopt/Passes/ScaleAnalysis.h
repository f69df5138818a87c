//===- ScaleAnalysis.h - Quantization grids of every tensor -----*- C++ -*-===//
//
// For every value: the quantization grid it is stored on or lies on, and
// where propagation stops, why.
//
// Forward (DQ side): a value stored quantized carries its type's grid; the
// result of q.dequantize lies on its operand's grid, and data-movement and
// monotonic ops (op table traits) pass the grid on, remapping a per-axis
// axis through the op (Transpose permutes it, Reshape keeps it when its
// dimension survives).
//
//   %d = q.dequantize(%x)            %d: grid of %x
//   %t = onnx.Transpose(%d)          %t: grid of %x (axis remapped)
//   %c = onnx.Conv(%t, %w)           %c: stops, Conv computes new values
//
// Backward (Q side): the operand of q.quantize will be put on the Q's grid,
// and so will the data operand of a data-movement op whose result is.
//
// Pad passes a grid on only when its constant value lies on it; Resize only
// in nearest mode; Concat, Max and Min only when all inputs share one grid;
// Clip only when its bounds lie on it. Results that are not the data (the
// Indices of MaxPool) get no grid.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PASSES_SCALEANALYSIS_H
#define QOPT_PASSES_SCALEANALYSIS_H

#include "qopt/Passes/PassManager.h"

#include "llvm/ADT/DenseMap.h"

#include <string>

namespace qopt {

class QuantType;
class Value;

struct ScaleInfo {
  const QuantType *quant = nullptr;
  /// The quantized value the grid comes from (forward) or the Q result the
  /// value will be quantized into (backward).
  const Value *source = nullptr;
};

class ScaleAnalysis : public AnalysisInfoMixin<ScaleAnalysis> {
public:
  struct Result {
    const Graph *graph = nullptr;
    /// Grids known from the quantized values upstream (DQ side).
    llvm::DenseMap<const Value *, ScaleInfo> forward;
    /// Grids a downstream Q will put the value on (Q side).
    llvm::DenseMap<const Value *, ScaleInfo> backward;
    /// Why a value next to quantized data has no forward grid.
    llvm::DenseMap<const Value *, std::string> stops;

    const ScaleInfo *lookup(const Value *v) const {
      auto it = forward.find(v);
      return it == forward.end() ? nullptr : &it->second;
    }
    const ScaleInfo *lookupBackward(const Value *v) const {
      auto it = backward.find(v);
      return it == backward.end() ? nullptr : &it->second;
    }
    /// Empty when the value has a grid or is not next to quantized data.
    llvm::StringRef whyStopped(const Value *v) const {
      auto it = stops.find(v);
      return it == stops.end() ? llvm::StringRef() : it->second;
    }
    void print(llvm::raw_ostream &os) const;
  };
  Result run(Graph &g, AnalysisManager &am);
  static AnalysisKey Key;
};

} // namespace qopt

#endif // QOPT_PASSES_SCALEANALYSIS_H

//===- OpInfo.cpp - What the IR knows about ops ---------------------------===//

#include "qopt/IR/OpInfo.h"

#include "llvm/ADT/StringMap.h"

using namespace qopt;

static const OpInfo kOpInfos[] = {
    // q.quantize(x [, scale, zero_point]): the optional operands are the ONNX
    // initializers the parameters came from; the result type is authoritative.
    {"q.quantize", 1, 3, 1, 1, "float -> quantized (ONNX QuantizeLinear)"},
    {"q.dequantize", 1, 3, 1, 1, "quantized -> float (ONNX DequantizeLinear)"},
    {"q.requantize", 1, 1, 1, 1, "quantized -> quantized with new parameters"},
    {"onnx.Constant", 0, 0, 1, 1, "constant tensor (also ONNX initializers)"},
    {"onnx.Identity", 1, 1, 1, 1, "copy"},
    {"onnx.Relu", 1, 1, 1, 1, "max(x, 0)"},
    {"onnx.Sigmoid", 1, 1, 1, 1, "logistic function"},
    {"onnx.Add", 2, 2, 1, 1, "elementwise sum"},
    {"onnx.Mul", 2, 2, 1, 1, "elementwise product"},
    {"onnx.Conv", 2, 3, 1, 1, "convolution"},
    {"onnx.MatMul", 2, 2, 1, 1, "matrix product"},
    {"onnx.Gemm", 2, 3, 1, 1, "general matrix product"},
    {"onnx.Concat", 1, ~0u, 1, 1, "concatenation"},
    {"onnx.Transpose", 1, 1, 1, 1, "permutation of axes"},
    {"onnx.Reshape", 2, 2, 1, 1, "reshape"},
    {"onnx.Flatten", 1, 1, 1, 1, "flatten to 2-D"},
    {"onnx.MaxPool", 1, 1, 1, 2, "max pooling"},
    {"onnx.QuantizeLinear", 2, 3, 1, 1, "ONNX Q with non-constant parameters"},
    {"onnx.DequantizeLinear", 2, 3, 1, 1,
     "ONNX DQ with non-constant parameters"},
};

const OpInfo *qopt::lookupOpInfo(llvm::StringRef op) {
  static const llvm::StringMap<const OpInfo *> table = [] {
    llvm::StringMap<const OpInfo *> m;
    for (const OpInfo &info : kOpInfos)
      m[info.name] = &info;
    return m;
  }();
  auto it = table.find(op);
  return it == table.end() ? nullptr : it->second;
}

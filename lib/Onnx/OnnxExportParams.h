//===- OnnxExportParams.h - Q/DQ parameters for export ----------*- C++ -*-===//
//
// Private to lib/Onnx: whether every quantized value's parameters reach the
// file, and the tensors export writes for the parameters a quantized type
// holds (scale, zero point, and a two-level scale's codes and scale of the
// scales). Where they go and under which names is the exporter's.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_ONNX_ONNXEXPORTPARAMS_H
#define QOPT_LIB_ONNX_ONNXEXPORTPARAMS_H

#include "qopt/IR/Types.h"

#include "llvm/Support/Error.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/ArrayRef.h"

namespace qopt {
class Graph;
namespace onnxbridge {

/// ONNX has no quantized tensor types: a value's parameters reach the file
/// only through a QuantizeLinear writing it or a DequantizeLinear reading
/// it, possibly across data movement. Anything else would be written as
/// plain integers with its parameters lost: an error naming the value.
llvm::Error checkQuantParamsRecorded(const Graph &g);

/// The scale (or zero-point) tensor of `q`: one value per channel or block
/// (shape `blockedDims` for a block-wise type), else `rank` dims of 1.
onnx::TensorProto quantParamTensor(const QuantType *q, bool zeroPoint, int rank,
                                   llvm::ArrayRef<int64_t> blockedDims);
/// A two-level type's scale codes, shaped as quantParamTensor's scales.
onnx::TensorProto scaleCodesTensor(const QuantType *q,
                                   llvm::ArrayRef<int64_t> blockedDims);
/// The +0 code of a two-level type's scale kind: the zero point of the
/// scales' DequantizeLinear, `rank` dims of 1.
onnx::TensorProto scaleZeroPointTensor(const QuantType *q, int rank);
/// A two-level type's scale of the scales, in its expressed kind, `rank`
/// dims of 1.
onnx::TensorProto scaleOfScalesTensor(const QuantType *q, int rank);

} // namespace onnxbridge
} // namespace qopt

#endif

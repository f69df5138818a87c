//===- OpImpl.h - Functions the op table refers to --------------*- C++ -*-===//
//
// Private to lib/IR: the inference, axis-remap, weight and verify functions
// named in qopt/IR/Ops.def, and helpers they share.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_IR_OPIMPL_H
#define QOPT_LIB_IR_OPIMPL_H

#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"

namespace qopt {
namespace opimpl {

using Shape = std::vector<Dim>;

// Inference functions (ShapeInference*.cpp).
#define QOPT_DECLARE_INFER(FN) llvm::Error FN(InferenceContext &ctx);
QOPT_DECLARE_INFER(inferSameShape)
QOPT_DECLARE_INFER(inferBroadcast)
QOPT_DECLARE_INFER(inferCast)
QOPT_DECLARE_INFER(inferEyeLike)
QOPT_DECLARE_INFER(inferQuantize)
QOPT_DECLARE_INFER(inferDequantize)
QOPT_DECLARE_INFER(inferRequantize)
QOPT_DECLARE_INFER(inferConstant)
QOPT_DECLARE_INFER(inferConstantOfShape)
QOPT_DECLARE_INFER(inferShapeOp)
QOPT_DECLARE_INFER(inferSize)
QOPT_DECLARE_INFER(inferRange)
QOPT_DECLARE_INFER(inferReshape)
QOPT_DECLARE_INFER(inferFlatten)
QOPT_DECLARE_INFER(inferTranspose)
QOPT_DECLARE_INFER(inferSqueeze)
QOPT_DECLARE_INFER(inferUnsqueeze)
QOPT_DECLARE_INFER(inferSlice)
QOPT_DECLARE_INFER(inferSplit)
QOPT_DECLARE_INFER(inferConcat)
QOPT_DECLARE_INFER(inferGather)
QOPT_DECLARE_INFER(inferGatherElements)
QOPT_DECLARE_INFER(inferGatherND)
QOPT_DECLARE_INFER(inferExpand)
QOPT_DECLARE_INFER(inferTile)
QOPT_DECLARE_INFER(inferPad)
QOPT_DECLARE_INFER(inferResize)
QOPT_DECLARE_INFER(inferDepthToSpace)
QOPT_DECLARE_INFER(inferSpaceToDepth)
QOPT_DECLARE_INFER(inferNonZero)
QOPT_DECLARE_INFER(inferOneHot)
QOPT_DECLARE_INFER(inferReduce)
QOPT_DECLARE_INFER(inferArgReduce)
QOPT_DECLARE_INFER(inferConv)
QOPT_DECLARE_INFER(inferConvTranspose)
QOPT_DECLARE_INFER(inferGemm)
QOPT_DECLARE_INFER(inferMatMul)
QOPT_DECLARE_INFER(inferPool)
QOPT_DECLARE_INFER(inferGlobalPool)
QOPT_DECLARE_INFER(inferBatchNorm)
QOPT_DECLARE_INFER(inferLayerNorm)
QOPT_DECLARE_INFER(inferQuantizeLinear)
QOPT_DECLARE_INFER(inferDequantizeLinear)
QOPT_DECLARE_INFER(inferDynamicQuantizeLinear)
QOPT_DECLARE_INFER(inferQLinearConv)
QOPT_DECLARE_INFER(inferQLinearMatMul)
QOPT_DECLARE_INFER(inferConvInteger)
QOPT_DECLARE_INFER(inferMatMulInteger)
QOPT_DECLARE_INFER(inferMatMulNBits)
QOPT_DECLARE_INFER(inferFusedPool)
#undef QOPT_DECLARE_INFER

// Fold hooks (FoldHooks.cpp).
#define FOLD(OPNAME, FN) bool FN(FoldContext &ctx);
#define OP(ID, NAME, SINCE, SIG, CONSTRAINTS, TRAITS, INFER, REMAP, SUMMARY)
#include "qopt/IR/Ops.def"

// Per-axis quantization through data movement (ShapeInferenceMovement.cpp).
// `in`/`out` are operand 0's and the result's shapes.
llvm::Expected<int64_t> remapSameAxis(const Node &n, int64_t axis,
                                      llvm::ArrayRef<Dim> in,
                                      llvm::ArrayRef<Dim> out);
llvm::Expected<int64_t> remapReshape(const Node &n, int64_t axis,
                                     llvm::ArrayRef<Dim> in,
                                     llvm::ArrayRef<Dim> out);
llvm::Expected<int64_t> remapTranspose(const Node &n, int64_t axis,
                                       llvm::ArrayRef<Dim> in,
                                       llvm::ArrayRef<Dim> out);
llvm::Expected<int64_t> remapGather(const Node &n, int64_t axis,
                                    llvm::ArrayRef<Dim> in,
                                    llvm::ArrayRef<Dim> out);
llvm::Expected<int64_t> remapBroadcast(const Node &n, int64_t axis,
                                       llvm::ArrayRef<Dim> in,
                                       llvm::ArrayRef<Dim> out);
llvm::Expected<int64_t> remapSlice(const Node &n, int64_t axis,
                                   llvm::ArrayRef<Dim> in,
                                   llvm::ArrayRef<Dim> out);
llvm::Expected<int64_t> remapPad(const Node &n, int64_t axis,
                                 llvm::ArrayRef<Dim> in,
                                 llvm::ArrayRef<Dim> out);
llvm::Expected<int64_t> remapBatchOnly(const Node &n, int64_t axis,
                                       llvm::ArrayRef<Dim> in,
                                       llvm::ArrayRef<Dim> out);
llvm::Expected<int64_t> remapPool(const Node &n, int64_t axis,
                                  llvm::ArrayRef<Dim> in,
                                  llvm::ArrayRef<Dim> out);
llvm::Expected<int64_t> remapResize(const Node &n, int64_t axis,
                                    llvm::ArrayRef<Dim> in,
                                    llvm::ArrayRef<Dim> out);

// Weighted ops.
std::optional<WeightInfo> convWeight(const Node &n);
std::optional<WeightInfo> convTransposeWeight(const Node &n);
std::optional<WeightInfo> gemmWeight(const Node &n);
std::optional<WeightInfo> matMulWeight(const Node &n);

// Extra checks (OpVerify.cpp).
llvm::Error verifyQuantize(const Node &n);
llvm::Error verifyDequantize(const Node &n);
llvm::Error verifyRequantize(const Node &n);
llvm::Error verifyFusedUnit(const Node &n);
llvm::Error verifySplit(const Node &n);
llvm::Error verifyResize(const Node &n);

//===--- Shared helpers ---------------------------------------------------===//

/// Largest size inference computes from a float (Resize scales, OneHot
/// depth, Range counts): beyond it the value is an error, not a cast.
constexpr double kMaxInferredDim = double(int64_t(1) << 40);

llvm::Error nodeError(const Node &n, const llvm::Twine &msg);
/// Normalises an axis in [-rank, rank) to [0, rank), or fails.
llvm::Expected<int64_t> normalizeAxis(InferenceContext &ctx, int64_t axis,
                                      int64_t rank, llvm::StringRef what);
/// Operand i's shape as text ("unranked" without a rank), for errors.
std::string operandShapeText(InferenceContext &ctx, unsigned i);
/// Checks a QLinear* scale or zero point operand i: one value, or (perAxis
/// gives the channel count) one per channel; a scalar or 1-D. With
/// `axisFromEnd` (QLinearMatMul's a: 2, b: 1), a higher rank is that of its
/// operand's values too, its other dims 1 (ShapeInference.cpp).
llvm::Error checkQLinearParam(InferenceContext &ctx, unsigned i,
                              llvm::StringRef name,
                              std::optional<Dim> perAxis = {},
                              llvm::StringRef axisName = "",
                              size_t axisFromEnd = 0);
/// Multidirectional (numpy) broadcast of two shapes.
llvm::Expected<Shape> broadcastShapes(InferenceContext &ctx,
                                      llvm::ArrayRef<Dim> a,
                                      llvm::ArrayRef<Dim> b);
/// Product of the static dims, nullopt if any is dynamic (or overflows).
std::optional<int64_t> staticProduct(llvm::ArrayRef<Dim> dims);
Shape staticShape(llvm::ArrayRef<int64_t> dims);
/// Output size of a sliding window (conv and pooling).
llvm::Expected<Shape> slidingWindowShape(InferenceContext &ctx,
                                         llvm::ArrayRef<Dim> input,
                                         llvm::ArrayRef<int64_t> kernel,
                                         Dim channels, bool ceilMode);

} // namespace opimpl
} // namespace qopt

#endif // QOPT_LIB_IR_OPIMPL_H

//===- PlanBuilderImpl.h - The plan builder's state -------------*- C++ -*-===//
//
// Private to lib/CodeGen. The builder walks the graph in order and gives
// each node a step; the lowering of each kind of step lives in its own file:
//
//   PlanBuilder.cpp      tensors, layouts and reformats, float steps, the
//                        arena (constants are folded in the graph before,
//                        by qopt/IR/ConstantFolding.h)
//   LowerConv.cpp        q.conv, q.conv_transpose -> int8 conv step; what
//                        every weighted unit's int8 step needs
//   LowerGemm.cpp        q.gemm, q.matmul -> int8 gemm step
//   LowerDataSteps.cpp   elementwise int8 ops -> table steps, elementwise
//                        float ops on NHWC operands, channel Concat/Split
//                        and q.concat ->
//                        channel copy step,
//                        q.quantize of f32 -> quantize step
//   LowerPool.cpp        MaxPool -> max pool step, q.pool (average) ->
//                        average pool step
//
// Lowerings.def says which lowering each op tries. Each returns false (no
// step added) when its step cannot run the node as it is; the node then runs
// as a float step.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_CODEGEN_PLANBUILDERIMPL_H
#define QOPT_LIB_CODEGEN_PLANBUILDERIMPL_H

#include "qopt/CodeGen/PlanBuilder.h"
#include "qopt/IR/Graph.h"
#include "qopt/Plan/Steps.h"
#include "qopt/Support/Error.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace qopt {
namespace codegen {

using qopt::makeError;

/// Whether `kind` is one of the byte-wide integer kinds (i8, u8) the int8
/// steps store.
inline bool isByteInteger(ElementKind kind) {
  return kind == ElementKind::I8 || kind == ElementKind::U8;
}

/// A weighted unit (q.conv, q.conv_transpose, q.gemm, q.matmul) as the
/// int8 steps take it: x and the residual on per-tensor int8 grids, the
/// weights a constant s8 or u8 tensor quantized per tensor or per output
/// channel, the result on an int8 grid or f32, an activation the epilogue
/// has.
struct WeightedUnit {
  const Value *x, *w, *bias, *residual, *y;
  const QuantType *xq, *wq, *yq, *rq;
  llvm::ArrayRef<int64_t> wDims;
  /// The weights as s8 (u8 ones - 128) and their zero points likewise, one
  /// per scale of wq (none when all are 0).
  std::vector<int8_t> weights;
  std::vector<int32_t> weightZeros;
  /// The input zero point, activation, residual and output grid; scales,
  /// biases and weight zero points per channel are the lowering's.
  kernels::Int8Epilogue epilogue;
};

/// Whether `centered` (a stored value minus its zero point) times each
/// scale of `q` stays finite in f32, as the reference's dequantize computes:
/// where it does not, the reference's sums hold inf or NaN that an int8
/// kernel's integer sums cannot reproduce, and the unit stays float.
bool isDequantizedFinite(const QuantType &q, int32_t centered);

/// A MatMul of f32 rows by the q.dequantize of a constant 4-bit weight that
/// an int4 weight-only gemm step runs (LowerInt4Gemm.cpp).
bool isInt4WeightOnlyMatMul(const Node &n);
/// A 4-bit weight's q.dequantize whose every reader is such a MatMul: kept
/// from folding, and lowered to no step.
bool keepsInt4Dequantize(const Node &dq);

/// A per-tensor s8/u8 grid over f32 (the int8 kernels' activations), or
/// null.
const QuantType *getActivationGrid(const Value *v);

/// The quantize steps' grid of per-tensor `q`, for a tensor stored with
/// `flip` (PlanTensor::getStoredFlip).
kernels::QuantizeGrid getQuantizeGrid(const QuantType &q, uint8_t flip);

/// `n` as a weighted unit with weights of `weightRank` dims quantized on
/// `channelAxis` if per axis, or none when an int8 step cannot run it.
std::optional<WeightedUnit> getWeightedUnit(const Node &n, int64_t weightRank,
                                            int64_t channelAxis);

/// The bias of a weighted unit per output column: `addend` (a constant,
/// quantized or f32) times `beta` when it holds one value or one per column
/// laid along its last axis, or none.
std::optional<std::vector<float>> getColumnBias(const Value *addend,
                                                int64_t columns, double beta);

class PlanBuilder {
public:
  PlanBuilder(const Model &model, const PlanBuildOptions &options,
              plan::Plan &plan);

  llvm::Error build();

private:
  llvm::Expected<interp::Shape> staticShape(const Value *v) const;
  int addTensor(std::string name, ElementKind kind, interp::Shape shape,
                plan::PlanLayout layout);
  /// The tensor holding `v` in `layout`, adding a reformat step if needed.
  llvm::Expected<int> tensorFor(const Value *v, plan::PlanLayout layout);
  /// A new home tensor for result `v`.
  llvm::Expected<int> defineResult(const Value *v, plan::PlanLayout layout,
                                   ElementKind kind);
  /// The layout `v` lives in now: its home's, or Onnx for a value not yet
  /// computed or constant.
  plan::PlanLayout homeLayout(const Value *v) const;
  /// Adds `step` reading `inputs` and writing `outputs`.
  void addStep(std::unique_ptr<plan::PlanStep> step, const Node &n,
               std::vector<int> inputs, std::vector<int> outputs);

  /// The static shapes of `values`, in order (staticShape's error for the
  /// first without one).
  llvm::Expected<std::vector<interp::Shape>>
  staticShapes(llvm::ArrayRef<const Value *> values) const;
  /// What lowering a single-result step takes: the tensors of `reads` in
  /// their layouts (tensorFor), a home for `result` in `resultLayout` as
  /// `resultKind` (defineResult), then the step `make` gives for that
  /// tensor, added reading and writing them. True, or the first error.
  llvm::Expected<bool>
  addStepFor(const Node &n,
             llvm::ArrayRef<std::pair<const Value *, plan::PlanLayout>> reads,
             const Value *result, plan::PlanLayout resultLayout,
             ElementKind resultKind,
             llvm::function_ref<
                 std::unique_ptr<plan::PlanStep>(const plan::PlanTensor &)>
                 make);

  /// n's lowering by its op (Lowerings.def), lowerTable for other ops.
  llvm::Expected<bool> lower(const Node &n);
  /// The lowerings: each adds its step and returns true, or returns false
  /// when its step cannot run `n`.
  llvm::Expected<bool> lowerConv(const Node &n);
  llvm::Expected<bool> lowerGemm(const Node &n);
  /// q.matmul of two int8 activations -> int8 matmul step (LowerGemm.cpp).
  llvm::Expected<bool> lowerActivationMatMul(const Node &n);
  /// Adds `step`, reading u's x (and residual) and writing its y in
  /// `layout`; false (nothing added) when the residual's shape is not y's.
  llvm::Expected<bool> addWeightedStep(const Node &n, const WeightedUnit &u,
                                       plan::PlanLayout layout,
                                       std::unique_ptr<plan::PlanStep> step);
  llvm::Expected<bool> lowerTable(const Node &n);
  llvm::Expected<bool> lowerMaxPool(const Node &n);
  /// q.pool's average modes on int8, AveragePool and GlobalAveragePool on
  /// f32 in NHWC (LowerPool.cpp).
  llvm::Expected<bool> lowerAveragePool(const Node &n);
  /// The f32 value of each stored byte (NHWC: s8 + 128) of a tensor on
  /// `xq`, from the reference's dequantize; false when it refuses.
  bool storedByteValues(const QuantType &xq, std::vector<float> &values);
  llvm::Expected<bool> lowerChannelCopy(const Node &n);
  /// Slice or Gather of channels of an NHWC tensor -> channel copy.
  llvm::Expected<bool> lowerChannelSelect(const Node &n);
  /// Nearest Resize/Upsample whose sampling is a pixel copy.
  llvm::Expected<bool> lowerResize(const Node &n);
  /// q.concat, or a Concat that is not a channel copy of NHWC tensors,
  /// along any axis in ONNX layout (a copy step's rows; operands that live
  /// in NHWC are reformatted first).
  llvm::Expected<bool> lowerConcatInOnnxLayout(const Node &n);
  /// Reshape, Flatten, Squeeze, Unsqueeze, Identity: the elements copied in
  /// ONNX layout.
  llvm::Expected<bool> lowerReshape(const Node &n);
  llvm::Expected<bool> lowerQuantize(const Node &n);
  /// DynamicQuantizeLinear: a dynamic quantize step (LowerDynamic.cpp).
  llvm::Expected<bool> lowerDynamicQuantize(const Node &n);
  /// MatMulIntegerToFloat and DynamicQuantizeMatMul: a dynamic int8 gemm
  /// step (after a dynamic quantize step of its own for the latter).
  llvm::Expected<bool> lowerDynamicGemm(const Node &n);
  /// MatMul by a 4-bit weight's q.dequantize: an int4 weight-only gemm step
  /// (LowerInt4Gemm.cpp).
  llvm::Expected<bool> lowerInt4Gemm(const Node &n);
  /// q.concat's table per operand from stored bytes to the result's (as
  /// stored in `layout`), or none when its kernel refuses; `axis` (>= 0)
  /// of a result of `rank` dimensions.
  std::optional<std::vector<std::vector<uint8_t>>>
  requantizeTables(const Node &n, llvm::ArrayRef<const Value *> sources,
                   const Value *whole, int64_t rank, int64_t axis,
                   plan::PlanLayout layout);
  /// n's reference kernel on `in`: its first result, or none when it
  /// refuses them.
  std::optional<interp::Tensor>
  runReferenceKernel(const Node &n, std::vector<interp::Tensor> in);
  /// Every node: the interpreter's kernel, on NHWC operands when the op is
  /// elementwise and they are NHWC.
  llvm::Error addFloatStep(const Node &n);
  /// Whether `v` is a constant of the graph.
  bool isConstant(const Value *v) const;
  /// Whether an elementwise `n` can read its operands as flat arrays of the
  /// result's layout: no per-axis parameters, every operand of the result's
  /// shape or a single element.
  bool isLayoutFreeElementwise(const Node &n) const;
  /// For an f32 Add, Sub, Mul or Div of a 4-D tensor and one of [N, C, 1,
  /// 1], the latter (the float step runs it in the former's layout).
  const Value *getChannelOperand(const Node &n) const;
  interp::KernelOp makeKernelOp(const Node &n);
  const QuantType *copyType(const QuantType *q);

  const Graph &graph;
  const PlanBuildOptions &options;
  plan::Plan &plan;
  int64_t opset;
  llvm::DenseMap<const Value *, int> home;
  llvm::DenseMap<const Value *, int> twin;
};

/// Steps reading each tensor of a plan, and whether the plan returns it.
struct Readers {
  explicit Readers(const plan::Plan &plan)
      : count(plan.tensors.size(), 0), isOutput(plan.tensors.size(), false) {
    for (const auto &s : plan.steps)
      for (int id : s ? s->inputs : std::vector<int>()) // null: removed
        if (id >= 0)
          ++count[id];
    for (int id : plan.outputs)
      isOutput[id] = true;
  }
  /// Whether `reads` reads are all of `id`'s and the plan does not return
  /// it.
  bool onlyReader(int id, unsigned reads) const {
    return count[id] == reads && !isOutput[id];
  }
  std::vector<unsigned> count;
  std::vector<bool> isOutput;
};

/// The step writing each tensor of a plan: its index, -1 where none does,
/// -2 where more than one does.
std::vector<int> findProducers(const plan::Plan &plan);

/// A copy step like `old` (name, op, rows) with `pieces`: its inputs the
/// pieces' sources, its outputs `outputs`.
std::unique_ptr<plan::ChannelCopyStep>
rebuildCopy(const plan::ChannelCopyStep &old,
            std::vector<plan::ChannelCopyStep::Piece> pieces,
            std::vector<int> outputs);

/// Table steps whose operand another table step writes for them alone,
/// composed into one table (FuseTables.cpp); before arena placement.
void fuseTableChains(plan::Plan &plan);
/// Table steps that read an int8 conv step's result alone, as the conv's
/// output table (one operand) or pair table (two, the other of the
/// result's shape) (FuseTables.cpp); after fuseTableChains.
void fuseTablesIntoConvs(plan::Plan &plan);
/// Float Relu steps whose operand an Add, Sub, Mul or Div float step
/// writes for them alone, done by that step (FuseFloatActivations.cpp);
/// before arena placement.
void fuseReluIntoFloatArithmetic(plan::Plan &plan);
/// Float Add steps of a dynamic int8 gemm step's result alone and one f32
/// per column (with their Relu), done by the gemm's epilogue
/// (FuseDynamicGemmBias.cpp); after fuseReluIntoFloatArithmetic.
void fuseBiasIntoDynamicGemms(plan::Plan &plan);
/// Quantize steps whose f32 operand a channel copy step writes, done by
/// the copy (FuseQuantize.cpp); before arena placement.
void fuseQuantizeIntoCopies(plan::Plan &plan);
/// Copy pieces reading channels another copy step wrote unchanged read
/// them from its source; parts nothing reads then go (ForwardCopies.cpp);
/// after fuseQuantizeIntoCopies.
void forwardCopiedChannels(plan::Plan &plan);
/// Every tensor's arena offset by liveness, and the arena's size
/// (AssignArena.cpp); the last plan pass.
void assignArena(plan::Plan &plan);
/// Reformats into ONNX layout feeding a last-axis Concat (through a
/// Reshape's copy or not) write into its result (PlaceReformats.cpp);
/// before arena placement.
void placeReformatsInConcats(plan::Plan &plan);

} // namespace codegen
} // namespace qopt

#endif // QOPT_LIB_CODEGEN_PLANBUILDERIMPL_H

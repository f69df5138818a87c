//===- FusionPlan.h - The node units a backend fuses, and what is left -*- C++
//-*-===//
//
// Predicts, for one backend, which groups of nodes run as one INT8 kernel
// ("units") and lists every place where the graph still leaves INT8
// ("leftovers"), each with its reason and the fix:
//
//   %d  = q.dequantize(%x)           ┐
//   %w  = q.dequantize(%w8)          │ unit #1 conv: Conv + Relu + Add,
//   %c  = onnx.Conv(%d, %w, %b)      │ reads %x (i8, 0.03) and %r (i8,
//   %a  = onnx.Relu(%c)              │ 0.05), writes %y (i8, 0.04)
//   %s  = onnx.Add(%a, %rd)          │
//   %y  = q.quantize(%s)             ┘
//   %e  = q.dequantize(%y)             leftover: reformat (int8 -> float)
//   %f  = onnx.Erf(%e)                 leftover: float island (Erf)
//
// The rules of each backend are a table (FusionRules.cpp) next to the
// documentation they come from: which ops anchor a weighted unit, which ops
// join its epilogue, which ops run on int8 by themselves, and the grid rules
// (zero point, per-tensor activations, storage types).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_FUSION_FUSIONPLAN_H
#define QOPT_FUSION_FUSIONPLAN_H

#include "qopt/Passes/PassManager.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace qopt {

class Graph;
class Node;
class PassRegistry;
class QuantType;
class Value;

//===----------------------------------------------------------------------===//
// Backend rules
//===----------------------------------------------------------------------===//

/// What a backend does with one op.
enum class OpRole : uint8_t {
  /// A weighted op that anchors a unit: [DQ x, DQ w] -> op -> epilogue -> Q.
  Weighted,
  /// Joins the epilogue of the unit before it (activation, BN, bias Add).
  Epilogue,
  /// An int8 op by itself: DQ on every data input -> op -> Q.
  Int8Op,
};

/// How a backend treats one op kind.
struct OpRule {
  llvm::StringLiteral op;
  OpRole role;
  /// Kind of the unit this op anchors ("conv", "add", ...): the q.* op that
  /// fuse<backend> creates is "q." + kind. Empty for epilogue-only ops.
  llvm::StringLiteral unitKind;
  /// The unit needs a Q on its output (else the op stays float).
  bool needsOutputQ = false;
  /// Also joins the epilogue of a weighted unit (Relu, Clip, ...).
  bool epilogue = false;
};

/// One backend's rule set.
struct BackendRules {
  llvm::StringLiteral name;  ///< "trt", "ort", "cpu"
  llvm::StringLiteral title; ///< "TensorRT (explicit quantization)"
  llvm::ArrayRef<OpRule> ops;
  /// Activations must have zero point 0 (symmetric).
  bool activationZeroPointZero = false;
  /// Storage types allowed for activations and for weights (TypeSet bits).
  uint32_t activationStorage = 0;
  uint32_t weightStorage = 0;
  /// Weights must have zero point 0.
  bool weightZeroPointZero = false;
  /// Q/DQ move through data movement and MaxPool (DQ forward, Q backward),
  /// so these run on int8 between units.
  bool propagatesThroughDataMovement = true;
  /// Concat requantizes its inputs itself (QLinearConcat); otherwise it is
  /// a copy and every input on another grid than the output is a
  /// requantize.
  bool concatRequantizes = false;
  /// A residual Add whose other input is int8 joins a weighted unit's
  /// epilogue; a SiLU (x * Sigmoid(x)) joins too.
  bool residualAddEpilogue = false;
  bool siluEpilogue = false;
  /// The residual Add joins even when its other input is float (TensorRT's
  /// Conv+Add fusion reads it in FP16/FP32); of two convs feeding the Add,
  /// the later in graph order takes it. A unit that ends in float reads its
  /// residual in float too, its DQ running on its own.
  bool floatResidualAddEpilogue = false;
  /// A MaxPool between a weighted unit and its output Q joins the unit
  /// (TensorRT's ConvActPool layer) instead of running as an int8 copy.
  bool maxPoolJoinsWeightedUnit = false;
  /// Qs of one tensor with equal parameters are one layer (TensorRT builds
  /// one Q; a second one is no second reformat).
  bool mergesEqualQuantizes = false;
  /// Convs with few or unaligned channels and GEMMs with small K or N stay
  /// float (TensorRT, following NVIDIA Model Optimizer's exclusion rules).
  bool smallShapesStayFloat = false;
  /// A weight's DQ moves forward through data movement on the weight (the
  /// Transpose torch.onnx writes for a Linear on 3-D input): the weighted
  /// op still reads an INT8 weight.
  bool weightDequantizeCrossesDataMovement = false;
  /// Attention (MatMul -> [scale] -> [mask Add] -> Softmax -> Q/DQ ->
  /// MatMul) with Q/DQ before the first MatMul, after the Softmax and after
  /// the second MatMul is one INT8 kernel within these head sizes and
  /// sequence lengths (0: not fused).
  llvm::ArrayRef<int64_t> int8AttentionHeadSizes;
  int64_t int8AttentionMaxSequence = 0;
  /// The GELU after a weighted op (Gelu, or x * 0.5 * (1 + Erf(x / sqrt2)))
  /// joins its epilogue.
  bool geluEpilogue = false;
  /// DynamicQuantizeLinear and the integer matmul/conv reading it (with the
  /// Cast -> Mul by a_scale x b_scale after it), and ONNX Runtime's
  /// com.microsoft DynamicQuantizeMatMul and MatMulIntegerToFloat, run as
  /// INT8 kernels (ONNX Runtime's x86 MatMulIntegerToFloat,
  /// DynamicQuantizeMatMul, ConvInteger).
  bool dynamicQuantization = false;
  /// With dynamicQuantization, only matmuls whose int32 products become
  /// float in the unit (MatMulIntegerToFloat, DynamicQuantizeMatMul, or
  /// MatMulInteger -> Cast -> Mul by a_scale x b_scale) with a constant 2-D
  /// weight are INT8; ConvInteger and an int32 MatMulInteger result are
  /// float (qopt's plan: its dynamic gemm step).
  bool dynamicMatMulToFloatOnly = false;
  /// Int8 activations are taken only where the backend turns them into
  /// uint8 (ONNX Runtime's x86 kernels, QDQS8ToU8Transformer).
  bool int8ActivationsOnlyAsU8 = false;
  /// Relu/Clip directly before a Q whose zero point is its storage minimum
  /// is dropped into the Q (ORT's ReluQuantFusion).
  bool reluFoldsIntoQ = false;
  /// A q.requantize is an int8 step (qopt's plan: a 256-entry table, often
  /// composed into the step before or after it), not a Scale layer.
  bool requantizeIsInt8Step = false;
  /// A MatMul by the DequantizeLinear of a constant 4-bit weight, with float
  /// activations, is one weight-only GEMM (TensorRT 10, qopt's plan).
  bool int4WeightOnlyGemm = false;
  /// A Conv/MatMul/Gemm with FP8 Q/DQ on both inputs is one FP8 layer
  /// (TensorRT 10).
  bool fp8Gemm = false;
  /// A MatMul/Gemm by the DequantizeLinear of a constant FP4 (E2M1) weight,
  /// NVFP4's two-level scales included, with float activations, is one
  /// weight-only GEMM (TensorRT 10.8: FP4 constants on Blackwell).
  bool fp4WeightOnlyGemm = false;
  /// A weight-only GEMM runs its bias Add and activation in its epilogue
  /// (TensorRT; qopt's int4 step and ONNX Runtime's MatMulNBits do not).
  bool weightOnlyGemmEpilogue = false;
  /// Where the rules come from (printed by -explain).
  llvm::StringLiteral documentation = "";

  /// The backend version the rules describe ("10", "8.6"; empty: one rule
  /// set for every version). docs/tensorrt-rules.md lists what differs.
  llvm::StringLiteral version = "";
  /// The highest ONNX opset the version's parser documents (0: no limit).
  int64_t maxOpset = 0;
  /// Ops the version's parser does not import (the model fails to build).
  llvm::ArrayRef<llvm::StringLiteral> unparsedOps;
  /// Where the version facts come from.
  llvm::StringLiteral versionSource = "";

  const OpRule *lookup(llvm::StringRef op) const;
  /// "TensorRT 10", or the title alone for unversioned rules.
  std::string titleWithVersion() const;
};

/// The rule sets: "trt", "ort", "cpu", each optionally with a version
/// after a colon ("trt:8.6"; "trt" is its newest version); null for
/// other names.
const BackendRules *lookupBackendRules(llvm::StringRef name);
/// The default rule set of each backend.
llvm::ArrayRef<const BackendRules *> getAllBackendRules();
/// The versions lookupBackendRules knows for `backend` ("8.5", "8.6",
/// "10" for trt), oldest first.
std::vector<std::string> getBackendVersions(llvm::StringRef backend);

/// What the plan's backend version cannot build at all, one line each:
/// an opset above the highest its parser documents, ops it does not
/// import. `opset` is the model's default-domain opset (0: unknown).
std::vector<std::string> versionProblems(const Graph &graph, int64_t opset,
                                         const BackendRules &rules);

//===----------------------------------------------------------------------===//
// The plan
//===----------------------------------------------------------------------===//

/// One fused kernel: its compute nodes and the Q/DQ it absorbs.
struct FusionUnit {
  unsigned id = 0;
  /// "conv", "gemm", "matmul", "add", "concat", "pool", "copy", ...
  std::string kind;
  /// Compute nodes in order: the anchor first, then its epilogue.
  std::vector<Node *> members;
  /// Q/DQ nodes folded into the unit (input DQs, weight DQs, output Q),
  /// and data movement on a weight the backend folds into it.
  std::vector<Node *> absorbed;
  /// The values the unit reads and writes at its border, with the grid
  /// each is stored on (null: float).
  struct Port {
    const Value *value = nullptr;
    const QuantType *grid = nullptr;
  };
  std::vector<Port> inputs;
  std::vector<Port> outputs;
  /// Multiply-accumulates of the anchor (weighted units).
  int64_t macs = 0;
  /// Reads int8 whose grid is computed at run time (dynamic quantization):
  /// its MACs are INT8 though its input ports carry no grid.
  bool dynamicInt8 = false;
  /// Reads float activations and a 4-bit weight the backend keeps 4-bit
  /// (weight-only quantization): its MACs are INT4 weight-only.
  bool weightOnly4Bit = false;
  /// Computes in FP8 (both inputs through FP8 Q/DQ): its MACs are FP8.
  bool fp8 = false;
  /// With weightOnly4Bit: the weight is FP4 (E2M1), not INT4; its MACs are
  /// FP4 weight-only.
  bool fp4 = false;

  Node *getAnchor() const { return members.front(); }
  /// True when the unit computes on int8 (every unit except float-output
  /// weighted units reads int8; copies move int8).
  bool isCopy() const { return kind == "copy"; }
};

enum class LeftoverKind : uint8_t {
  /// DQ -> Q with different parameters (directly or through data
  /// movement), or a q.requantize: a "Scale" layer.
  Requantize,
  /// A precision change between a unit and a float op: an unfused Q or DQ
  /// in the middle of the graph.
  Reformat,
  /// Ops computing in float.
  FloatIsland,
  /// A Q or DQ that fuses with nothing and changes no precision between
  /// computing ops: at a graph input or output, on a weight, or a Q->DQ
  /// pair between two float ops.
  UnfusedQuantize,
  UnfusedDequantize,
};
llvm::StringRef getLeftoverKindName(LeftoverKind kind);

/// One place where the graph leaves INT8.
struct Leftover {
  LeftoverKind kind;
  /// The nodes involved, in graph order (Q/DQ, data movement between them,
  /// the island's ops).
  std::vector<const Node *> nodes;
  /// Why it is there: "scale mismatch at Concat input 2: 0.031 vs 0.047".
  std::string reason;
  /// The qopt pipeline that removes it ("unify-scales,remove-redundant-qdq"),
  /// or empty when no qopt pass does.
  std::string fixPipeline;
  /// The fix in the training script or exporter, in pytorch-quantization /
  /// Model Optimizer terms; or why none is needed.
  std::string fixInModel;
  /// For float islands: multiply-accumulates computed in float.
  int64_t floatMacs = 0;
};

struct FusionPlan {
  const BackendRules *rules = nullptr;
  std::vector<FusionUnit> units;
  std::vector<Leftover> leftovers;
  /// Not leftovers (the graph stays in INT8) but missed fusions: a Q/DQ
  /// between a weighted unit and the activation or Add that could have
  /// joined its epilogue splits one kernel into two.
  std::vector<Leftover> hints;
  /// What keeps the backend version from importing the model at all
  /// (versionProblems; filled by the tools, which know the opset).
  std::vector<std::string> importProblems;
  /// The unit each compute node and absorbed Q/DQ belongs to (index into
  /// units).
  llvm::DenseMap<const Node *, unsigned> unitOf;

  struct Summary {
    int64_t totalMacs = 0;
    int64_t int8Macs = 0;
    int64_t int4WeightOnlyMacs = 0;
    int64_t fp4WeightOnlyMacs = 0;
    int64_t fp8Macs = 0;
    unsigned units = 0; ///< without copies
    unsigned copies = 0;
    unsigned requantizes = 0;
    unsigned reformats = 0;
    unsigned floatOps = 0;
    unsigned floatIslands = 0;
    unsigned unfusedQdq = 0;
  };
  Summary summarize() const;

  /// Units and leftovers, one per line (the analysis printer).
  void print(llvm::raw_ostream &os) const;
};

/// A node as plans name it: its name, else its first result's.
std::string planNodeName(const Node &n);

/// "requantize: a -> b -> c": a leftover's kind and node names, which stay
/// the same when a pass rewrites the graph around it.
std::string leftoverKey(const Leftover &l);

/// The same leftover before and after a rewrite that renames Q/DQ nodes
/// (ensure-unique-dq's copies): kind and node names, a Q/DQ named by its
/// op ("<dequantize>") when the leftover has other nodes to tell it by.
std::string leftoverIdentity(const Leftover &l);

/// What confirmFixes did with the pipelines a plan's leftovers name.
struct FixCheckStats {
  unsigned confirmed = 0; ///< removed by the pipeline as named
  unsigned extended = 0;  ///< removed once the pipeline was extended
  unsigned dropped = 0;   ///< no pipeline removes it: in-model fix only
  unsigned pipelinesRun = 0;
};

/// Makes every `qopt -passes='X'` fix of `plan` (leftovers and hints) one
/// that works: for each distinct X, runs X on a copy of `graph` and plans
/// again under the same rules. A leftover that is still there (same
/// leftoverIdentity) gets X extended by the fix its successor names, up to
/// twice (a Q added by quantize-activations may need to-uint8-activations
/// next); when that does not remove it either, it keeps only its in-model
/// fix. `graph` is left as it was.
FixCheckStats confirmFixes(const Graph &graph, FusionPlan &plan,
                           const PassRegistry &registry);

/// Computes the plan of `graph` under `rules`.
FusionPlan computeFusionPlan(Graph &graph, const BackendRules &rules);

/// Multiply-accumulates of a weighted op from its static shapes (0 when a
/// shape is unknown).
int64_t countMacs(const Node &n);

/// The analysis, one per backend: fusion-plan<trt>, fusion-plan<ort>,
/// fusion-plan<cpu> (print<fusion-plan> is the trt one).
#define QOPT_FUSION_PLAN_ANALYSIS(CLASS)                                       \
  class CLASS : public AnalysisInfoMixin<CLASS> {                              \
  public:                                                                      \
    using Result = FusionPlan;                                                 \
    Result run(Graph &g, AnalysisManager &am);                                 \
    static AnalysisKey Key;                                                    \
  };
QOPT_FUSION_PLAN_ANALYSIS(TrtFusionPlanAnalysis)
QOPT_FUSION_PLAN_ANALYSIS(Trt86FusionPlanAnalysis)
QOPT_FUSION_PLAN_ANALYSIS(Trt85FusionPlanAnalysis)
QOPT_FUSION_PLAN_ANALYSIS(OrtFusionPlanAnalysis)
QOPT_FUSION_PLAN_ANALYSIS(CpuFusionPlanAnalysis)
#undef QOPT_FUSION_PLAN_ANALYSIS

//===----------------------------------------------------------------------===//
// Explanation
//===----------------------------------------------------------------------===//

/// The text of `qopt --explain`: one entry per leftover (kind, the input
/// model's node names, reason, fix), then the summary.
void printExplanation(const FusionPlan &plan, const Graph &graph,
                      llvm::raw_ostream &os);
/// What a plan held, kept while a pipeline rewrites the graph it points
/// into.
struct PlanSnapshot {
  FusionPlan::Summary summary;
  /// "requantize: a -> b -> c", one per leftover.
  std::vector<std::string> leftovers;
};
PlanSnapshot snapshotPlan(const FusionPlan &plan);
/// What a pipeline changed: the summary before and after, and the
/// leftovers of `before` that are gone.
void printPlanChanges(const PlanSnapshot &before, const FusionPlan &after,
                      llvm::StringRef pipeline, llvm::raw_ostream &os);

} // namespace qopt

#endif // QOPT_FUSION_FUSIONPLAN_H

//===- FusionPlanner.h - The fusion-plan builder, shared by its files -*- C++
//-*-===//
//
// Private to lib/Passes: the Planner that FusionPlan.cpp (forming units)
// and FusionLeftovers.cpp (listing leftovers and hints) implement, and the
// text helpers both use.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_FUSION_FUSIONPLANNER_H
#define QOPT_LIB_FUSION_FUSIONPLANNER_H

#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/Graph.h"
#include "qopt/Passes/FloatRegions.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>
#include <string>
#include <vector>

namespace qopt {
namespace fusion {

/// "0.0834" or "{0.01..0.03} axis 0" (per axis), with the zero point when
/// not 0 and the storage type.
std::string gridText(const QuantType *q);

/// A per-tensor grid as "0.05" (with " zp N" when not 0); per axis as
/// gridText.
std::string scaleText(const QuantType *q);

/// "Conv 'conv1'", with Q/DQ under their ONNX names.
std::string nodeRef(const Node &n);

/// The stored integers a DQ result comes from (what a unit absorbing the
/// DQ reads), else the value itself.
const Value *storedOrSelf(const Value *v);

/// q.quantize, q.dequantize or q.requantize.
bool isQdqOp(const Node &n);

/// The result of the first Q reading `v` when every use of `v` is a Q onto
/// one grid (and `v` is no graph output); else null.
const Value *quantizedOnOneGrid(const Value *v);

/// Same storage and parameters (null: both float).
bool sameGrid(const QuantType *a, const QuantType *b);

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
std::string whyTooSmallForInt8(const Node &n);

/// Why a node stays float, and what would change that.
struct FloatCause {
  std::string reason;
  std::string fixPipeline;
  std::string fixInModel;
  /// The node is float only because an input comes from another float
  /// node: its island's fix is its fix.
  bool inherited = false;
};

/// A grid the rules refuse (`where`: "input 0", "output"), with the fix
/// for the refusals a pass fixes.
FloatCause gridCause(const std::string &where, const std::string &problem);

/// Builds the FusionPlan of one graph under one backend's rules.
/// The single user of `v` when it has exactly one and is no graph output.
Node *soleUser(const Value *v);

/// The nodes from an attention's first MatMul to its Softmax (over the last
/// axis): an optional scale (Mul/Div by a constant), an optional mask Add
/// (FusionAttention.cpp).
struct AttentionScores {
  std::vector<Node *> members; ///< the first MatMul .. the Softmax
  Node *softmax = nullptr;
  Node *maskAdd = nullptr;
  const Value *maskInput = nullptr;
  unsigned maskOperand = 0;
};
std::optional<AttentionScores> matchAttentionScores(Node &bmm1);

/// GELU as exporters write it before opset 20, 0.5 * x * (1 + Erf(x /
/// sqrt(2))), on `x`: its nodes in order, or none (FusionEpilogue.cpp).
std::vector<Node *> matchErfGelu(const Value *x);

class Planner {
public:
  Planner(Graph &g, const BackendRules &rules) : graph(g), rules(rules) {
    plan.rules = &rules;
  }
  FusionPlan run();

private:
  Graph &graph;
  const BackendRules &rules;
  FusionPlan plan;

  /// Values produced only from constants (folded by every backend).
  llvm::DenseSet<const Value *> constantValues;
  /// Dequantized weights and what data movement makes of them.
  llvm::DenseSet<const Value *> weightValues;
  /// Data movement on a weight that the backend folds into the constant
  /// (its DQ moved forward through it).
  llvm::DenseSet<const Node *> foldedWeightMoves;
  /// Values copies produce on int8, with their grid.
  llvm::DenseMap<const Value *, const QuantType *> copyGrid;
  /// Operands (node, index) a unit reads as int8.
  llvm::DenseSet<std::pair<const Node *, unsigned>> int8Reads;
  /// Compute nodes left in float, with the first reason found.
  llvm::DenseMap<const Node *, FloatCause> floatNodes;
  std::vector<const Node *> floatOrder;
  /// Operands the unit being formed reads as int8 (committed by addUnit).
  std::vector<std::pair<const Node *, unsigned>> pendingReads;
  /// Float island (leftover index) of each float node.
  llvm::DenseMap<const Node *, size_t> islandOf;
  /// Second Qs of a unit's output onto another grid (reported).
  llvm::DenseSet<const Node *> extraQuantizes;
  /// Uses (node, index) whose requantize was already reported.
  llvm::DenseSet<std::pair<const Node *, unsigned>> reportedRequantize;
  /// Position of each node in the graph.
  llvm::DenseMap<const Node *, size_t> nodeOrder;
  /// The int8 residual the unit being formed reads (its Add, the Add's
  /// operand, the unit's input port and the DQ absorbed), if any.
  struct ResidualRead {
    const Node *add = nullptr;
    unsigned operand = 0;
    size_t port = 0;
    Node *dequantize = nullptr;
  };
  std::optional<ResidualRead> residualRead;
  /// The unit being formed reads its residual in float (it then writes
  /// float: TensorRT's Conv+Add with an FP16/FP32 skip).
  bool floatResidual = false;
  /// Units that read a float residual.
  llvm::DenseSet<unsigned> floatResidualUnits;
  /// A reformat at float node `n` takes the fix of `n`'s own cause, or its
  /// island's when `n` is float only because its input is (a pipeline
  /// already in `l` stays).
  void takeFixOf(const Node &n, Leftover &l) const;
  /// Members of the float regions borrow-scales puts on int8
  /// (qopt/Passes/FloatRegions.h): where explain names that fix.
  llvm::DenseSet<const Value *> borrowableValues;
  std::vector<FloatRegion> borrowableRegions;

  bool isComputeNode(const Node &n) const;
  /// The grid `v` is read with as int8, or null.
  const QuantType *readGrid(const Value *v) const;
  /// A problem with `q` as an activation grid under these rules, or empty.
  std::string activationGridProblem(const QuantType *q) const;
  /// The i8 activation rule (int8ActivationsOnlyAsU8) for a port stored in
  /// `stored`.
  std::string s8ActivationProblem(const QuantType *q,
                                  const Value *stored) const;
  std::string weightGridProblem(const Node &op, const QuantType *q,
                                int64_t outputAxis) const;

  void classify(Node &n);
  bool tryCopy(Node &n);
  bool tryWeighted(Node &n, const OpRule &rule);
  /// BMM1 -> [scale] -> [mask] -> Softmax -> Q/DQ -> BMM2 -> Q as one unit
  /// (FusionAttention.cpp); where the pattern is there but a condition
  /// fails, attentionCauses says why for its Softmax.
  bool tryAttention(Node &bmm1, const OpRule &rule);
  llvm::DenseMap<const Node *, std::string> attentionCauses;
  /// The grid `v` will be read with as int8 once the data movement between
  /// its DQ and it (not classified yet) runs as copies, or null.
  const QuantType *int8GridAhead(const Value *v) const;
  bool tryInt8Op(Node &n, const OpRule &rule);
  /// Dynamic quantization (FusionDynamic.cpp): DynamicQuantizeLinear, the
  /// integer matmul/conv with its Cast -> Mul by the scale product [-> Add
  /// bias], ONNX Runtime's fused forms; as units where the backend has
  /// dynamic quantization, else float with the reason.
  bool tryDynamic(Node &n);
  /// A MatMul by the DQ of a constant 4-bit weight with float activations
  /// (FusionWeightOnly.cpp): a weight-only unit where the backend has one,
  /// else float with the reason.
  bool tryWeightOnly(Node &n);
  /// com.microsoft.MatMulNBits: the unit under ONNX Runtime, float elsewhere.
  bool tryMatMulNBits(Node &n);
  /// A MatMul/Gemm by a constant FP4 weight (NVFP4) with float activations.
  bool tryFp4WeightOnly(Node &n);
  /// Adds to a float-output GEMM unit (FP8, weight-only) what the backend
  /// runs in its epilogue after `out`: a constant bias Add, then the
  /// activations it fuses (GELU's Erf chain where it does). Returns the
  /// unit's output.
  Value *absorbGemmEpilogue(FusionUnit &unit, Value *out);
  /// Adds weight-only GEMM `unit` of `gemm`, its output after the epilogue
  /// the backend runs in such a GEMM (rules.weightOnlyGemmEpilogue).
  void addWeightOnlyUnit(FusionUnit unit, Node &gemm);
  /// FP8 Q/DQ (opaque ops) and the Conv/GEMMs they feed on both inputs
  /// (FusionFp8.cpp): FP8 units where the backend has them.
  bool tryFp8(Node &n);
  /// TensorRT 10's FP8 fused attention (FusionFp8.cpp).
  bool tryFp8Attention(Node &bmm1);
  /// Extends `unit` through its epilogue and onto its output Q. Returns
  /// false when the rule needs an output Q and there is none (`why` says
  /// why).
  bool finishUnit(FusionUnit &unit, const OpRule &rule, FloatCause &why);
  void absorbEpilogue(FusionUnit &unit);
  /// The Q (all Qs, on one grid) that `out` reaches through single-use
  /// data movement a Q commutes with (`chain`), or null.
  const Value *quantizedThroughCopies(const Value *out,
                                      std::vector<Node *> &chain) const;
  /// The weighted op whose output reaches `v` through epilogue ops alone,
  /// each read once, or null.
  const Node *weightedProducer(const Value *v) const;
  /// A unit that ends in float reads its residual in float (TensorRT).
  void readResidualInFloat(FusionUnit &unit);
  void addUnit(FusionUnit unit);
  /// Operand `i` of `n` joins `unit` as an int8 input on `grid` (its DQ,
  /// if any, absorbed).
  void readAsInt8(FusionUnit &unit, Node &n, unsigned i, const QuantType *grid);
  void markFloat(const Node &n, FloatCause cause);
  FloatCause inputCause(const Node &n, unsigned operand) const;

  /// Takes back the borrow-scales fix where a region's entry is no unit's
  /// output.
  void dropUnsoundBorrowFixes();
  void collectIslands();
  void collectSplitUnits();
  void collectDequantizeLeftovers();
  void collectQuantizeLeftovers();
  void followDequantized(const Node &dq, const Value *v, const QuantType *grid,
                         std::vector<const Node *> path);
};

} // namespace fusion
} // namespace qopt

#endif // QOPT_LIB_FUSION_FUSIONPLANNER_H

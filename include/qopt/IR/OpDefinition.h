//===- OpDefinition.h - The op table: signatures, traits, inference -*- C++
//-*-===//
//
// One table (qopt/IR/Ops.def) describes every op qopt reasons about: its
// operands and results with their type constraints, its attributes with
// defaults, the ONNX opset it appeared in, traits that passes query instead
// of keeping op-name lists, and a type/shape inference function.
//
//   const OpDef *def = lookupOpDef(node.getOp());
//   if (def && def->hasTrait(OpTrait::DataMovement)) ...
//   auto axis = def->remapQuantAxis(node, /*inputAxis=*/0);
//
// Ops outside the table are opaque: any operands, attributes and types are
// accepted and carried through untouched.
//
// The IR holds one canonical spelling per op, the newest ONNX one (Reshape's
// shape, Pad's pads, Split/Squeeze/Unsqueeze/Reduce* axes and Clip's bounds as
// operands; Upsample as Resize). The importer converts older spellings and
// the exporter converts back for the model's opset (OpsetSpellings.h).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_IR_OPDEFINITION_H
#define QOPT_IR_OPDEFINITION_H

#include "qopt/IR/Attributes.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/Types.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qopt {

class Graph;
class Model;
class Node;
class Value;

/// Properties passes query. An op may have several.
enum class OpTrait : uint32_t {
  None = 0,
  /// Results hold a subset or rearrangement of operand 0's elements (or of
  /// all data operands for Concat): commutes with per-tensor Q/DQ. Per-axis
  /// parameters follow through the op's axis-remap function.
  DataMovement = 1u << 0,
  /// Selects or clamps values without computing new ones (MaxPool, Relu,
  /// Clip, Max, ReduceMax): order-preserving, so with scale > 0,
  /// Q(f(x)) = f'(Q(x)) where f' is f with its bounds moved onto the grid.
  /// On stored integers ONNX applies f itself (Relu clamps at 0, not at the
  /// zero point): a pass moving Q/DQ across a clamp must map its bound.
  Monotonic = 1u << 1,
  /// Computes each result element from the elements at the same position
  /// of its (broadcast) operands.
  Elementwise = 1u << 2,
  /// Has a weight operand with an output-channel axis (Conv, ConvTranspose,
  /// Gemm, MatMul); see OpDef::getWeightInfo.
  Weighted = 1u << 3,
  /// Operands 0 and 1 may be swapped.
  Commutative = 1u << 4,
  /// Results differ between runs on the same inputs (Random*, Dropout in
  /// training mode): never merged or folded.
  Nondeterministic = 1u << 5,
  /// Results depend only on operand shapes, not their values (Shape, Size).
  ShapeOnly = 1u << 6,
};
inline OpTrait operator|(OpTrait a, OpTrait b) {
  return static_cast<OpTrait>(static_cast<uint32_t>(a) |
                              static_cast<uint32_t>(b));
}

/// Attribute kinds of the schema (ONNX's AttributeProto types qopt uses).
enum class AttrKind : uint8_t {
  Int,
  Float,
  String,
  Ints,
  Floats,
  Strings,
  Tensor,
  Graph
};

/// One attribute of an op's schema. `defaultValue` is absent for required
/// attributes and for optional ones whose default depends on the operands
/// (Conv's kernel_shape).
struct AttrSpec {
  llvm::StringRef name;
  AttrKind kind;
  std::optional<Attribute> defaultValue;
  bool required = false;
  /// A string attribute's legal values, "a|b|c" (ATTR_ONE_OF); empty: any.
  llvm::StringRef oneOf;
  /// An int attribute that names an axis of operand 0 (ATTR_AXIS): in
  /// [-rank, rank - 1] once the rank is known.
  bool isAxis = false;
};

/// Sets of element kinds a type variable may take.
enum TypeSet : uint32_t {
  TS_F32 = 1u << 0,
  TS_F16 = 1u << 1,
  TS_BF16 = 1u << 2,
  TS_F64 = 1u << 3,
  TS_I8 = 1u << 4,
  TS_U8 = 1u << 5,
  TS_I16 = 1u << 6,
  TS_U16 = 1u << 7,
  TS_I32 = 1u << 8,
  TS_U32 = 1u << 9,
  TS_I64 = 1u << 10,
  TS_U64 = 1u << 11,
  TS_Bool = 1u << 12,
  TS_String = 1u << 13,
  TS_I4 = 1u << 14,
  TS_U4 = 1u << 15,
  TS_F8E4M3FN = 1u << 16,
  TS_F8E4M3FNUZ = 1u << 17,
  TS_F8E5M2 = 1u << 18,
  TS_F8E5M2FNUZ = 1u << 19,
  TS_F4E2M1 = 1u << 20,
  TS_Float8 = TS_F8E4M3FN | TS_F8E4M3FNUZ | TS_F8E5M2 | TS_F8E5M2FNUZ,
  TS_Float = TS_F32 | TS_F16 | TS_BF16 | TS_F64,
  TS_Int = TS_I8 | TS_U8 | TS_I16 | TS_U16 | TS_I32 | TS_U32 | TS_I64 | TS_U64,
  TS_Numeric = TS_Float | TS_Int,
  /// 4-bit integers only where ONNX takes them (Q/DQ, data movement, Cast).
  TS_Any =
      TS_Numeric | TS_Bool | TS_String | TS_I4 | TS_U4 | TS_Float8 | TS_F4E2M1,
  TS_QStorage = TS_I8 | TS_U8 | TS_I16 | TS_U16 | TS_I4 | TS_U4,
};
uint32_t typeSetOf(ElementKind kind);
/// "float", "f32 or i64", ... for diagnostics.
std::string describeTypeSet(uint32_t set);

/// One operand or result of a signature.
struct SignatureSlot {
  std::string name;
  /// Type variable ('T', 'T1', ...) shared with other slots, or empty when
  /// the slot has a fixed set.
  std::string typeVar;
  uint32_t allowed = TS_Any;
  bool optional = false;
  bool variadic = false;
};

/// What a Weighted op's weight is.
struct WeightInfo {
  unsigned operand;
  /// Axis of the weight that indexes output channels.
  int64_t outputChannelAxis;
};

class InferenceContext;
class FoldContext;
using InferFn = llvm::Error (*)(InferenceContext &);
/// Maps the quantized axis of operand 0 (shape `in`) to the axis of a
/// result (shape `out`), or says why per-axis parameters cannot cross.
using AxisRemapFn = llvm::Expected<int64_t> (*)(const Node &, int64_t axis,
                                                llvm::ArrayRef<Dim> in,
                                                llvm::ArrayRef<Dim> out);
using WeightInfoFn = std::optional<WeightInfo> (*)(const Node &);
/// Op-specific checks beyond the signature; types are already checked.
using VerifyFn = llvm::Error (*)(const Node &);
/// Computes constant results (qopt/IR/ConstantFolding.h); false declines.
using FoldFn = bool (*)(FoldContext &);

class OpDef {
public:
  llvm::StringRef name; // "onnx.Conv"
  int64_t sinceVersion; // first default-domain opset with this spelling
  std::vector<SignatureSlot> operands;
  std::vector<SignatureSlot> results;
  std::vector<AttrSpec> attributes;
  OpTrait traits = OpTrait::None;
  InferFn infer = nullptr;
  AxisRemapFn remapAxis = nullptr;
  WeightInfoFn weightInfo = nullptr;
  VerifyFn verify = nullptr;
  FoldFn fold = nullptr;
  llvm::StringRef summary;

  bool hasTrait(OpTrait t) const {
    return (static_cast<uint32_t>(traits) & static_cast<uint32_t>(t)) != 0;
  }
  unsigned getMinOperands() const;
  /// ~0u when the last operand is variadic.
  unsigned getMaxOperands() const;
  unsigned getMinResults() const;
  unsigned getMaxResults() const;
  /// The signature slot of operand/result `i` (the variadic one repeats).
  const SignatureSlot *operandSlot(unsigned i) const;
  const SignatureSlot *resultSlot(unsigned i) const;
  const AttrSpec *lookupAttr(llvm::StringRef attr) const;

  /// For DataMovement/Monotonic ops: the result axis that carries operand
  /// 0's quantized `axis`, or the reason it cannot.
  llvm::Expected<int64_t> remapQuantAxis(const Node &n, int64_t axis,
                                         unsigned result = 0) const;
  /// For Weighted ops.
  std::optional<WeightInfo> getWeightInfo(const Node &n) const;
};

/// Null for ops outside the table (opaque ops).
const OpDef *lookupOpDef(llvm::StringRef op);
/// Every op of the table, in table order.
llvm::ArrayRef<const OpDef *> getAllOpDefs();

/// True when `n` is a known op with trait `t`.
bool hasTrait(const Node &n, OpTrait t);

/// The attributes of q.quantize/q.dequantize that only record how the
/// source model spelled the parameters the type holds (param_names,
/// param_ranks, and a two-level scale's scale_params/scale_param_ranks):
/// they say nothing about what the node computes, and export writes them
/// as initializers, not as ONNX attributes.
bool isQdqParamRecordAttr(llvm::StringRef name);

/// An attribute of `n`, or its schema default; null when neither exists.
const Attribute *getAttrOrDefault(const Node &n, llvm::StringRef attr);
int64_t getIntAttrOr(const Node &n, llvm::StringRef attr, int64_t fallback);
float getFloatAttrOr(const Node &n, llvm::StringRef attr, float fallback);
std::string getStringAttrOr(const Node &n, llvm::StringRef attr,
                            llvm::StringRef fallback);
std::vector<int64_t> getIntsAttrOr(const Node &n, llvm::StringRef attr,
                                   std::vector<int64_t> fallback = {});

/// Attribute kinds against the op's schema, required attributes present,
/// and (closed q dialect) no unknown attributes. Errors name the node.
llvm::Error verifyAttributes(const Node &n, const OpDef &def);

/// The tensor of a constant (onnx.Constant with a `value`), or null.
const DenseElements *getConstantData(const Value *v);
/// The elements of a constant integer tensor of rank <= 1.
std::optional<std::vector<int64_t>> getConstantInts(const Value *v);

//===----------------------------------------------------------------------===//
// Inference
//===----------------------------------------------------------------------===//

/// What an inference function sees: the node's operands and attributes, and
/// the result types it fills in. Element types of results bound to a type
/// variable are pre-filled from the operands by the signature; inference
/// functions mostly compute shapes.
class InferenceContext {
public:
  InferenceContext(const Node &node, const OpDef &def);

  const Node &node;
  const OpDef &def;
  Context &ctx;

  unsigned getNumOperands() const;
  /// Null for absent optional operands and indices past the end.
  const Value *getOperand(unsigned i) const;
  const TensorType *getOperandType(unsigned i) const;
  bool hasRank(unsigned i) const;
  int64_t getRank(unsigned i) const;
  llvm::ArrayRef<Dim> getShape(unsigned i) const;
  const DenseElements *getConstant(unsigned i) const;
  std::optional<std::vector<int64_t>> getConstantInts(unsigned i) const;

  bool hasAttr(llvm::StringRef attr) const;
  int64_t getInt(llvm::StringRef attr) const;
  float getFloat(llvm::StringRef attr) const;
  std::string getString(llvm::StringRef attr) const;
  std::vector<int64_t> getInts(llvm::StringRef attr) const;

  /// An error naming the node: "node 'c1' (onnx.Conv): <msg>".
  llvm::Error error(const llvm::Twine &msg) const;

  unsigned getNumResults() const { return resultElements.size(); }
  /// Element type of result `i` as the signature inferred it (may be null).
  const Type *getResultElement(unsigned i) const { return resultElements[i]; }
  void setResultElement(unsigned i, const Type *elem) {
    resultElements[i] = elem;
  }
  void setResultShape(unsigned i, std::vector<Dim> shape) {
    resultShapes[i] = std::move(shape);
  }
  /// Result `i` has the shape of operand `operand` (unranked if unknown).
  void setResultShapeLike(unsigned i, unsigned operand);

  /// The inferred result types; null where nothing is known.
  std::vector<const TensorType *> takeResultTypes() const;

private:
  std::vector<const Type *> resultElements;
  std::vector<std::optional<std::vector<Dim>>> resultShapes;
};

/// Infers the result types of `n` from its operands. Known ops only; an
/// opaque op returns its current types. Errors name the node.
llvm::Expected<std::vector<const TensorType *>> inferResultTypes(const Node &n);

/// The more precise of two compatible types (static over dynamic dims,
/// symbols over '?', ranked over unranked, a known element over '?').
/// Null when they conflict (different ranks, static sizes or elements).
const TensorType *meetTypes(const TensorType *a, const TensorType *b);

/// Runs inference on every node in order and refines result types with the
/// inferred ones. Fails on the first node whose operands do not fit (a
/// shape mismatch) or whose declared type conflicts with the inferred one.
/// With `declaredElementsWin` (.qir text, which states element types),
/// known element types are kept, only shapes are filled in, and conflicts
/// are left for the verifier to report.
llvm::Error inferShapes(Graph &graph, bool declaredElementsWin = false);
llvm::Error inferShapes(Model &model, bool declaredElementsWin = false);
/// Refines the result types of one node (for passes creating nodes).
llvm::Error inferNodeTypes(Node &n, bool declaredElementsWin = false);

/// Shorthand for diagnostics: "1x3x?x\"N\"" (no element type).
std::string shapeToText(llvm::ArrayRef<Dim> shape);

} // namespace qopt

#endif // QOPT_IR_OPDEFINITION_H

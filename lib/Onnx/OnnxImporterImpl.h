//===- OnnxImporterImpl.h - The ONNX importer, shared by its files -*- C++
//-*-===//
//
// Private to lib/Onnx. The importer is one class whose steps live in files by
// what they do: OnnxImporter.cpp (reading the graph, emitting nodes with
// shape inference), OnnxImportQdq.cpp (which Q/DQ become q.* ops and which
// values get quantized types), OnnxImportSpellings.cpp (older opsets'
// spellings to the canonical form), OnnxTensorData.cpp (tensor payloads).
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_ONNX_ONNXIMPORTERIMPL_H
#define QOPT_LIB_ONNX_ONNXIMPORTERIMPL_H

#include "OnnxTypes.h"
#include "qopt/IR/Graph.h"
#include "qopt/Support/Error.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/CachedHashString.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qopt {
namespace onnximport {

/// "node 'conv1' (Conv)" for diagnostics.
std::string describeProto(const onnx::NodeProto &n);
bool isDefaultDomain(const std::string &d);
/// describeProto(n), built only when an error message needs it.
struct LazyNodeDescription {
  const onnx::NodeProto &n;
  operator std::string() const { return describeProto(n); }
  std::string operator+(const char *s) const { return describeProto(n) + s; }
};
/// "[1,3,8,8]".
std::string shapeText(llvm::ArrayRef<int64_t> dims);

/// What the pre-pass decided about one QuantizeLinear/DequantizeLinear.
struct QdqInfo {
  bool convertible = false;
  const QuantType *quant = nullptr;
  /// Two-level scales: the DequantizeLinear (node index) computing this
  /// DQ's scale tensor from float8 codes, which the type absorbs.
  int scaleNode = -1;
};

/// A scale tensor computed as DequantizeLinear(float8 codes, scale[, +0
/// zero point]), all constants, per tensor (NVFP4's block scales).
struct TwoLevelScale {
  int node = -1;
  ElementKind codeKind = ElementKind::Unknown;
  std::vector<uint8_t> codes;
  std::vector<int64_t> dims; ///< the codes' (the scale tensor's) shape
  float scale = 0;           ///< float32
};

/// A value name of the graph, numbered once when the proto is read: the
/// importer's tables are vectors indexed by it, so a name is hashed once per
/// place it appears in the file, not once per question asked about it.
using NameId = unsigned;
/// An absent optional input or output (the empty name in a node's lists).
constexpr NameId kNoName = ~0u;

class Importer {
public:
  Importer(onnx::ModelProto &proto, llvm::StringRef baseDir, Context &ctx)
      : proto(proto), baseDir(baseDir), ctx(ctx) {}

  llvm::Expected<std::unique_ptr<Model>> run();

private:
  llvm::Error importHeader();
  void internNames();
  llvm::Error collectDeclaredTypes();
  llvm::Error collectConstants();
  llvm::Error decodeConstants();
  llvm::Error sortNodes();
  llvm::Error analyzeQdq(int node, QdqInfo &info);
  /// The two-level scale `scale` is, when its producer qualifies and this
  /// is its one reader.
  std::optional<TwoLevelScale> twoLevelScaleOf(NameId scale);
  llvm::Error assignQuantTypes();
  /// A constant operand of a data movement op, in the storage kind of its
  /// quantized data operand and sharing its type variable (a Pad's
  /// constant_value, written by an exporter as the stored integer), takes
  /// the data's grid, as the op requires.
  void adoptDataGrids();
  llvm::Error emitNodes();
  /// Emits node `i` (file order index) with its types inferred.
  llvm::Expected<Node *> emitNode(int i);
  llvm::Error foldConstantNodes();
  llvm::Error canonicalizeSpelling(const onnx::NodeProto &n, llvm::StringRef op,
                                   std::vector<Value *> &operands,
                                   std::vector<NamedAttribute> &attrs);
  llvm::Error canonicalizeResize(const onnx::NodeProto &n, std::string &op,
                                 std::vector<Value *> &operands,
                                 std::vector<NamedAttribute> &attrs);
  void recordParamNames(int node, const QuantType *q,
                        std::vector<NamedAttribute> &attrs);
  llvm::Error emitOutputs();
  void finishInitializers();

  NameId intern(llvm::StringRef name);
  /// A node's input and output names, in the proto's order (kNoName for an
  /// empty one).
  llvm::ArrayRef<NameId> inputsOf(int node) const {
    return llvm::ArrayRef<NameId>(nodeNameIds)
        .slice(nodeInputsBegin[node],
               nodeOutputsBegin[node] - nodeInputsBegin[node]);
  }
  llvm::ArrayRef<NameId> outputsOf(int node) const {
    return llvm::ArrayRef<NameId>(nodeNameIds)
        .slice(nodeOutputsBegin[node],
               nodeInputsBegin[node + 1] - nodeOutputsBegin[node]);
  }
  /// A fresh value name built from `stem`, unique among the graph's values
  /// and every name in the file (some are emitted later).
  std::string uniqueName(llvm::StringRef stem);

  /// Converted once (collectDeclaredTypes converts every declaration up
  /// front, so a malformed one fails early with the value's name).
  llvm::Expected<const TensorType *> declaredType(NameId id) {
    DeclaredType &d = declared[id];
    if (!d.proto)
      return ctx.getUnknownTensorType();
    if (d.converted)
      return d.converted;
    auto t = onnxbridge::tensorTypeFromProto(*d.proto, ctx,
                                             "value '" + names[id].str() + "'");
    if (t)
      d.converted = *t;
    return t;
  }
  /// Kind known for a value before emission (declared or constant).
  ElementKind knownKind(NameId id);
  /// Shape known for a value before emission.
  std::optional<std::vector<Dim>> knownShape(NameId id);
  const DenseElements *constantData(NameId id) {
    return id == kNoName ? nullptr : constantCache[id].get();
  }
  /// The value named `id`; an initializer becomes a constant node the first
  /// time something reads it.
  Value *valueOf(NameId id);
  /// `t` with the quantized element type assigned to the value, if any.
  const TensorType *withQuant(NameId id, const TensorType *t);

  onnx::ModelProto &proto;
  std::string baseDir;
  Context &ctx;
  std::unique_ptr<Model> model;
  int64_t opset = 0;

  /// Name -> id, keyed by the proto's own strings (which outlive the
  /// import). Keys carry their hash, so a probe compares hashes before it
  /// reads a name's characters somewhere else in memory.
  llvm::DenseMap<llvm::CachedHashStringRef, NameId> nameIds;
  std::vector<llvm::StringRef> names;
  std::vector<NameId> inputIds, initializerIds, valueInfoIds, outputIds;
  /// Per node, its input ids then its output ids; node i's inputs start at
  /// nodeInputsBegin[i] (which has one entry more, the end), its outputs at
  /// nodeOutputsBegin[i].
  std::vector<NameId> nodeNameIds;
  std::vector<unsigned> nodeInputsBegin, nodeOutputsBegin;

  // Tables indexed by NameId.
  struct DeclaredType {
    const onnx::TypeProto *proto = nullptr;
    const TensorType *converted = nullptr;
  };
  std::vector<DeclaredType> declared;
  std::vector<onnx::TensorProto *> initializers;
  /// The Constant node (with a `value` tensor) that writes the value.
  std::vector<const onnx::NodeProto *> constantNodes;
  std::vector<DenseElementsRef> constantCache;
  struct ShapeFact {
    bool known = false; // whether `shape` has been worked out
    std::optional<std::vector<Dim>> shape;
  };
  std::vector<ShapeFact> shapeCache;
  std::vector<int> producers; // node index, or -1
  llvm::BitVector isGraphInput, isInitializerInput;
  /// Quantized element type assigned to a value.
  std::vector<const QuantType *> valueQuant;
  std::vector<Value *> values;
  /// Scale/zero-point initializers read by converted Q/DQ nodes.
  llvm::BitVector absorbedParams;
  /// Results of nodes foldConstantNodes folded: constants, emitted when
  /// read, as initializers are.
  llvm::BitVector foldedValues;
  /// Initializers, folded values and Constant nodes whose readers so far
  /// all folded (or were put back to be emitted in their turn).
  llvm::BitVector readOnlyByFolds;
  /// Nodes already emitted (by foldConstantNodes), by file order index.
  llvm::BitVector emitted;

  std::vector<int> order;
  /// Per node (file order): outer names its subgraphs read.
  std::vector<std::vector<NameId>> captureIds;
  std::vector<QdqInfo> qdq;
  /// How many node inputs read each value (subgraph captures and graph
  /// outputs count too), for assignQuantTypes.
  std::vector<unsigned> readCounts;
  /// Nodes whose result types are inferNodeTypes' (no quantized type was
  /// put on them afterwards): the final verification does not infer them
  /// again.
  llvm::DenseSet<const Node *> typesAsInferred;
};

} // namespace onnximport
} // namespace qopt

#endif // QOPT_LIB_ONNX_ONNXIMPORTERIMPL_H

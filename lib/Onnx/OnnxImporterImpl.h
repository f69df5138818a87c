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

#include "onnx/onnx_pb.h"

#include "llvm/ADT/CachedHashString.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace qopt {
namespace onnximport {

llvm::Error makeError(const llvm::Twine &msg);
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

/// A map keyed by names that live in the proto (no copies). Keys carry their
/// hash, so a probe compares hashes before reading a name's characters: with
/// DenseMap<StringRef>, each probe into a 100,000-name table reads a name
/// somewhere else in memory, and --explain on such a model spent an eighth
/// of its time in those compares.
template <typename V> class NameMap {
  using Key = llvm::CachedHashStringRef;
  using Map = llvm::DenseMap<Key, V>;
  Map map;

public:
  using iterator = typename Map::iterator;
  using const_iterator = typename Map::const_iterator;
  iterator begin() { return map.begin(); }
  iterator end() { return map.end(); }
  const_iterator begin() const { return map.begin(); }
  const_iterator end() const { return map.end(); }
  iterator find(llvm::StringRef k) { return map.find(Key(k)); }
  const_iterator find(llvm::StringRef k) const { return map.find(Key(k)); }
  size_t count(llvm::StringRef k) const { return map.count(Key(k)); }
  V lookup(llvm::StringRef k) const { return map.lookup(Key(k)); }
  V &operator[](llvm::StringRef k) { return map[Key(k)]; }
  std::pair<iterator, bool> try_emplace(llvm::StringRef k, V v) {
    return map.try_emplace(Key(k), std::move(v));
  }
};

/// What the pre-pass decided about one QuantizeLinear/DequantizeLinear.
struct QdqInfo {
  bool convertible = false;
  const QuantType *quant = nullptr;
};

class Importer {
public:
  Importer(onnx::ModelProto &proto, llvm::StringRef baseDir, Context &ctx)
      : proto(proto), baseDir(baseDir), ctx(ctx) {}

  llvm::Expected<std::unique_ptr<Model>> run();

private:
  llvm::Error importHeader();
  llvm::Error collectDeclaredTypes();
  llvm::Error collectConstants();
  llvm::Error sortNodes();
  llvm::Error analyzeQdq(const onnx::NodeProto &n, QdqInfo &info);
  llvm::Error assignQuantTypes();
  llvm::Error emitNodes();
  llvm::Error canonicalizeSpelling(const onnx::NodeProto &n, llvm::StringRef op,
                                   std::vector<Value *> &operands,
                                   std::vector<NamedAttribute> &attrs);
  void canonicalizeResize(const onnx::NodeProto &n, std::string &op,
                          std::vector<Value *> &operands,
                          std::vector<NamedAttribute> &attrs);
  void recordParamNames(const onnx::NodeProto &n, const QuantType *q,
                        std::vector<NamedAttribute> &attrs);
  void eraseAbsorbedParams();
  llvm::Error emitOutputs();

  /// Converted once (collectDeclaredTypes converts every declaration up
  /// front, so a malformed one fails early with the value's name).
  llvm::Expected<const TensorType *> declaredType(llvm::StringRef name) {
    auto it = declared.find(name);
    if (it == declared.end())
      return ctx.getUnknownTensorType();
    if (it->second.converted)
      return it->second.converted;
    auto t = onnxbridge::tensorTypeFromProto(*it->second.proto, ctx,
                                             "value '" + name.str() + "'");
    if (t)
      it->second.converted = *t;
    return t;
  }
  /// Kind known for a value name before emission (declared or constant).
  ElementKind knownKind(llvm::StringRef name);
  /// Rank known for a value name before emission.
  std::optional<std::vector<Dim>> knownShape(llvm::StringRef name);
  const DenseElements *constantData(llvm::StringRef name);

  onnx::ModelProto &proto;
  std::string baseDir;
  Context &ctx;
  std::unique_ptr<Model> model;
  int64_t opset = 0;

  struct DeclaredType {
    const onnx::TypeProto *proto;
    const TensorType *converted = nullptr;
  };
  // Every NameMap here (and absorbedParams) is keyed by the proto's own
  // strings, which outlive the import.
  NameMap<DeclaredType> declared;
  NameMap<onnx::TensorProto *> initializers;
  std::vector<llvm::StringRef> initializerOrder;
  /// Output of a Constant node with a `value` tensor -> that node.
  NameMap<const onnx::NodeProto *> constantNodes;
  NameMap<DenseElementsRef> constantCache;
  NameMap<std::optional<std::vector<Dim>>> shapeCache;
  NameMap<int> producers; // value -> node index
  llvm::StringSet<> graphInputs;
  std::vector<int> order;
  /// Per node (file order): outer names its subgraphs read.
  std::vector<std::vector<std::string>> captureNames;
  std::vector<QdqInfo> qdq;
  /// Quantized element type assigned to a value name.
  NameMap<const QuantType *> valueQuant;
  NameMap<Value *> values;
  /// Nodes whose result types are inferNodeTypes' (no quantized type was
  /// put on them afterwards): the final verification does not infer them
  /// again.
  llvm::DenseSet<const Node *> typesAsInferred;
  /// Scale/zero-point initializers read by converted Q/DQ nodes.
  llvm::DenseSet<llvm::CachedHashStringRef> absorbedParams;
};

} // namespace onnximport
} // namespace qopt

#endif // QOPT_LIB_ONNX_ONNXIMPORTERIMPL_H

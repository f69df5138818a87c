//===- OnnxImporter.cpp - ONNX ModelProto -> qIR --------------------------===//

#include "qopt/Onnx/OnnxImporter.h"
#include "OnnxTypes.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpsetSpellings.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Support/FloatFormat.h"

#include "onnx/onnx_pb.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <queue>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>

using namespace qopt;

static llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

static std::string describeProto(const onnx::NodeProto &n) {
  if (n.op_type().empty()) // nothing to show in parentheses
    return !n.name().empty() ? "node '" + n.name() + "'"
           : n.output_size() && !n.output(0).empty()
               ? "node producing '" + n.output(0) + "'"
               : std::string("unnamed node");
  std::string op = n.domain().empty() || n.domain() == "ai.onnx"
                       ? n.op_type()
                       : n.domain() + "." + n.op_type();
  if (!n.name().empty())
    return "node '" + n.name() + "' (" + op + ")";
  if (n.output_size() && !n.output(0).empty())
    return "node producing '" + n.output(0) + "' (" + op + ")";
  return "unnamed node (" + op + ")";
}

static bool isDefaultDomain(const std::string &d) {
  return d.empty() || d == "ai.onnx";
}

static std::string shapeText(llvm::ArrayRef<int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Tensor data
//===----------------------------------------------------------------------===//

/// Confines an external data location to the model directory.
static llvm::Expected<std::string> resolveExternalPath(llvm::StringRef base,
                                                       llvm::StringRef loc,
                                                       llvm::StringRef what) {
  if (loc.empty())
    return makeError(what + ": external data has no location");
  if (llvm::sys::path::is_absolute(loc))
    return makeError(what + ": external data path '" + loc +
                     "' is absolute; it must be relative to the model");
  for (auto it = llvm::sys::path::begin(loc), e = llvm::sys::path::end(loc);
       it != e; ++it)
    if (*it == "..")
      return makeError(what + ": external data path '" + loc +
                       "' escapes the model directory");
  llvm::SmallString<256> full(base.empty() ? "." : base);
  llvm::sys::path::append(full, loc);
  // Symbolic links may not lead out of the model's directory either.
  llvm::SmallString<256> realBase, realFull;
  if (!llvm::sys::fs::real_path(base.empty() ? "." : base, realBase) &&
      !llvm::sys::fs::real_path(full, realFull)) {
    llvm::StringRef f = realFull, b = realBase;
    if (!f.startswith(b) || (f.size() > b.size() && f[b.size()] != '/'))
      return makeError(what + ": external data path '" + loc +
                       "' leads out of the model directory");
  }
  return std::string(full.str());
}

llvm::Expected<DenseElementsRef>
qopt::onnxbridge::tensorFromProto(onnx::TensorProto &t, llvm::StringRef baseDir,
                                  llvm::StringRef what) {
  auto kind = elementKindFromOnnx(t.data_type(), what);
  if (!kind)
    return kind.takeError();
  if (*kind == ElementKind::Unknown)
    return makeError(what + ": tensor has no data type (UNDEFINED)");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0)
      return makeError(what + ": negative dimension in " + shapeText(dims));
    if (__builtin_mul_overflow(count, d, &count))
      return makeError(what + ": element count of " + shapeText(dims) +
                       " overflows");
  }
  if (*kind == ElementKind::String) {
    if (t.string_data_size() != count)
      return makeError(what + ": has " + llvm::Twine(t.string_data_size()) +
                       " strings, expected " + llvm::Twine(count));
    return std::make_shared<const DenseElements>(
        dims,
        std::vector<std::string>(t.string_data().begin(),
                                 t.string_data().end()),
        t.name());
  }
  auto bytes = DenseElements::byteSizeFor(*kind, count);
  constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 34; // 16 GiB
  if (!bytes || *bytes > kMaxTensorBytes)
    return makeError(what + ": " + llvm::Twine(count) +
                     " elements is more than qopt accepts for one tensor");
  unsigned width = getElementByteSize(*kind);

  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    uint64_t offset = 0;
    std::optional<uint64_t> length;
    for (const auto &kv : t.external_data()) {
      uint64_t v = 0;
      if (kv.key() == "location") {
        location = kv.value();
      } else if (kv.key() == "offset" || kv.key() == "length") {
        if (llvm::StringRef(kv.value()).getAsInteger(10, v))
          return makeError(what + ": invalid external data " + kv.key() + " '" +
                           kv.value() + "'");
        if (kv.key() == "offset")
          offset = v;
        else
          length = v;
      }
    }
    auto path = resolveExternalPath(baseDir, location, what);
    if (!path)
      return path.takeError();
    uint64_t fileSize = 0;
    if (!llvm::sys::fs::is_regular_file(*path) ||
        llvm::sys::fs::file_size(*path, fileSize))
      return makeError(what + ": external data file '" + location +
                       "' is missing or not a regular file");
    uint64_t len = length ? *length : *bytes;
    if (len != *bytes)
      return makeError(what + ": external data length " + llvm::Twine(len) +
                       " does not match the " + llvm::Twine(*bytes) +
                       " bytes its shape needs");
    if (offset > fileSize || fileSize - offset < len)
      return makeError(what + ": external data file '" + location +
                       "' is too short");
    int fd = ::open(path->c_str(), O_RDONLY);
    if (fd < 0)
      return makeError(what + ": cannot open external data file '" + location +
                       "'");
    std::string data(len, '\0');
    ssize_t got = ::pread(fd, data.data(), len, static_cast<off_t>(offset));
    ::close(fd);
    if (got < 0 || static_cast<uint64_t>(got) != len)
      return makeError(what + ": short read from external data file '" +
                       location + "'");
    return std::make_shared<const DenseElements>(*kind, dims, std::move(data),
                                                 t.name());
  }

  if (t.has_raw_data()) {
    if (t.raw_data().size() != *bytes)
      return makeError(what + ": raw_data has " +
                       llvm::Twine(t.raw_data().size()) + " bytes, expected " +
                       llvm::Twine(*bytes) + " for shape " + shapeText(dims));
    std::string data;
    data.swap(*t.mutable_raw_data()); // no copy of large weights
    return std::make_shared<const DenseElements>(*kind, dims, std::move(data),
                                                 t.name());
  }

  auto countMismatch = [&](int have) {
    return makeError(what + ": has " + llvm::Twine(have) +
                     " values, expected " + llvm::Twine(count) + " for shape " +
                     shapeText(dims));
  };
  // The typed field's length is checked before anything is allocated.
  int have;
  switch (*kind) {
  case ElementKind::F32:
    have = t.float_data_size();
    break;
  case ElementKind::F64:
    have = t.double_data_size();
    break;
  case ElementKind::I64:
    have = t.int64_data_size();
    break;
  case ElementKind::U32:
  case ElementKind::U64:
    have = t.uint64_data_size();
    break;
  default:
    have = t.int32_data_size();
  }
  if (have != count)
    return countMismatch(have);
  std::string data(*bytes, '\0');
  switch (*kind) {
  case ElementKind::F32:
    if (t.float_data_size() != count)
      return countMismatch(t.float_data_size());
    if (*bytes)
      std::memcpy(data.data(), t.float_data().data(), *bytes);
    break;
  case ElementKind::F64:
    if (t.double_data_size() != count)
      return countMismatch(t.double_data_size());
    if (*bytes)
      std::memcpy(data.data(), t.double_data().data(), *bytes);
    break;
  case ElementKind::I64:
    if (t.int64_data_size() != count)
      return countMismatch(t.int64_data_size());
    if (*bytes)
      std::memcpy(data.data(), t.int64_data().data(), *bytes);
    break;
  case ElementKind::U32:
  case ElementKind::U64:
    if (t.uint64_data_size() != count)
      return countMismatch(t.uint64_data_size());
    for (int64_t i = 0; i < count; ++i) {
      uint64_t v = t.uint64_data(i);
      std::memcpy(&data[i * width], &v, width);
    }
    break;
  default: // int32_data carries I32 and all narrower kinds (and f16 bits)
    if (t.int32_data_size() != count)
      return countMismatch(t.int32_data_size());
    for (int64_t i = 0; i < count; ++i) {
      int32_t v = t.int32_data(i);
      std::memcpy(&data[i * width], &v, width);
    }
  }
  return std::make_shared<const DenseElements>(*kind, dims, std::move(data),
                                               t.name());
}

//===----------------------------------------------------------------------===//
// Importer
//===----------------------------------------------------------------------===//

namespace {

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
  ElementKind knownKind(const std::string &name);
  /// Rank known for a value name before emission.
  std::optional<std::vector<Dim>> knownShape(const std::string &name);
  const DenseElements *constantData(const std::string &name);

  onnx::ModelProto &proto;
  std::string baseDir;
  Context &ctx;
  std::unique_ptr<Model> model;
  int64_t opset = 0;

  struct DeclaredType {
    const onnx::TypeProto *proto;
    const TensorType *converted = nullptr;
  };
  // Keys are the proto's own strings, which outlive the import.
  llvm::DenseMap<llvm::StringRef, DeclaredType> declared;
  std::unordered_map<std::string, onnx::TensorProto *> initializers;
  std::vector<std::string> initializerOrder;
  /// Output of a Constant node with a `value` tensor -> that node.
  std::unordered_map<std::string, const onnx::NodeProto *> constantNodes;
  std::unordered_map<std::string, DenseElementsRef> constantCache;
  std::unordered_map<std::string, std::optional<std::vector<Dim>>> shapeCache;
  llvm::DenseMap<llvm::StringRef, int> producers; // value -> node index
  llvm::StringSet<> graphInputs;
  std::vector<int> order;
  /// Per node (file order): outer names its subgraphs read.
  std::vector<std::vector<std::string>> captureNames;
  std::vector<QdqInfo> qdq;
  /// Quantized element type assigned to a value name.
  llvm::DenseMap<llvm::StringRef, const QuantType *> valueQuant;
  llvm::DenseMap<llvm::StringRef, Value *> values;
  /// Scale/zero-point initializers read by converted Q/DQ nodes.
  llvm::StringSet<> absorbedParams;
};

llvm::Error Importer::importHeader() {
  model->irVersion = proto.ir_version();
  if (!proto.has_graph())
    return makeError("model has no graph");
  bool haveDefault = false;
  for (const auto &o : proto.opset_import()) {
    if (isDefaultDomain(o.domain())) {
      haveDefault = true;
      opset = o.version();
      if (opset > kMaxSupportedOpset)
        return makeError("opset " + llvm::Twine(opset) +
                         " of the default domain is newer than the newest "
                         "supported (" +
                         llvm::Twine(kMaxSupportedOpset) + ")");
      if (opset < 1)
        return makeError("invalid version " + llvm::Twine(opset) +
                         " for the opset of the default domain");
    }
    model->opsetImports.push_back(
        {isDefaultDomain(o.domain()) ? std::string() : o.domain(),
         o.version()});
  }
  if (!haveDefault)
    for (const auto &n : proto.graph().node())
      if (isDefaultDomain(n.domain()))
        return makeError(describeProto(n) +
                         ": the model imports no opset of the default ONNX "
                         "domain");
  model->producerName = proto.producer_name();
  model->producerVersion = proto.producer_version();
  model->domain = proto.domain();
  model->modelVersion = proto.model_version();
  model->docString = proto.doc_string();
  for (const auto &p : proto.metadata_props())
    model->metadataProps.push_back({p.key(), p.value()});
  for (const auto &f : proto.functions())
    model->functions.push_back(f.SerializeAsString());
  const onnx::GraphProto &g = proto.graph();
  model->getGraph().setName(g.name());
  model->getGraph().setDocString(g.doc_string());
  if (g.node_size() == 0 && g.output_size() == 0)
    return makeError("graph '" + g.name() +
                     "' is empty: no nodes and no "
                     "outputs");
  if (g.output_size() == 0)
    return makeError("graph '" + g.name() + "' has no outputs");
  return llvm::Error::success();
}

llvm::Error Importer::collectDeclaredTypes() {
  const onnx::GraphProto &g = proto.graph();
  for (const auto &vi : g.value_info())
    if (vi.has_type())
      declared[vi.name()] = {&vi.type()};
  for (const auto &vi : g.output())
    if (vi.has_type())
      declared[vi.name()] = {&vi.type()};
  for (const auto &vi : g.input())
    if (vi.has_type())
      declared[vi.name()] = {&vi.type()};
  // Convert each once so malformed types fail early with the value's name.
  // In file order (inputs, value_info, outputs), so the error reported for
  // a model with several bad declarations does not depend on hashing.
  for (const auto *list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto &vi : *list)
      if (vi.has_type())
        if (auto t = declaredType(vi.name()); !t)
          return t.takeError();
  return llvm::Error::success();
}

llvm::Error Importer::collectConstants() {
  onnx::GraphProto &g = *proto.mutable_graph();
  for (auto &t : *g.mutable_initializer()) {
    if (t.name().empty())
      return makeError("initializer #" + llvm::Twine(initializerOrder.size()) +
                       " has no name");
    if (!initializers.emplace(t.name(), &t).second)
      return makeError("duplicate initializer '" + t.name() + "'");
    initializerOrder.push_back(t.name());
  }
  for (const auto &in : g.input()) {
    if (in.name().empty())
      return makeError("a graph input has no name");
    if (initializers.count(in.name())) {
      model->getGraph().getInitializerInputs().push_back(in.name());
      continue;
    }
    if (!graphInputs.insert(in.name()).second)
      return makeError("duplicate graph input '" + in.name() + "'");
  }
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto &n = g.node(i);
    for (const std::string &out : n.output()) {
      if (out.empty())
        continue;
      if (initializers.count(out) || graphInputs.count(out))
        return makeError(describeProto(n) + ": output '" + out +
                         "' has the name of a graph input or initializer");
      auto [it, inserted] = producers.try_emplace(out, i);
      if (!inserted)
        return makeError(describeProto(n) + ": value name '" + out +
                         "' is already produced by " +
                         describeProto(g.node(it->second)));
    }
    if (isDefaultDomain(n.domain()) && n.op_type() == "Constant" &&
        n.output_size() == 1)
      for (const auto &a : n.attribute())
        if (a.name() == "value" && a.has_t())
          constantNodes[n.output(0)] = &n;
  }
  return llvm::Error::success();
}

/// Names that `g` (a subgraph, with everything nested in it) reads without
/// defining them: they come from the enclosing graph.
static void collectOuterReads(const onnx::GraphProto &g,
                              std::unordered_set<std::string> defined,
                              std::vector<std::string> &out,
                              std::unordered_set<std::string> &seen) {
  for (const auto &i : g.input())
    defined.insert(i.name());
  for (const auto &t : g.initializer())
    defined.insert(t.name());
  for (const auto &t : g.sparse_initializer())
    defined.insert(t.values().name());
  for (const auto &n : g.node())
    for (const std::string &o : n.output())
      defined.insert(o);
  for (const auto &n : g.node()) {
    for (const std::string &in : n.input())
      if (!in.empty() && !defined.count(in) && seen.insert(in).second)
        out.push_back(in);
    for (const auto &a : n.attribute()) {
      if (a.has_g())
        collectOuterReads(a.g(), defined, out, seen);
      for (const auto &sub : a.graphs())
        collectOuterReads(sub, defined, out, seen);
    }
  }
}

llvm::Error Importer::sortNodes() {
  const onnx::GraphProto &g = proto.graph();
  int n = g.node_size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> users(n);
  captureNames.assign(n, {});
  for (int i = 0; i < n; ++i) {
    const onnx::NodeProto &node = g.node(i);
    std::unordered_set<std::string> seen;
    for (const auto &a : node.attribute()) {
      if (a.has_g())
        collectOuterReads(a.g(), {}, captureNames[i], seen);
      for (const auto &sub : a.graphs())
        collectOuterReads(sub, {}, captureNames[i], seen);
    }
    for (const std::string &name : captureNames[i]) {
      auto it = producers.find(name);
      if (it != producers.end()) {
        ++pending[i];
        users[it->second].push_back(i);
      } else if (!initializers.count(name) && !graphInputs.count(name)) {
        return makeError(describeProto(node) + ": its subgraph reads '" + name +
                         "', which the graph does not define");
      }
    }
    for (const std::string &in : node.input()) {
      if (in.empty())
        continue;
      auto it = producers.find(in);
      if (it != producers.end()) {
        ++pending[i];
        users[it->second].push_back(i);
      } else if (!initializers.count(in) && !graphInputs.count(in)) {
        return makeError(describeProto(node) + ": input '" + in +
                         "' is not produced by any node, initializer or "
                         "graph input");
      }
    }
  }
  // Stable Kahn: among ready nodes, the earliest in the file goes first, so
  // an already sorted model keeps its order.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0)
      ready.push(i);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[i])
      if (--pending[u] == 0)
        ready.push(u);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (pending[i] > 0)
        return makeError(describeProto(g.node(i)) +
                         ": the graph has a cycle through this node");
  }
  return llvm::Error::success();
}

const DenseElements *Importer::constantData(const std::string &name) {
  auto cached = constantCache.find(name);
  if (cached != constantCache.end())
    return cached->second.get();
  return nullptr;
}

ElementKind Importer::knownKind(const std::string &name) {
  if (const DenseElements *d = constantData(name))
    return d->getKind();
  auto it = declared.find(name);
  if (it != declared.end() && it->second.proto->has_tensor_type()) {
    auto k = onnxbridge::elementKindFromOnnx(
        it->second.proto->tensor_type().elem_type(), name);
    if (k)
      return *k;
    llvm::consumeError(k.takeError());
  }
  auto q = valueQuant.find(name);
  if (q != valueQuant.end())
    return q->second->getStorageKind();
  return ElementKind::Unknown;
}

std::optional<std::vector<Dim>> Importer::knownShape(const std::string &name) {
  // Walks back through Q/DQ chains (a Q/DQ's output has its input's shape)
  // iteratively, remembering every answer: linear in the chain length.
  std::vector<std::string> chain;
  std::optional<std::vector<Dim>> result;
  std::string cur = name;
  while (true) {
    auto cached = shapeCache.find(cur);
    if (cached != shapeCache.end()) {
      result = cached->second;
      break;
    }
    chain.push_back(cur);
    if (const DenseElements *d = constantData(cur)) {
      std::vector<Dim> dims;
      for (int64_t x : d->getDims())
        dims.push_back(Dim::fixed(x));
      result = dims;
      break;
    }
    auto t = declaredType(cur);
    if (!t) {
      llvm::consumeError(t.takeError());
      break;
    }
    if ((*t)->hasRank()) {
      result =
          std::vector<Dim>((*t)->getShape().begin(), (*t)->getShape().end());
      break;
    }
    auto p = producers.find(cur);
    if (p == producers.end())
      break;
    const onnx::NodeProto &n = proto.graph().node(p->second);
    if (!isDefaultDomain(n.domain()) ||
        (n.op_type() != "QuantizeLinear" &&
         n.op_type() != "DequantizeLinear") ||
        n.input_size() == 0 || n.input(0).empty())
      break;
    cur = n.input(0);
  }
  for (const std::string &c : chain)
    shapeCache[c] = result;
  return result;
}

llvm::Error Importer::analyzeQdq(const onnx::NodeProto &n, QdqInfo &info) {
  bool isQ = n.op_type() == "QuantizeLinear";
  std::string where = describeProto(n);
  int numInputs = n.input_size();
  while (numInputs > 0 && n.input(numInputs - 1).empty())
    --numInputs;
  if (numInputs < 2 || numInputs > 3)
    return makeError(where +
                     ": expects 2 or 3 inputs (x, scale, "
                     "zero_point), got " +
                     llvm::Twine(n.input_size()));
  if (n.input(0).empty() || n.input(1).empty())
    return makeError(where + ": input x and scale are required");
  if (n.output_size() != 1)
    return makeError(where + ": expects 1 output, got " +
                     llvm::Twine(n.output_size()));

  std::optional<int64_t> axisAttr, outputDtype;
  bool knownAttrsOnly = true;
  std::string misplacedAttr;
  for (const auto &a : n.attribute()) {
    if (a.name() == "axis") {
      axisAttr = a.i();
    } else if (a.name() == "block_size") {
      if (opset < 21) {
        // Not an attribute of this opset: reported after the other checks,
        // which usually find the model's real defect.
        misplacedAttr = a.name();
      } else if (a.i() != 0) {
        return makeError(where + ": blocked quantization (block_size = " +
                         llvm::Twine(a.i()) + ") is not supported");
      }
    } else if (a.name() == "output_dtype" && isQ) {
      if (opset < 21)
        misplacedAttr = a.name();
      outputDtype = a.i();
    } else if (a.name() != "saturate") {
      knownAttrsOnly = false;
    }
  }

  const std::string &x = n.input(0);
  const std::string &scaleName = n.input(1);
  std::string zpName = numInputs == 3 ? n.input(2) : std::string();

  // Parameters that are not constants keep the node opaque.
  const DenseElements *scale = constantData(scaleName);
  const DenseElements *zp = zpName.empty() ? nullptr : constantData(zpName);
  ElementKind scaleKind = knownKind(scaleName);
  if (scaleKind != ElementKind::Unknown && !isFloatKind(scaleKind))
    return makeError(where + ": scale '" + scaleName +
                     "' must be a float tensor, got " +
                     getElementKindName(scaleKind));
  ElementKind zpKind =
      zpName.empty() ? ElementKind::Unknown : knownKind(zpName);
  if (zpKind != ElementKind::Unknown && !isQuantStorageKind(zpKind))
    return makeError(where + ": zero point '" + zpName +
                     "' must be int8, uint8, int16, uint16" +
                     (isQ ? "" : " or int32") + ", got " +
                     getElementKindName(zpKind));
  if ((zpKind == ElementKind::I16 || zpKind == ElementKind::U16) && opset < 21)
    return makeError(where + ": 16-bit zero point '" + zpName +
                     "' needs opset 21, but the model imports opset " +
                     llvm::Twine(opset));
  if (isQ && zpKind == ElementKind::I32)
    return makeError(where + ": zero point '" + zpName +
                     "' of type i32 is only valid for DequantizeLinear");
  if (scale && scale->getKind() == ElementKind::F64)
    return makeError(where + ": scale '" + scaleName +
                     "' must be float, float16 or bfloat16, got f64");

  // Storage type: zero point, else output_dtype (Q) / x's type (DQ), else u8.
  ElementKind storage = zpKind;
  if (outputDtype && *outputDtype != 0) {
    auto k = onnxbridge::elementKindFromOnnx(*outputDtype, where);
    if (!k)
      return k.takeError();
    if (!isQuantStorageKind(*k) || *k == ElementKind::I32)
      return makeError(where + ": output_dtype " + getElementKindName(*k) +
                       " is not a supported quantized type");
    if (storage != ElementKind::Unknown && storage != *k)
      return makeError(where + ": output_dtype " + getElementKindName(*k) +
                       " does not match the zero point type " +
                       getElementKindName(storage));
    storage = *k;
  }
  ElementKind xKind = knownKind(x);
  if (isQ) {
    if (xKind != ElementKind::Unknown && !isFloatKind(xKind))
      return makeError(where + ": input '" + x +
                       "' must be a float tensor, "
                       "got " +
                       getElementKindName(xKind));
    if (storage == ElementKind::Unknown && zpName.empty())
      storage = ElementKind::U8;
  } else {
    if (xKind != ElementKind::Unknown) {
      if (!isQuantStorageKind(xKind))
        return makeError(where + ": input '" + x +
                         "' must be int8, uint8, "
                         "int16, uint16 or int32, "
                         "got " +
                         getElementKindName(xKind));
      if (storage != ElementKind::Unknown && storage != xKind)
        return makeError(where + ": input '" + x + "' is " +
                         getElementKindName(xKind) + " but the zero point is " +
                         getElementKindName(storage));
      storage = xKind;
    }
  }
  // Declared result type of a Q must be the storage type.
  if (isQ && storage != ElementKind::Unknown) {
    ElementKind declaredOut = knownKind(n.output(0));
    if (declaredOut != ElementKind::Unknown && declaredOut != storage)
      return makeError(where + ": output '" + n.output(0) + "' is declared " +
                       getElementKindName(declaredOut) +
                       " but the quantized type is " +
                       getElementKindName(storage) +
                       " (from the zero point or output_dtype)");
  }

  // Shapes, from constants or declared types: per tensor (one element,
  // rank <= 1) or per axis (rank 1). Checked even for dynamic parameters.
  auto staticDims =
      [&](const std::string &name) -> std::optional<std::vector<int64_t>> {
    auto shape = knownShape(name);
    if (!shape)
      return std::nullopt;
    std::vector<int64_t> dims;
    for (const Dim &d : *shape) {
      if (!d.isStatic())
        return std::nullopt;
      dims.push_back(d.size);
    }
    return dims;
  };
  auto numElements = [](const std::vector<int64_t> &dims) {
    int64_t n = 1;
    for (int64_t d : dims)
      if (d < 0 || __builtin_mul_overflow(n, d, &n))
        return std::numeric_limits<int64_t>::max(); // reads as "blocked"
    return n;
  };
  std::optional<std::vector<int64_t>> sdims = staticDims(scaleName);
  std::optional<std::vector<int64_t>> zdims =
      zpName.empty() ? std::nullopt : staticDims(zpName);
  if (sdims && zdims && *zdims != *sdims &&
      !(numElements(*sdims) == 1 && numElements(*zdims) == 1))
    return makeError(where + ": zero point shape " + shapeText(*zdims) +
                     " does not match scale shape " + shapeText(*sdims));
  if (sdims && sdims->size() > 1 && numElements(*sdims) != 1)
    return makeError(where + ": scale of shape " + shapeText(*sdims) +
                     " means blocked quantization, which is not supported");
  if (sdims && numElements(*sdims) == 0)
    return makeError(where + ": scale '" + scaleName + "' is empty");
  std::optional<int64_t> axis;
  if (sdims && numElements(*sdims) > 1) {
    int64_t channels = numElements(*sdims);
    int64_t a = axisAttr.value_or(1);
    if (auto xShape = knownShape(x)) {
      int64_t rank = static_cast<int64_t>(xShape->size());
      if (a < -rank || a >= rank)
        return makeError(where + ": axis " + llvm::Twine(a) +
                         " is out of range for input '" + x + "' of rank " +
                         llvm::Twine(rank));
      if (a < 0)
        a += rank;
      const Dim &d = (*xShape)[a];
      if (d.isStatic() && d.size != channels)
        return makeError(where + ": per-axis scale has " +
                         llvm::Twine(channels) + " elements but axis " +
                         llvm::Twine(a) + " of input '" + x + "' has size " +
                         llvm::Twine(d.size));
      axis = a;
    } else if (a < 0) {
      return llvm::Error::success(); // cannot normalise: stay opaque
    } else {
      axis = a;
    }
  }

  if (!misplacedAttr.empty())
    return makeError(where + ": attribute '" + misplacedAttr +
                     "' needs opset 21, but the model imports opset " +
                     llvm::Twine(opset));

  if (!scale || (!zpName.empty() && !zp) || !knownAttrsOnly ||
      storage == ElementKind::Unknown)
    return llvm::Error::success(); // dynamic parameters: opaque node

  int64_t channels = scale->getNumElements();
  std::vector<float> scales;
  std::vector<int64_t> zps;
  for (int64_t i = 0; i < channels; ++i) {
    float s = static_cast<float>(scale->getAsDouble(i));
    if (!std::isfinite(s) || !(s > 0))
      return makeError(where + ": scale '" + scaleName +
                       "' must be finite and > 0, got " +
                       (std::isnan(s) ? std::string("nan") : formatFloat(s)));
    scales.push_back(s);
    zps.push_back(zp ? zp->getAsInt(i) : 0);
  }
  const QuantType *q =
      ctx.getQuantType(storage, scale->getKind(), axis, scales, zps);
  std::string why = checkQuantType(q);
  if (!why.empty())
    return makeError(where + ": " + why);
  info.convertible = true;
  info.quant = q;
  return llvm::Error::success();
}

llvm::Error Importer::assignQuantTypes() {
  const onnx::GraphProto &g = proto.graph();
  qdq.resize(g.node_size());
  // Quantize results first: they define their values' types.
  for (int i : order) {
    const onnx::NodeProto &n = g.node(i);
    if (!isDefaultDomain(n.domain()) ||
        (n.op_type() != "QuantizeLinear" && n.op_type() != "DequantizeLinear"))
      continue;
    if (auto err = analyzeQdq(n, qdq[i]))
      return err;
    if (qdq[i].convertible && n.op_type() == "QuantizeLinear")
      valueQuant[n.output(0)] = qdq[i].quant;
  }
  // Then each DQ input not produced by a convertible Q takes the parameters
  // its DQ consumers agree on.
  // Keyed by the proto's strings: valueQuant keeps these keys.
  llvm::DenseMap<llvm::StringRef, std::vector<int>> dqUsers;
  for (int i : order) {
    const onnx::NodeProto &n = g.node(i);
    if (qdq[i].convertible && n.op_type() == "DequantizeLinear")
      dqUsers[n.input(0)].push_back(i);
  }
  for (auto &[name, users] : dqUsers) {
    auto q = valueQuant.find(name);
    if (q != valueQuant.end()) {
      for (int u : users)
        if (qdq[u].quant != q->second)
          qdq[u].convertible = false; // different params: keep ONNX DQ
      continue;
    }
    bool agree = true;
    for (int u : users)
      agree &= qdq[u].quant == qdq[users.front()].quant;
    ElementKind kind = knownKind(name.str());
    if (agree && (kind == ElementKind::Unknown ||
                  kind == qdq[users.front()].quant->getStorageKind())) {
      valueQuant[name] = qdq[users.front()].quant;
    } else {
      for (int u : users)
        qdq[u].convertible = false;
    }
  }
  return llvm::Error::success();
}

/// Older opsets wrote some operands as attributes: they become constant
/// operands (the canonical spelling), named after the node's first output.
llvm::Error Importer::canonicalizeSpelling(const onnx::NodeProto &n,
                                           llvm::StringRef op,
                                           std::vector<Value *> &operands,
                                           std::vector<NamedAttribute> &attrs) {
  Graph &graph = model->getGraph();
  for (const AttrOperandSpelling &sp : getAttrOperandSpellings(op)) {
    if (opset >= sp.operandSince)
      continue;
    auto it = std::find_if(attrs.begin(), attrs.end(),
                           [&](auto &a) { return a.name == sp.attrName; });
    if (it == attrs.end())
      continue;
    if (operands.size() > sp.operandIndex && operands[sp.operandIndex])
      return makeError(describeProto(n) + ": '" + sp.attrName +
                       "' is given as an attribute and as input " +
                       llvm::Twine(sp.operandIndex));
    DenseElementsRef data;
    if (sp.attrKind == AttrKind::Ints) {
      if (!it->value.getIf<std::vector<int64_t>>() &&
          !it->value.getIf<EmptyList>())
        return makeError(describeProto(n) + ": attribute '" + sp.attrName +
                         "' must be a list of ints");
      std::vector<int64_t> v = it->value.getInts();
      std::string bytes(reinterpret_cast<const char *>(v.data()),
                        v.size() * sizeof(int64_t));
      data = std::make_shared<const DenseElements>(
          ElementKind::I64, std::vector<int64_t>{int64_t(v.size())},
          std::move(bytes));
    } else {
      const float *f = it->value.getIf<float>();
      if (!f)
        return makeError(describeProto(n) + ": attribute '" + sp.attrName +
                         "' must be a float");
      // The bound has the data's float type (Clip, Pad are one T).
      ElementKind kind = ElementKind::F32;
      if (!operands.empty() && operands[0] &&
          isFloatKind(operands[0]->getType()->getStorageKind()))
        kind = operands[0]->getType()->getStorageKind();
      std::string bytes;
      double d = *f;
      auto put = [&](auto v) {
        bytes.assign(reinterpret_cast<const char *>(&v), sizeof(v));
      };
      switch (kind) {
      case ElementKind::F64:
        put(d);
        break;
      case ElementKind::F16:
        put(floatToHalf(*f));
        break;
      case ElementKind::BF16:
        put(floatToBFloat16(*f));
        break;
      default:
        put(*f);
      }
      data = std::make_shared<const DenseElements>(kind, std::vector<int64_t>{},
                                                   std::move(bytes));
    }
    std::vector<Dim> dims;
    for (int64_t d : data->getDims())
      dims.push_back(Dim::fixed(d));
    std::string stem =
        (n.output_size() && !n.output(0).empty() ? n.output(0) : n.name()) +
        "_" + sp.attrName.str();
    Node *c = graph.createNode(
        ops::Constant, {},
        {{ctx.getTensorType(dims, ctx.getElementType(data->getKind())),
          graph.makeUniqueName(stem)}},
        {{"value", Attribute(data)}});
    if (operands.size() <= sp.operandIndex)
      operands.resize(sp.operandIndex + 1, nullptr);
    operands[sp.operandIndex] = c->getResult();
    attrs.erase(it);
  }
  return llvm::Error::success();
}

/// Upsample (opsets 7-9) is Resize with asymmetric coordinates; Resize-10
/// has no roi operand.
void Importer::canonicalizeResize(const onnx::NodeProto &n, std::string &op,
                                  std::vector<Value *> &operands,
                                  std::vector<NamedAttribute> &attrs) {
  if (op == "onnx.Resize" && opset < 11 && operands.size() == 2) {
    operands = {operands[0], nullptr, operands[1]};
    return;
  }
  if (op != "onnx.Upsample")
    return;
  op = "onnx.Resize";
  std::string mode = "nearest";
  for (auto it = attrs.begin(); it != attrs.end();) {
    if (it->name == "mode" && it->value.isString())
      mode = *it->value.getIf<std::string>();
    if (it->name == "scales" && it->value.getIf<std::vector<float>>()) {
      // Upsample-7 keeps the scales in an attribute.
      const std::vector<float> &v = *it->value.getIf<std::vector<float>>();
      std::string bytes(reinterpret_cast<const char *>(v.data()),
                        v.size() * sizeof(float));
      auto data = std::make_shared<const DenseElements>(
          ElementKind::F32, std::vector<int64_t>{int64_t(v.size())},
          std::move(bytes));
      Graph &graph = model->getGraph();
      Node *c = graph.createNode(
          ops::Constant, {},
          {{ctx.getTensorType(llvm::ArrayRef<int64_t>{int64_t(v.size())},
                              ctx.getElementType(ElementKind::F32)),
            graph.makeUniqueName(n.output(0) + "_scales")}},
          {{"value", Attribute(data)}});
      operands.push_back(c->getResult());
      it = attrs.erase(it);
      continue;
    }
    ++it;
  }
  attrs.push_back({"coordinate_transformation_mode", Attribute("asymmetric")});
  if (mode == "nearest")
    attrs.push_back({"nearest_mode", Attribute("floor")});
  // Resize(X, roi, scales): Upsample's scales move to position 2.
  if (operands.size() >= 2)
    operands = {operands[0], nullptr, operands[1]};
}

llvm::Error Importer::emitNodes() {
  Graph &graph = model->getGraph();
  const onnx::GraphProto &g = proto.graph();

  auto withQuant = [&](const std::string &name,
                       const TensorType *t) -> const TensorType * {
    auto q = valueQuant.find(name);
    if (q == valueQuant.end() || t->isQuantized())
      return t;
    ElementKind k = t->getStorageKind();
    if (k != ElementKind::Unknown && k != q->second->getStorageKind())
      return t;
    return t->withElementType(q->second);
  };

  // Graph inputs.
  for (const auto &in : g.input()) {
    if (initializers.count(in.name()))
      continue;
    auto t = declaredType(in.name());
    if (!t)
      return t.takeError();
    values[in.name()] = graph.addInput(withQuant(in.name(), *t), in.name());
  }
  // Initializers, as unnamed constants, in file order.
  for (const std::string &name : initializerOrder) {
    const DenseElements *d = constantData(name);
    std::vector<Dim> dims;
    for (int64_t x : d->getDims())
      dims.push_back(Dim::fixed(x));
    const TensorType *t = withQuant(
        name, ctx.getTensorType(dims, ctx.getElementType(d->getKind())));
    Node *c = graph.createNode(ops::Constant, {}, {{t, name}},
                               {{"value", Attribute(constantCache[name])}});
    values[name] = c->getResult();
  }

  for (int i : order) {
    const onnx::NodeProto &n = g.node(i);
    // Built only for an error message.
    struct LazyWhere {
      const onnx::NodeProto &n;
      operator std::string() const { return describeProto(n); }
      std::string operator+(const char *s) const {
        return describeProto(n) + s;
      }
    } where{n};
    bool isQ = isDefaultDomain(n.domain()) && n.op_type() == "QuantizeLinear";
    bool isDQ =
        isDefaultDomain(n.domain()) && n.op_type() == "DequantizeLinear";
    bool toQ = (isQ || isDQ) && qdq[i].convertible;
    // A DQ whose input ended up on other parameters (a data-movement op
    // carried a Q's type to it) keeps its explicit parameters.
    if (toQ && isDQ) {
      const QuantType *actual =
          values.lookup(n.input(0))->getType()->getQuantType();
      toQ = actual == qdq[i].quant;
    }

    std::string op;
    if (toQ)
      op = isQ ? ops::Quantize.str() : ops::Dequantize.str();
    else if (isDefaultDomain(n.domain()))
      op = "onnx." + n.op_type();
    else
      op = n.domain() + "." + n.op_type();
    if (n.op_type().empty())
      return makeError(where + ": op_type is empty");
    // Op names are "<domain>.<op_type>": these could not be split back.
    if (n.op_type().find('.') != std::string::npos)
      return makeError(where + ": op_type '" + n.op_type() +
                       "' contains '.', which qopt cannot represent yet");
    if (n.domain() == "q" || n.domain() == "onnx")
      return makeError(where + ": custom domain '" + n.domain() +
                       "' clashes with qopt's op names");

    std::vector<Value *> operands;
    int numInputs = toQ ? 1 : n.input_size();
    for (int k = 0; k < numInputs; ++k) {
      const std::string &in = n.input(k);
      operands.push_back(in.empty() ? nullptr : values.lookup(in));
    }

    std::vector<NamedAttribute> attrs;
    for (const auto &a : n.attribute()) {
      if (toQ && a.name() == "axis" && qdq[i].quant->isPerAxis())
        continue; // the type carries it
      auto attr =
          onnxbridge::attributeFromProto(a, baseDir, std::string(where));
      if (!attr)
        return attr.takeError();
      attrs.push_back({a.name(), std::move(*attr)});
    }
    if (toQ)
      recordParamNames(n, qdq[i].quant, attrs);
    if (isDefaultDomain(n.domain())) {
      if (auto err = canonicalizeSpelling(n, op, operands, attrs))
        return err;
      canonicalizeResize(n, op, operands, attrs);
    }

    std::vector<ResultSpec> results;
    for (int k = 0; k < n.output_size(); ++k) {
      const std::string &out = n.output(k);
      if (out.empty()) {
        results.push_back({ctx.getUnknownTensorType(), "", true});
        continue;
      }
      auto t = declaredType(out);
      if (!t)
        return t.takeError();
      const TensorType *type = *t;
      if (toQ) {
        const Type *elem =
            isQ ? static_cast<const Type *>(qdq[i].quant)
                : ctx.getElementType(qdq[i].quant->getExpressedKind());
        type = type->withElementType(elem);
      }
      results.push_back({type, out});
    }
    Node *node =
        graph.createNode(op, operands, results, std::move(attrs), n.name());
    for (const std::string &name : captureNames[i])
      node->addCapture(values.lookup(name));
    // Constant nodes share the tensor already decoded for parameter lookup.
    if (op == "onnx.Constant" && n.output_size() == 1 &&
        constantNodes.count(n.output(0)))
      node->setAttr("value", Attribute(constantCache[n.output(0)]));
    // Shapes and element types from the op table; a shape that does not
    // fit the op is an import error naming the node.
    if (auto err = inferNodeTypes(*node))
      return err;
    for (int k = 0; k < n.output_size(); ++k)
      if (!n.output(k).empty()) {
        Value *r = node->getResult(k);
        r->setType(withQuant(n.output(k), r->getType()));
        values[n.output(k)] = r;
      }
  }
  return llvm::Error::success();
}

/// What export needs to restore a Q/DQ's parameter initializers: their
/// names and, where not the default, their ranks. The numbers stay in the
/// quantized type only.
void Importer::recordParamNames(const onnx::NodeProto &n, const QuantType *q,
                                std::vector<NamedAttribute> &attrs) {
  std::vector<std::string> names;
  std::vector<int64_t> ranks;
  bool defaultRanks = true;
  int defaultRank = q->isPerAxis() ? 1 : 0;
  for (int k = 1; k < n.input_size() && k < 3; ++k) {
    if (n.input(k).empty())
      break;
    names.push_back(n.input(k));
    absorbedParams.insert(n.input(k));
    const DenseElements *d = constantData(n.input(k));
    int rank = d ? static_cast<int>(d->getDims().size()) : defaultRank;
    ranks.push_back(rank);
    defaultRanks &= rank == defaultRank;
  }
  attrs.push_back({"param_names", Attribute(std::move(names))});
  if (!defaultRanks)
    attrs.push_back({"param_ranks", Attribute(std::move(ranks))});
}

/// Parameter initializers whose every reader became a q.* node are gone:
/// the quantized types hold the numbers, export writes them back.
void Importer::eraseAbsorbedParams() {
  Graph &graph = model->getGraph();
  llvm::StringSet<> keep;
  for (const std::string &name : graph.getInitializerInputs())
    keep.insert(name);
  for (const auto &entry : absorbedParams) {
    llvm::StringRef name = entry.getKey();
    Value *v = graph.lookupValue(name);
    if (!v || keep.count(name) || v->hasUses() || !v->getDefiningNode() ||
        !v->getDefiningNode()->isa(ops::Constant))
      continue;
    graph.eraseNode(v->getDefiningNode());
  }
}

llvm::Error Importer::emitOutputs() {
  Graph &graph = model->getGraph();
  for (const auto &out : proto.graph().output()) {
    auto it = values.find(out.name());
    if (it == values.end())
      return makeError("graph output '" + out.name() +
                       "' is not produced by any node, initializer or input");
    Value *v = it->second;
    if (out.has_type()) {
      auto t = declaredType(out.name());
      if (!t)
        return t.takeError();
      const TensorType *merged = meetTypes(v->getType(), *t);
      if (!merged)
        return makeError("graph output '" + out.name() + "' is declared " +
                         typeToString(*t) + " but computed as " +
                         typeToString(v->getType()));
      v->setType(merged);
    }
    graph.addOutput(v);
  }
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Model>> Importer::run() {
  model = std::make_unique<Model>(ctx);
  if (auto err = importHeader())
    return std::move(err);
  if (auto err = collectDeclaredTypes())
    return std::move(err);
  if (auto err = collectConstants())
    return std::move(err);
  // Decode initializers and Constant-node tensors once.
  for (const std::string &name : initializerOrder) {
    auto d = onnxbridge::tensorFromProto(*initializers[name], baseDir,
                                         "initializer '" + name + "'");
    if (!d)
      return d.takeError();
    constantCache[name] = *d;
  }
  for (auto &[name, node] : constantNodes) {
    for (const auto &a : node->attribute())
      if (a.name() == "value") {
        onnx::TensorProto copy = a.t();
        auto d = onnxbridge::tensorFromProto(copy, baseDir,
                                             describeProto(*node) + ": value");
        if (!d)
          return d.takeError();
        constantCache[name] = *d;
      }
  }
  if (auto err = sortNodes())
    return std::move(err);
  if (auto err = assignQuantTypes())
    return std::move(err);
  if (auto err = emitNodes())
    return std::move(err);
  if (auto err = emitOutputs())
    return std::move(err);
  eraseAbsorbedParams();
  if (auto err = verifyModel(*model))
    return std::move(err);
  return std::move(model);
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

static llvm::Error parseProto(google::protobuf::io::ZeroCopyInputStream &in,
                              onnx::ModelProto &proto) {
  google::protobuf::io::CodedInputStream coded(&in);
  coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
  coded.SetRecursionLimit(onnxbridge::kProtoRecursionLimit);
  if (!proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    return makeError("not a valid ONNX model (protobuf parsing failed: the "
                     "file is truncated, not ONNX, or nested more than 256 "
                     "levels deep)");
  if (!proto.has_graph() && proto.opset_import_size() == 0)
    return makeError("not a valid ONNX model (no graph and no opset "
                     "imports)");
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<Model>>
qopt::importOnnxFile(llvm::StringRef path, Context &ctx) {
  int fd = ::open(path.str().c_str(), O_RDONLY);
  if (fd < 0)
    return makeError("cannot open file: " + llvm::Twine(std::strerror(errno)));
  // The message lives in an arena: a model of 100k nodes is 100k small
  // messages, and allocating and freeing them one by one costs more than
  // the import.
  google::protobuf::Arena arena;
  auto *proto =
      google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  llvm::Error err = llvm::Error::success();
  {
    google::protobuf::io::FileInputStream in(fd);
    err = parseProto(in, *proto);
  }
  ::close(fd);
  if (err)
    return std::move(err);
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  return Importer(*proto, dir, ctx).run();
}

llvm::Expected<std::unique_ptr<Model>>
qopt::importOnnxBuffer(llvm::StringRef bytes, llvm::StringRef baseDir,
                       Context &ctx) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return makeError("model larger than 2 GiB; use external data");
  google::protobuf::io::ArrayInputStream in(bytes.data(),
                                            static_cast<int>(bytes.size()));
  google::protobuf::Arena arena;
  auto *proto =
      google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  if (auto err = parseProto(in, *proto))
    return std::move(err);
  return Importer(*proto, baseDir, ctx).run();
}

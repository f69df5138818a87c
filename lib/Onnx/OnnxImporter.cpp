//===- OnnxImporter.cpp - ONNX ModelProto -> qIR --------------------------===//
//
// Reads the graph (header, declared types, constants, topological order) and
// emits its nodes, each through the op table's shape inference.
//
//===----------------------------------------------------------------------===//

#include "qopt/Onnx/OnnxImporter.h"
#include "OnnxImporterImpl.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/Verifier.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include "llvm/Support/Path.h"

#include <cstring>
#include <fcntl.h>
#include <queue>
#include <unistd.h>
#include <unordered_set>

using namespace qopt;
using namespace qopt::onnximport;

llvm::Error onnximport::makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
}

std::string onnximport::describeProto(const onnx::NodeProto &n) {
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

bool onnximport::isDefaultDomain(const std::string &d) {
  return d.empty() || d == "ai.onnx";
}

std::string onnximport::shapeText(llvm::ArrayRef<int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

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
    if (!initializers.try_emplace(t.name(), &t).second)
      return makeError("duplicate initializer '" + t.name() + "'");
    initializerOrder.push_back(t.name());
  }
  Graph &graph = model->getGraph();
  bool allLast = true; // initializer inputs after every real input
  for (const auto &in : g.input()) {
    if (in.name().empty())
      return makeError("a graph input has no name");
    if (initializers.count(in.name())) {
      graph.getInitializerInputPositions().push_back(
          static_cast<int64_t>(&in - &*g.input().begin()));
      graph.getInitializerInputs().push_back(in.name());
      continue;
    }
    allLast &= graph.getInitializerInputs().empty();
    if (!graphInputs.insert(in.name()).second)
      return makeError("duplicate graph input '" + in.name() + "'");
  }
  if (allLast)
    graph.getInitializerInputPositions().clear(); // the default: appended

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

const DenseElements *Importer::constantData(llvm::StringRef name) {
  auto cached = constantCache.find(name);
  if (cached != constantCache.end())
    return cached->second.get();
  return nullptr;
}

llvm::Error Importer::emitNodes() {
  Graph &graph = model->getGraph();
  const onnx::GraphProto &g = proto.graph();

  auto withQuant = [&](llvm::StringRef name,
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
  for (llvm::StringRef name : initializerOrder) {
    DenseElementsRef data = constantCache.lookup(name);
    std::vector<Dim> dims;
    for (int64_t x : data->getDims())
      dims.push_back(Dim::fixed(x));
    const TensorType *t = withQuant(
        name, ctx.getTensorType(dims, ctx.getElementType(data->getKind())));
    Node *c = graph.createNode(ops::Constant, {}, {{t, name.str()}},
                               {{"value", Attribute(std::move(data))}});
    values[name] = c->getResult();
  }

  for (int i : order) {
    const onnx::NodeProto &n = g.node(i);
    LazyNodeDescription where{n};
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
      auto attr = onnxbridge::attributeFromProto(
          a, baseDir, [&] { return describeProto(n); });
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
    bool asInferred = true;
    for (int k = 0; k < n.output_size(); ++k)
      if (!n.output(k).empty()) {
        Value *r = node->getResult(k);
        const TensorType *inferred = r->getType();
        r->setType(withQuant(n.output(k), inferred));
        asInferred &= r->getType() == inferred;
        values[n.output(k)] = r;
      }
    if (asInferred)
      typesAsInferred.insert(node);
  }
  return llvm::Error::success();
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
      if (merged != v->getType()) {
        // Its producer and readers are verified in full.
        typesAsInferred.erase(v->getDefiningNode());
        for (const Use &u : v->getUses())
          typesAsInferred.erase(u.user);
      }
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
  for (llvm::StringRef name : initializerOrder) {
    auto d = onnxbridge::tensorFromProto(*initializers[name], baseDir,
                                         "initializer '" + name.str() + "'");
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
        constantCache[name.val()] = *d;
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
  VerifyOptions verifyOptions;
  verifyOptions.typesAsInferred = &typesAsInferred;
  if (auto err = verifyModel(*model, verifyOptions))
    return std::move(err);
  return std::move(model);
}

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

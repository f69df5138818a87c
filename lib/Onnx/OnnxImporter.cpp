//===- OnnxImporter.cpp - ONNX ModelProto -> qIR --------------------------===//
//
// Reads the graph (header, value names, declared types, constants,
// topological order) and emits its nodes, each through the op table's shape
// inference. Value names are numbered once, as the proto is first read; every
// later step works on the numbers.
//
//===----------------------------------------------------------------------===//

#include "qopt/Onnx/OnnxImporter.h"
#include "OnnxImporterImpl.h"
#include "qopt/IR/ConstantFolding.h"

#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"

#include <cstring>
#include <queue>
#include <set>
#include <unordered_set>

using namespace qopt;
using namespace qopt::onnximport;

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
  if (proto.ir_version() < 0 || proto.model_version() < 0)
    return makeError("ir_version and model_version are at least 0");
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
    // An operator set's versions start at 1, in every domain (the .qir
    // parser requires it too, so that every imported model prints back).
    if (o.version() < 1)
      return makeError("invalid version " + llvm::Twine(o.version()) +
                       " for the opset of domain '" +
                       toPrintableLine(o.domain(), 80) + "'");
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

NameId Importer::intern(llvm::StringRef name) {
  auto [it, inserted] = nameIds.try_emplace(llvm::CachedHashStringRef(name),
                                            static_cast<NameId>(names.size()));
  if (inserted)
    names.push_back(name);
  return it->second;
}

void Importer::internNames() {
  const onnx::GraphProto &g = proto.graph();
  // Most names are written by exactly one node or listed once.
  nameIds.reserve(g.input_size() + g.initializer_size() + g.node_size());
  auto internAll = [&](const auto &list, std::vector<NameId> &ids) {
    ids.reserve(list.size());
    for (const auto &item : list)
      ids.push_back(intern(item.name()));
  };
  internAll(g.input(), inputIds);
  internAll(g.initializer(), initializerIds);
  internAll(g.value_info(), valueInfoIds);
  internAll(g.output(), outputIds);
  int n = g.node_size();
  nodeInputsBegin.resize(n + 1);
  nodeOutputsBegin.resize(n);
  for (int i = 0; i < n; ++i) {
    const onnx::NodeProto &node = g.node(i);
    nodeInputsBegin[i] = nodeNameIds.size();
    for (const std::string &in : node.input())
      nodeNameIds.push_back(in.empty() ? kNoName : intern(in));
    nodeOutputsBegin[i] = nodeNameIds.size();
    for (const std::string &out : node.output())
      nodeNameIds.push_back(out.empty() ? kNoName : intern(out));
  }
  nodeInputsBegin[n] = nodeNameIds.size();

  size_t count = names.size();
  declared.resize(count);
  initializers.resize(count);
  constantNodes.resize(count);
  constantCache.resize(count);
  shapeCache.resize(count);
  producers.assign(count, -1);
  isGraphInput.resize(count);
  isInitializerInput.resize(count);
  valueQuant.resize(count);
  values.resize(count);
  absorbedParams.resize(count);
  foldedValues.resize(count);
  readOnlyByFolds.resize(count);
}

std::string Importer::uniqueName(llvm::StringRef stem) {
  return model->getGraph().makeUniqueName(stem, [&](llvm::StringRef name) {
    return nameIds.count(llvm::CachedHashStringRef(name)) != 0;
  });
}

llvm::Error Importer::collectDeclaredTypes() {
  const onnx::GraphProto &g = proto.graph();
  // Later lists override earlier ones: inputs win, then outputs.
  auto declare = [&](const auto &list, llvm::ArrayRef<NameId> ids) {
    for (int k = 0; k < list.size(); ++k)
      if (list[k].has_type())
        declared[ids[k]] = {&list[k].type()};
  };
  declare(g.value_info(), valueInfoIds);
  declare(g.output(), outputIds);
  declare(g.input(), inputIds);
  // Convert each once so malformed types fail early with the value's name.
  // In file order (inputs, value_info, outputs), so the error reported for
  // a model with several bad declarations is the first one in the file.
  auto convert = [&](const auto &list,
                     llvm::ArrayRef<NameId> ids) -> llvm::Error {
    for (int k = 0; k < list.size(); ++k)
      if (list[k].has_type())
        if (auto t = declaredType(ids[k]); !t)
          return t.takeError();
    return llvm::Error::success();
  };
  if (auto err = convert(g.input(), inputIds))
    return err;
  if (auto err = convert(g.value_info(), valueInfoIds))
    return err;
  return convert(g.output(), outputIds);
}

llvm::Error Importer::collectConstants() {
  onnx::GraphProto &g = *proto.mutable_graph();
  for (int k = 0; k < g.initializer_size(); ++k) {
    onnx::TensorProto &t = *g.mutable_initializer(k);
    if (t.name().empty())
      return makeError("initializer #" + llvm::Twine(k) + " has no name");
    onnx::TensorProto *&slot = initializers[initializerIds[k]];
    if (slot)
      return makeError("duplicate initializer '" + t.name() + "'");
    slot = &t;
  }
  Graph &graph = model->getGraph();
  bool allLast = true; // initializer inputs after every real input
  for (int k = 0; k < g.input_size(); ++k) {
    const std::string &name = g.input(k).name();
    NameId id = inputIds[k];
    if (name.empty())
      return makeError("a graph input has no name");
    if (initializers[id]) {
      graph.getInitializerInputPositions().push_back(k);
      graph.getInitializerInputs().push_back(name);
      isInitializerInput.set(id);
      continue;
    }
    allLast &= graph.getInitializerInputs().empty();
    if (isGraphInput.test(id))
      return makeError("duplicate graph input '" + name + "'");
    isGraphInput.set(id);
  }
  if (allLast)
    graph.getInitializerInputPositions().clear(); // the default: appended

  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto &n = g.node(i);
    llvm::ArrayRef<NameId> outs = outputsOf(i);
    for (int k = 0; k < static_cast<int>(outs.size()); ++k) {
      NameId out = outs[k];
      if (out == kNoName)
        continue;
      if (initializers[out] || isGraphInput.test(out))
        return makeError(describeProto(n) + ": output '" + n.output(k) +
                         "' has the name of a graph input or initializer");
      if (producers[out] >= 0)
        return makeError(describeProto(n) + ": value name '" + n.output(k) +
                         "' is already produced by " +
                         describeProto(g.node(producers[out])));
      producers[out] = i;
    }
    if (isDefaultDomain(n.domain()) && n.op_type() == "Constant" &&
        outs.size() == 1 && outs[0] != kNoName)
      for (const auto &a : n.attribute())
        if (a.name() == "value" && a.has_t())
          constantNodes[outs[0]] = &n;
  }
  return llvm::Error::success();
}

/// Decodes initializers and Constant-node tensors once, in file order.
llvm::Error Importer::decodeConstants() {
  const onnx::GraphProto &g = proto.graph();
  for (int k = 0; k < g.initializer_size(); ++k) {
    NameId id = initializerIds[k];
    auto d = onnxbridge::tensorFromProto(
        *initializers[id], baseDir, "initializer '" + names[id].str() + "'");
    if (!d)
      return d.takeError();
    constantCache[id] = *d;
  }
  for (int i = 0; i < g.node_size(); ++i) {
    llvm::ArrayRef<NameId> outs = outputsOf(i);
    if (outs.size() != 1 || outs[0] == kNoName ||
        constantNodes[outs[0]] != &g.node(i))
      continue;
    for (const auto &a : g.node(i).attribute())
      if (a.name() == "value") {
        onnx::TensorProto copy = a.t();
        auto d = onnxbridge::tensorFromProto(
            copy, baseDir, describeProto(g.node(i)) + ": value");
        if (!d)
          return d.takeError();
        constantCache[outs[0]] = *d;
      }
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
  // Edges producer -> reader, grouped by producer (CSR): readerStart[p] ..
  // readerStart[p + 1] index `readers`.
  std::vector<std::pair<int, int>> edges; // (producer, reader)
  edges.reserve(nodeNameIds.size());
  std::vector<int> pending(n, 0);
  captureIds.assign(n, {});
  bool sorted = true; // the file's order is already topological
  auto readName = [&](int i, NameId id, llvm::StringRef name,
                      bool fromSubgraph) -> llvm::Error {
    int p = id == kNoName ? -1 : producers[id];
    if (p >= 0) {
      ++pending[i];
      edges.push_back({p, i});
      sorted &= p < i;
      return llvm::Error::success();
    }
    if (id != kNoName && (initializers[id] || isGraphInput.test(id)))
      return llvm::Error::success();
    if (fromSubgraph)
      return makeError(describeProto(g.node(i)) + ": its subgraph reads '" +
                       name + "', which the graph does not define");
    return makeError(describeProto(g.node(i)) + ": input '" + name +
                     "' is not produced by any node, initializer or graph "
                     "input");
  };
  for (int i = 0; i < n; ++i) {
    const onnx::NodeProto &node = g.node(i);
    std::vector<std::string> outerReads;
    std::unordered_set<std::string> seen;
    for (const auto &a : node.attribute()) {
      if (a.has_g())
        collectOuterReads(a.g(), {}, outerReads, seen);
      for (const auto &sub : a.graphs())
        collectOuterReads(sub, {}, outerReads, seen);
    }
    for (const std::string &name : outerReads) {
      auto it = nameIds.find(llvm::CachedHashStringRef(name));
      NameId id = it == nameIds.end() ? kNoName : it->second;
      if (auto err = readName(i, id, name, /*fromSubgraph=*/true))
        return err;
      captureIds[i].push_back(id);
    }
    llvm::ArrayRef<NameId> ins = inputsOf(i);
    for (int k = 0; k < static_cast<int>(ins.size()); ++k)
      if (ins[k] != kNoName)
        if (auto err = readName(i, ins[k], node.input(k), false))
          return err;
  }
  if (sorted) {
    order.resize(n);
    for (int i = 0; i < n; ++i)
      order[i] = i;
    return llvm::Error::success();
  }
  std::vector<int> readerStart(n + 1, 0);
  for (auto [p, r] : edges)
    ++readerStart[p + 1];
  for (int i = 0; i < n; ++i)
    readerStart[i + 1] += readerStart[i];
  std::vector<int> readers(edges.size());
  std::vector<int> fill(readerStart.begin(), readerStart.end() - 1);
  for (auto [p, r] : edges)
    readers[fill[p]++] = r;
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
    for (int k = readerStart[i]; k < readerStart[i + 1]; ++k)
      if (--pending[readers[k]] == 0)
        ready.push(readers[k]);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (pending[i] > 0)
        return makeError(describeProto(g.node(i)) +
                         ": the graph has a cycle through this node");
  }
  return llvm::Error::success();
}

Value *Importer::valueOf(NameId id) {
  if (id == kNoName)
    return nullptr;
  if (values[id])
    return values[id];
  if (constantNodes[id] && readOnlyByFolds.test(id)) {
    // A Constant node whose first readers all folded: emitted again for
    // this one (it was emitted once already, so this cannot fail).
    auto node = emitNode(producers[id]);
    if (!node) {
      llvm::consumeError(node.takeError());
      return nullptr;
    }
    return values[id];
  }
  if (!initializers[id] && !foldedValues.test(id))
    return values[id];
  // An initializer, read for the first time: an unnamed constant node.
  // finishInitializers moves these to the front, in file order.
  DenseElementsRef data = constantCache[id];
  std::vector<Dim> dims;
  for (int64_t x : data->getDims())
    dims.push_back(Dim::fixed(x));
  const TensorType *t = withQuant(
      id, ctx.getTensorType(dims, ctx.getElementType(data->getKind())));
  Node *c =
      model->getGraph().createNode(ops::Constant, {}, {{t, names[id].str()}},
                                   {{"value", Attribute(std::move(data))}});
  values[id] = c->getResult();
  return values[id];
}

const TensorType *Importer::withQuant(NameId id, const TensorType *t) {
  const QuantType *q = valueQuant[id];
  if (!q || t->isQuantized())
    return t;
  ElementKind k = t->getStorageKind();
  if (k != ElementKind::Unknown && k != q->getStorageKind())
    return t;
  return t->withElementType(q);
}

llvm::Error Importer::emitNodes() {
  Graph &graph = model->getGraph();
  const onnx::GraphProto &g = proto.graph();

  // Graph inputs. Initializers are emitted when first read.
  for (int k = 0; k < g.input_size(); ++k) {
    NameId id = inputIds[k];
    if (initializers[id])
      continue;
    auto t = declaredType(id);
    if (!t)
      return t.takeError();
    const onnx::TypeProto &declared = g.input(k).type();
    if (declared.has_tensor_type() &&
        declared.tensor_type().elem_type() == onnx::TensorProto::UNDEFINED)
      return makeError("graph input '" + g.input(k).name() +
                       "' has element type UNDEFINED");
    values[id] = graph.addInput(withQuant(id, *t), g.input(k).name());
  }

  for (int i : order) {
    if (emitted.test(i))
      continue;
    auto node = emitNode(i);
    if (!node)
      return node.takeError();
  }
  return llvm::Error::success();
}

llvm::Expected<Node *> Importer::emitNode(int i) {
  Graph &graph = model->getGraph();
  const onnx::GraphProto &g = proto.graph();
  {
    const onnx::NodeProto &n = g.node(i);
    llvm::ArrayRef<NameId> ins = inputsOf(i), outs = outputsOf(i);
    LazyNodeDescription where{n};
    bool isQ = isDefaultDomain(n.domain()) && n.op_type() == "QuantizeLinear";
    bool isDQ =
        isDefaultDomain(n.domain()) && n.op_type() == "DequantizeLinear";
    bool toQ = (isQ || isDQ) && qdq[i].convertible;
    // A DQ whose input ended up on other parameters (a data-movement op
    // carried a Q's type to it) keeps its explicit parameters.
    if (toQ && isDQ) {
      const QuantType *actual = valueOf(ins[0])->getType()->getQuantType();
      toQ = actual == qdq[i].quant;
    }
    // Its two-level scale's DequantizeLinear was left out for the type:
    // an ONNX node reads it after all.
    if (!toQ && qdq[i].scaleNode >= 0 && ins.size() > 1 && !values[ins[1]]) {
      auto scaleNode = emitNode(qdq[i].scaleNode);
      if (!scaleNode)
        return scaleNode.takeError();
    }

    std::string op;
    if (toQ)
      op = isQ ? ops::QQuantize.str() : ops::QDequantize.str();
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
    size_t numInputs = toQ ? 1 : ins.size();
    operands.reserve(numInputs);
    for (size_t k = 0; k < numInputs; ++k)
      operands.push_back(valueOf(ins[k]));

    std::vector<NamedAttribute> attrs;
    attrs.reserve(n.attribute_size() + (toQ ? 2 : 0));
    llvm::StringSet<> attrNames;
    unsigned constantValues = 0;
    for (const auto &a : n.attribute()) {
      if (!attrNames.insert(a.name()).second)
        return makeError(describeProto(n) + ": attribute '" + a.name() +
                         "' is given twice");
      if (llvm::StringRef(a.name()).startswith("value") ||
          a.name() == "sparse_value")
        ++constantValues;
      if (toQ && ((a.name() == "axis" && qdq[i].quant->isPerAxis()) ||
                  (a.name() == "block_size" && qdq[i].quant->isBlocked())))
        continue; // the type carries it
      auto attr = onnxbridge::attributeFromProto(
          a, baseDir, [&] { return describeProto(n); });
      if (!attr)
        return attr.takeError();
      attrs.push_back({a.name(), std::move(*attr)});
    }
    if (isDefaultDomain(n.domain()) && op == ops::Constant &&
        constantValues != 1)
      return makeError(describeProto(n) +
                       ": a Constant holds one value "
                       "attribute (value, value_float, ...), this one has " +
                       llvm::Twine(constantValues));
    if (toQ)
      recordParamNames(i, qdq[i].quant, attrs);
    if (isDefaultDomain(n.domain())) {
      if (auto err = canonicalizeSpelling(n, op, operands, attrs))
        return err;
      if (auto err = canonicalizeResize(n, op, operands, attrs))
        return err;
    }

    std::vector<ResultSpec> results;
    results.reserve(outs.size());
    for (size_t k = 0; k < outs.size(); ++k) {
      if (outs[k] == kNoName) {
        results.push_back({ctx.getUnknownTensorType(), "", true});
        continue;
      }
      auto t = declaredType(outs[k]);
      if (!t)
        return t.takeError();
      const TensorType *type = *t;
      if (toQ) {
        const Type *elem =
            isQ ? static_cast<const Type *>(qdq[i].quant)
                : ctx.getElementType(qdq[i].quant->getExpressedKind());
        type = type->withElementType(elem);
      }
      results.push_back({type, n.output(k)});
    }
    std::vector<Value *> captures;
    for (NameId id : captureIds[i])
      captures.push_back(valueOf(id));
    Node *node =
        graph.createNode(op, operands, results, std::move(attrs), n.name());
    for (Value *v : captures)
      node->addCapture(v);
    // Constant nodes share the tensor already decoded for parameter lookup.
    if (outs.size() == 1 && outs[0] != kNoName && constantNodes[outs[0]] &&
        op == ops::Constant)
      node->setAttr("value", Attribute(constantCache[outs[0]]));
    // Shapes and element types from the op table; a shape that does not
    // fit the op is an import error naming the node.
    if (auto err = inferNodeTypes(*node))
      return err;
    bool asInferred = true;
    for (size_t k = 0; k < outs.size(); ++k)
      if (outs[k] != kNoName) {
        Value *r = node->getResult(k);
        const TensorType *inferred = r->getType();
        r->setType(withQuant(outs[k], inferred));
        asInferred &= r->getType() == inferred;
        values[outs[k]] = r;
      }
    if (asInferred)
      typesAsInferred.insert(node);
    emitted.set(i);
    return node;
  }
}

llvm::Error Importer::emitOutputs() {
  Graph &graph = model->getGraph();
  const onnx::GraphProto &g = proto.graph();
  for (int k = 0; k < g.output_size(); ++k) {
    const onnx::ValueInfoProto &out = g.output(k);
    NameId id = outputIds[k];
    Value *v = valueOf(id);
    if (!v)
      return makeError("graph output '" + out.name() +
                       "' is not produced by any node, initializer or input");
    if (out.has_type()) {
      auto t = declaredType(id);
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

/// Initializers nothing read are emitted too, except parameters whose every
/// reader became a q.* node: the quantized types hold their numbers, and
/// export writes them back. Then all of them move to the front, in file
/// order.
void Importer::finishInitializers() {
  Graph &graph = model->getGraph();
  for (NameId id : llvm::reverse(initializerIds)) {
    if (!values[id] && (absorbedParams.test(id) || readOnlyByFolds.test(id)) &&
        !isInitializerInput.test(id))
      continue;
    Node *c = valueOf(id)->getDefiningNode();
    Node *front = &graph.getNodes().front();
    if (c != front)
      graph.moveBefore(c, front);
  }
}

llvm::Expected<std::unique_ptr<Model>> Importer::run() {
  model = std::make_unique<Model>(ctx);
  if (auto err = importHeader())
    return std::move(err);
  internNames();
  if (auto err = collectDeclaredTypes())
    return std::move(err);
  if (auto err = collectConstants())
    return std::move(err);
  if (auto err = decodeConstants())
    return std::move(err);
  if (auto err = sortNodes())
    return std::move(err);
  emitted.resize(proto.graph().node_size());
  qdq.resize(proto.graph().node_size());
  if (auto err = foldConstantNodes())
    return std::move(err);
  if (auto err = assignQuantTypes())
    return std::move(err);
  if (auto err = emitNodes())
    return std::move(err);
  if (auto err = emitOutputs())
    return std::move(err);
  finishInitializers();
  adoptDataGrids();
  // Shape arithmetic on static shapes (Shape -> Gather -> Concat ->
  // Reshape) folds once every shape is known; the ops it feeds are
  // inferred again.
  auto folded = foldConstants(model->getGraph());
  if (!folded)
    return folded.takeError();
  if (*folded)
    typesAsInferred.clear();
  // torch.ao's Q -> Cast(to=UINT8) -> DQ is Q -> DQ (the Casts that go
  // leave the verifier's set first).
  for (Node &n : model->getGraph().getNodes())
    if (isNoOpCast(n))
      typesAsInferred.erase(&n);
  removeNoOpCasts(model->getGraph());
  VerifyOptions verifyOptions;
  verifyOptions.typesAsInferred = &typesAsInferred;
  if (auto err = verifyModel(*model, verifyOptions))
    return std::move(err);
  return std::move(model);
}

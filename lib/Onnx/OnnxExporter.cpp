//===- OnnxExporter.cpp - qIR -> ONNX ModelProto (QDQ form) ---------------===//

#include "qopt/Onnx/OnnxExporter.h"
#include "OnnxExportParams.h"
#include "OnnxTypes.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/OpsetSpellings.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Support/Error.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <set>

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <limits>
#include <map>

using namespace qopt;
using namespace qopt::onnxbridge;

namespace {

/// Lets protobuf stream straight into an llvm::raw_ostream, so a large model
/// is never held twice in memory as bytes.
class RawOstreamOutput : public google::protobuf::io::CopyingOutputStream {
public:
  explicit RawOstreamOutput(llvm::raw_ostream &os) : os(os) {}
  bool Write(const void *buffer, int size) override {
    os.write(static_cast<const char *>(buffer), size);
    return true;
  }

private:
  llvm::raw_ostream &os;
};

class Exporter {
public:
  Exporter(const Model &model, onnx::ModelProto &proto)
      : model(model), proto(proto) {}

  llvm::Error run() {
    const Graph &g = model.getGraph();
    // Only what ONNX can say at the model's opset is written. (The graph
    // itself must be valid: callers verify it, as qopt does before every
    // write.)
    opset =
        model.getDefaultOpsetVersion() ? model.getDefaultOpsetVersion() : 13;
    for (const Node &n : g.getNodes()) {
      if (n.getDialect() == "q" && !n.isa(ops::QQuantize) &&
          !n.isa(ops::QDequantize) && !n.isa(ops::QRequantize))
        return makeError(n.describe() +
                         ": qopt's fused ops have no ONNX form; lower them "
                         "with lower-qoperator, or write .qir");
      std::string why = whyNotExpressibleAtOpset(n, opset);
      if (!why.empty())
        return makeError(n.describe() + ": " + why);
    }
    if (auto err = checkQuantParamsRecorded(g))
      return err;
    countFoldedOperands(g);
    proto.set_ir_version(model.irVersion);
    for (const OpsetImport &o : model.opsetImports) {
      auto *op = proto.add_opset_import();
      op->set_domain(o.domain);
      op->set_version(o.version);
    }
    if (model.getDefaultOpsetVersion() == 0) {
      auto *op = proto.add_opset_import();
      op->set_domain("");
      op->set_version(13);
    }
    // Domains a pass brought in (lower-qoperator's com.microsoft ops) are
    // imported at version 1.
    std::set<std::string> imported;
    for (const OpsetImport &o : model.opsetImports)
      imported.insert(o.domain);
    for (const Node &n : g.getNodes()) {
      std::string domain = n.getDialect().str();
      if (domain == "onnx" || domain == "q" || !imported.insert(domain).second)
        continue;
      auto *op = proto.add_opset_import();
      op->set_domain(domain);
      op->set_version(1);
    }
    proto.set_producer_name(model.producerName);
    proto.set_producer_version(model.producerVersion);
    proto.set_domain(model.domain);
    proto.set_model_version(model.modelVersion);
    proto.set_doc_string(model.docString);
    for (const auto &[k, v] : model.metadataProps) {
      auto *p = proto.add_metadata_props();
      p->set_key(k);
      p->set_value(v);
    }
    for (const std::string &f : model.functions)
      if (!proto.add_functions()->ParseFromString(f))
        return makeError("a stored model function does not parse");

    graph = proto.mutable_graph();
    graph->set_name(g.getName().str());
    graph->set_doc_string(g.getDocString().str());
    for (const Value *in : g.getInputs())
      addValueInfo(graph->add_input(), in->getName(), in->getType());
    for (const Node &n : g.getNodes())
      for (const Value *r : n.getResults())
        if (!r->getName().empty())
          usedNames.insert(r->getName());
    for (const Value *in : g.getInputs())
      usedNames.insert(in->getName());

    for (const Node &n : g.getNodes())
      if (auto err = exportNode(n))
        return err;
    if (!attributeError.empty())
      return makeError(attributeError);
    makeNodeNamesUnique();

    // Initializer inputs go back where the source model had them.
    const std::vector<int64_t> &positions = g.getInitializerInputPositions();
    for (size_t i = 0; i < g.getInitializerInputs().size(); ++i) {
      const std::string &name = g.getInitializerInputs()[i];
      const Value *v = g.lookupValue(name);
      if (!v)
        continue;
      onnx::ValueInfoProto vi;
      addValueInfo(&vi, name, v->getType());
      auto *inputs = graph->mutable_input();
      int at = i < positions.size()
                   ? std::min<int>(positions[i], inputs->size())
                   : inputs->size();
      *inputs->Add() = std::move(vi);
      for (int k = inputs->size() - 1; k > at; --k)
        inputs->SwapElements(k, k - 1);
    }
    llvm::DenseSet<const Value *> outputs;
    for (const Value *out : g.getOutputs()) {
      addValueInfo(graph->add_output(), out->getName(), out->getType());
      outputs.insert(out);
    }
    // value_info for the intermediate values whose type is known.
    for (const Node &n : g.getNodes()) {
      if (isInitializer(n))
        continue;
      for (const Value *r : n.getResults())
        if (!r->isAbsent() && !outputs.count(r) && !r->getType()->isUnknown())
          addValueInfo(graph->add_value_info(), r->getName(), r->getType());
    }
    return llvm::Error::success();
  }

private:
  /// ONNX Runtime refuses a graph with two nodes of one name; passes that
  /// copy or split nodes may produce such names. Later ones get "_1", "_2".
  void makeNodeNamesUnique() {
    llvm::StringSet<> names;
    for (const auto &node : graph->node())
      if (!node.name().empty())
        names.insert(node.name());
    llvm::StringSet<> seen;
    for (auto &node : *graph->mutable_node()) {
      if (node.name().empty() || seen.insert(node.name()).second)
        continue;
      std::string base = node.name(), name;
      for (unsigned k = 1;; ++k) {
        name = base + "_" + std::to_string(k);
        if (!names.count(name))
          break;
      }
      names.insert(name);
      seen.insert(name);
      node.set_name(name);
    }
  }

  /// Constants read only as operands that this opset writes as attributes
  /// are not written as initializers.
  void countFoldedOperands(const Graph &g) {
    for (const Node &n : g.getNodes())
      for (const AttrOperandSpelling &sp : getAttrOperandSpellings(n.getOp()))
        if (opset < sp.operandSince && sp.operandIndex < n.getNumOperands())
          if (const Value *v = n.getOperand(sp.operandIndex))
            if (getConstantData(v))
              ++foldedUses[v];
  }
  bool foldedAway(const Value *v) const {
    auto it = foldedUses.find(v);
    return it != foldedUses.end() && it->second == v->getUses().size();
  }
  llvm::DenseMap<const Value *, size_t> foldedUses;
  int64_t opset = 13;

  static bool isInitializer(const Node &n) {
    return n.isa(ops::Constant) && n.getName().empty() &&
           n.getNumResults() == 1 && n.getAttrs().size() == 1 &&
           n.getAttr("value") && n.getAttr("value")->isTensor();
  }

  static void addValueInfo(onnx::ValueInfoProto *vi, llvm::StringRef name,
                           const TensorType *type) {
    vi->set_name(name.str());
    if (!type->isUnknown())
      tensorTypeToProto(type, *vi->mutable_type());
  }

  std::string uniqueName(const std::string &base) {
    std::string name = base;
    for (unsigned k = 1; usedNames.count(name); ++k)
      name = base + "_" + std::to_string(k);
    usedNames.insert(name);
    return name;
  }

  std::string nameOf(const Value *v) {
    return v ? v->getName().str() : std::string();
  }

  /// The scale or zero-point initializer `q` needs, under `preferred` when
  /// that name is free or already holds exactly these numbers; otherwise
  /// under a new name derived from `stem`. Returns the name.
  /// A block-wise type's parameters take the shape `blockedDims`.
  std::string paramInitializer(const QuantType *q, bool zeroPoint,
                               llvm::StringRef preferred, int rank,
                               const std::string &stem,
                               llvm::ArrayRef<int64_t> blockedDims = {}) {
    ElementKind kind = zeroPoint ? q->getStorageKind() : q->getExpressedKind();
    onnx::TensorProto t = quantParamTensor(q, zeroPoint, rank, blockedDims);
    return placeParam(std::move(t), kind, preferred,
                      stem + (zeroPoint ? "_zero_point" : "_scale"));
  }

  /// Adds parameter tensor `t` (of `kind`) as an initializer named
  /// `preferred` where it can (or shares the one of that name holding the
  /// same bytes), else under a fresh name from `fallback`, shared by every
  /// parameter with the same bytes. Returns the name.
  std::string placeParam(onnx::TensorProto t, ElementKind kind,
                         llvm::StringRef preferred,
                         const std::string &fallback) {
    std::string key = t.SerializeAsString();
    if (!preferred.empty()) {
      auto it = paramsByName.find(preferred);
      if (it != paramsByName.end() && it->second == key)
        return preferred.str(); // shared with an earlier Q/DQ
      if (it == paramsByName.end() && usedNames.count(preferred) &&
          liveConstantMatches(preferred, kind, t)) {
        paramsByName[preferred] = key; // the graph keeps this initializer
        return preferred.str();
      }
      if (it == paramsByName.end() && !usedNames.count(preferred)) {
        usedNames.insert(preferred);
        paramsByName[preferred] = key;
        t.set_name(preferred.str());
        *graph->add_initializer() = std::move(t);
        return preferred.str();
      }
    }
    // New parameters are shared by every Q/DQ that has the same numbers.
    auto shared = freshParamsByContent.find(key);
    if (shared != freshParamsByContent.end())
      return shared->second;
    std::string name = uniqueName(fallback);
    paramsByName[name] = key;
    freshParamsByContent[key] = name;
    t.set_name(name);
    *graph->add_initializer() = std::move(t);
    return name;
  }
  /// Whether the graph's constant `name` holds exactly the tensor `t`.
  bool liveConstantMatches(llvm::StringRef name, ElementKind kind,
                           const onnx::TensorProto &t) {
    const DenseElements *d =
        getConstantData(model.getGraph().lookupValue(name));
    if (!d || d->getKind() != kind ||
        d->getDims().size() != static_cast<size_t>(t.dims_size()) ||
        onnxbridge::onnxRawBytes(*d) != t.raw_data())
      return false;
    for (int i = 0; i < t.dims_size(); ++i)
      if (d->getDims()[i] != t.dims(i))
        return false;
    return true;
  }
  /// Initializer bytes (serialized TensorProto without name) by name.
  llvm::StringMap<std::string> paramsByName;
  /// Names given to parameters that had no recorded name, by bytes.
  std::map<std::string, std::string> freshParamsByContent;

  void setAxis(onnx::NodeProto *node, const QuantType *q) {
    auto setInt = [&](const char *name, int64_t v) {
      for (auto &a : *node->mutable_attribute())
        if (a.name() == name) {
          a.set_i(v);
          return;
        }
      auto *a = node->add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(v);
    };
    if (!q->isPerAxis())
      return;
    setInt("axis", q->getAxis());
    if (q->isBlocked())
      setInt("block_size", q->getBlockSize());
  }

  void copyAttributes(const Node &n, onnx::NodeProto *node) {
    for (const NamedAttribute &a : n.getAttrs())
      if (!attributeToProto(a.name, a.value, *node->add_attribute()) &&
          attributeError.empty())
        attributeError = n.describe() + ": attribute '" + a.name +
                         "' holds bytes that are not a valid ONNX attribute";
  }
  std::string attributeError;

  /// Two-level scales: writes the codes and the scale of the scales as
  /// initializers and the DequantizeLinear that computes the scale tensor
  /// (named as the node's scale_params record says: that node, the codes,
  /// the scale, and a zero point of +0 codes when the source had one).
  /// Returns the scale tensor's name.
  std::string twoLevelScale(const Node &n, const QuantType *q,
                            llvm::StringRef scaleName, const std::string &stem,
                            llvm::ArrayRef<int64_t> blockedDims) {
    std::vector<std::string> record;
    if (const Attribute *a = n.getAttr("scale_params"))
      if (auto *v = a->getIf<std::vector<std::string>>())
        record = *v;
    auto recorded = [&](size_t i) -> llvm::StringRef {
      return i < record.size() ? llvm::StringRef(record[i]) : "";
    };
    std::vector<int64_t> ranks = getIntsAttrOr(n, "scale_param_ranks");
    ElementKind codeKind = q->getScaleStorageKind();
    std::string scaleBase =
        scaleName.empty() ? stem + "_scale" : scaleName.str();
    std::string codes = placeParam(scaleCodesTensor(q, blockedDims), codeKind,
                                   recorded(1), scaleBase + "_codes");
    std::string global =
        placeParam(scaleOfScalesTensor(q, ranks.empty() ? 0 : int(ranks[0])),
                   q->getExpressedKind(), recorded(2), scaleBase + "_scale");
    auto *dq = graph->add_node();
    dq->set_name(recorded(0).empty()
                     ? uniqueName(scaleBase + "_DequantizeLinear")
                     : recorded(0).str());
    dq->set_op_type("DequantizeLinear");
    dq->add_input(codes);
    dq->add_input(global);
    if (!recorded(3).empty())
      dq->add_input(placeParam(
          scaleZeroPointTensor(q, ranks.size() > 1 ? int(ranks[1]) : 0),
          codeKind, recorded(3), scaleBase + "_zero_point"));
    std::string out = uniqueName(scaleBase); // the recorded name when free
    dq->add_output(out);
    return out;
  }

  /// Writes the scale and zero-point inputs of a Q/DQ with parameters `q`,
  /// as the node's param_names/param_ranks record says the source had them.
  void addParamInputs(const Node &n, const QuantType *q, onnx::NodeProto *node,
                      const std::string &stem) {
    // Block-wise: the parameters' shape follows the quantized tensor's.
    std::vector<int64_t> blockedDims;
    if (q->isBlocked()) {
      const Value *stored =
          n.isa(ops::QQuantize) ? n.getResult() : n.getOperand(0);
      if (auto dims = stored->getType()->getStaticDims())
        blockedDims = quant::blockedScaleDims(*dims, q);
    }
    std::vector<std::string> names;
    if (const Attribute *a = n.getAttr("param_names"))
      if (auto *v = a->getIf<std::vector<std::string>>())
        names = *v;
    std::vector<int64_t> ranks = getIntsAttrOr(n, "param_ranks");
    auto rankOf = [&](size_t i) -> int {
      return i < ranks.size() ? ranks[i] : q->isPerAxis() ? 1 : 0;
    };
    node->add_input(q->hasQuantizedScales()
                        ? twoLevelScale(n, q, names.empty() ? "" : names[0],
                                        stem, blockedDims)
                        : paramInitializer(q, false,
                                           names.empty() ? "" : names[0],
                                           rankOf(0), stem, blockedDims));
    // The zero point may be left out when it is 0 and the storage follows
    // without it: a DQ's input type, a Q's u8 default or output_dtype.
    bool zeroZp =
        std::all_of(q->getZeroPoints().begin(), q->getZeroPoints().end(),
                    [](int64_t z) { return z == 0; });
    int64_t dtype = getIntAttrOr(n, "output_dtype", 0);
    bool defaultStorage =
        n.isa(ops::QDequantize) || q->getStorageKind() == ElementKind::U8 ||
        (dtype != 0 && dtype == onnxDataTypeOf(q->getStorageKind()));
    if (names.size() == 1 && zeroZp && defaultStorage)
      return;
    node->add_input(paramInitializer(q, true, names.size() > 1 ? names[1] : "",
                                     rankOf(1), stem, blockedDims));
  }

  /// QuantizeLinear/DequantizeLinear for q.quantize/q.dequantize.
  void exportQdq(const Node &n, bool isQ) {
    // Built apart and added last: a two-level scale's DequantizeLinear
    // goes before it.
    onnx::NodeProto built;
    onnx::NodeProto *node = &built;
    node->set_name(n.getName().str());
    node->set_op_type(isQ ? "QuantizeLinear" : "DequantizeLinear");
    const QuantType *q = isQ ? n.getResult()->getType()->getQuantType()
                             : n.getOperand(0)->getType()->getQuantType();
    node->add_input(nameOf(n.getOperand(0)));
    addParamInputs(n, q, node, n.getResult()->getName().str());
    node->add_output(n.getResult()->getName().str());
    for (const NamedAttribute &a : n.getAttrs())
      if (!isQdqParamRecordAttr(a.name) &&
          !attributeToProto(a.name, a.value, *node->add_attribute()) &&
          attributeError.empty())
        attributeError = n.describe() + ": attribute '" + a.name +
                         "' holds bytes that are not a valid ONNX attribute";
    setAxis(node, q);
    *graph->add_node() = std::move(built);
  }

  /// q.requantize -> DequantizeLinear + QuantizeLinear.
  void exportRequantize(const Node &n) {
    const Value *in = n.getOperand(0);
    const Value *out = n.getResult();
    const QuantType *qin = in->getType()->getQuantType();
    const QuantType *qout = out->getType()->getQuantType();
    std::string stem = out->getName().str();
    std::string mid = uniqueName(stem + "_dq");
    auto *dq = graph->add_node();
    dq->set_name(n.getName().empty() ? std::string()
                                     : n.getName().str() + "_dq");
    dq->set_op_type("DequantizeLinear");
    dq->add_input(in->getName().str());
    dq->add_input(paramInitializer(qin, false, "", 0, stem + "_in"));
    dq->add_input(paramInitializer(qin, true, "", 0, stem + "_in"));
    dq->add_output(mid);
    setAxis(dq, qin);
    auto *qn = graph->add_node();
    qn->set_name(n.getName().str());
    qn->set_op_type("QuantizeLinear");
    qn->add_input(mid);
    qn->add_input(paramInitializer(qout, false, "", 0, stem));
    qn->add_input(paramInitializer(qout, true, "", 0, stem));
    qn->add_output(stem);
    setAxis(qn, qout);
  }

  llvm::Error exportNode(const Node &n) {
    if (isInitializer(n) && foldedAway(n.getResult()))
      return llvm::Error::success();
    if (isInitializer(n)) {
      const DenseElements &d = **n.getAttr("value")->getIf<DenseElementsRef>();
      onnx::TensorProto *t = graph->add_initializer();
      if (d.getKind() == ElementKind::String ||
          onnxbridge::isPackedInOnnx(d.getKind())) {
        tensorToProto(d, n.getResult()->getName(), *t); // 4-bit: packed
      } else {
        // The bytes are streamed at write time instead of copied here.
        t->set_name(n.getResult()->getName().str());
        for (int64_t x : d.getDims())
          t->add_dims(x);
        t->set_data_type(onnxDataTypeOf(d.getKind()));
        deferredRawData[t] = &d;
      }
      return llvm::Error::success();
    }
    if (n.isa(ops::QQuantize) || n.isa(ops::QDequantize)) {
      exportQdq(n, n.isa(ops::QQuantize));
      return llvm::Error::success();
    }
    if (n.isa(ops::QRequantize)) {
      exportRequantize(n);
      return llvm::Error::success();
    }
    if (n.getDialect() == "q")
      return makeError(n.describe() + ": no ONNX form"); // checked in run()
    auto *node = graph->add_node();
    node->set_name(n.getName().str());
    if (n.getDialect() == "onnx") {
      node->set_op_type(n.getOpType().str());
    } else {
      node->set_domain(n.getDialect().str());
      node->set_op_type(n.getOpType().str());
    }
    std::vector<const Value *> inputs(n.getOperands().begin(),
                                      n.getOperands().end());
    std::vector<NamedAttribute> legacyAttrs;
    if (n.getDialect() == "onnx")
      if (auto err = legalizeSpelling(n, inputs, legacyAttrs))
        return err;
    if (n.isa(ops::Resize) && opset < 11)
      if (auto err = legalizeResize(n, node, inputs, legacyAttrs))
        return err;
    while (!inputs.empty() && !inputs.back())
      inputs.pop_back();
    for (const Value *v : inputs)
      node->add_input(nameOf(v));
    for (const Value *r : n.getResults())
      node->add_output(r->isAbsent() ? std::string() : r->getName().str());
    for (const NamedAttribute &a : n.getAttrs())
      if (!droppedAttrs.count(a.name) &&
          !attributeToProto(a.name, a.value, *node->add_attribute()) &&
          attributeError.empty())
        attributeError = n.describe() + ": attribute '" + a.name +
                         "' holds bytes that are not a valid ONNX attribute";
    droppedAttrs.clear();
    for (const NamedAttribute &a : legacyAttrs)
      if (!attributeToProto(a.name, a.value, *node->add_attribute()))
        return makeError(n.describe() + ": cannot write attribute '" + a.name +
                         "'");
    return llvm::Error::success();
  }

  /// Resize before opset 11 is (X, scales), and before 10 it is Upsample,
  /// whose coordinates are always asymmetric.
  llvm::Error legalizeResize(const Node &n, onnx::NodeProto *node,
                             std::vector<const Value *> &inputs,
                             std::vector<NamedAttribute> &attrs) {
    if ((inputs.size() > 1 && inputs[1]) || (inputs.size() > 3 && inputs[3]))
      return makeError(n.describe() + ": opset " + llvm::Twine(opset) +
                       " cannot write Resize with roi or sizes");
    const Value *scales = inputs.size() > 2 ? inputs[2] : nullptr;
    inputs = {inputs[0], scales};
    // Before 11, coordinates are asymmetric and nearest neighbours round by
    // the direction of the scales; the IR must say exactly that.
    std::string coord =
        getStringAttrOr(n, "coordinate_transformation_mode", "half_pixel");
    if (coord != "asymmetric")
      return makeError(n.describe() + ": opset " + llvm::Twine(opset) +
                       " cannot express coordinate_transformation_mode '" +
                       coord + "' (only asymmetric)");
    if (getStringAttrOr(n, "mode", "nearest") == "nearest") {
      const char *implied = resize10NearestMode(scales);
      std::string nearest =
          getStringAttrOr(n, "nearest_mode", "round_prefer_floor");
      if (!implied || nearest != implied)
        return makeError(n.describe() + ": opset " + llvm::Twine(opset) +
                         " rounds nearest neighbours by the direction of the "
                         "scales, which nearest_mode '" +
                         nearest + "' does not match here");
    }
    droppedAttrs.insert("coordinate_transformation_mode");
    droppedAttrs.insert("nearest_mode");
    if (opset >= 10)
      return llvm::Error::success();
    node->set_op_type("Upsample");
    if (opset < 9) {
      const DenseElements *d = getConstantData(scales);
      if (!d)
        return makeError(n.describe() + ": opset " + llvm::Twine(opset) +
                         " needs Upsample's scales as a constant");
      std::vector<float> v;
      for (int64_t i = 0; i < d->getNumElements(); ++i)
        v.push_back(static_cast<float>(d->getAsDouble(i)));
      attrs.push_back({"scales", Attribute(std::move(v))});
      inputs.resize(1);
    }
    return llvm::Error::success();
  }
  llvm::StringSet<> droppedAttrs;

  /// Operands that the model's opset writes as attributes become attributes
  /// again; they must be constants.
  llvm::Error legalizeSpelling(const Node &n,
                               std::vector<const Value *> &inputs,
                               std::vector<NamedAttribute> &attrs) {
    for (const AttrOperandSpelling &sp : getAttrOperandSpellings(n.getOp())) {
      if (opset >= sp.operandSince || sp.operandIndex >= inputs.size() ||
          !inputs[sp.operandIndex])
        continue;
      const DenseElements *d = getConstantData(inputs[sp.operandIndex]);
      if (!d)
        return makeError(n.describe() + ": opset " + llvm::Twine(opset) +
                         " needs '" + sp.attrName +
                         "' as an attribute, but it is computed, not a "
                         "constant");
      if (sp.attrKind == AttrKind::Ints) {
        std::vector<int64_t> v;
        for (int64_t i = 0; i < d->getNumElements(); ++i)
          v.push_back(d->getAsInt(i));
        attrs.push_back({sp.attrName.str(), Attribute(std::move(v))});
      } else {
        if (d->getNumElements() != 1)
          return makeError(n.describe() + ": '" + sp.attrName +
                           "' must be one value for opset " +
                           llvm::Twine(opset));
        attrs.push_back({sp.attrName.str(),
                         Attribute(static_cast<float>(d->getAsDouble(0)))});
      }
      inputs[sp.operandIndex] = nullptr;
    }
    return llvm::Error::success();
  }

  const Model &model;
  onnx::ModelProto &proto;
  onnx::GraphProto *graph = nullptr;
  llvm::StringSet<> usedNames;

public:
  /// Initializers whose raw_data is written from the IR's bytes directly.
  llvm::DenseMap<const onnx::TensorProto *, const DenseElements *>
      deferredRawData;
  /// Maps initializer positions to their deferred bytes (call before the
  /// initializers move).
  void indexDeferred() {
    const auto &inits = proto.graph().initializer();
    byPosition.assign(inits.size(), nullptr);
    for (int i = 0; i < inits.size(); ++i) {
      auto it = deferredRawData.find(&inits[i]);
      if (it != deferredRawData.end())
        byPosition[i] = it->second;
    }
  }
  const DenseElements *rawDataFor(size_t i) const { return byPosition[i]; }

private:
  std::vector<const DenseElements *> byPosition;
};

} // namespace

/// Writes `proto` with the graph (field 7) last and each initializer's
/// raw_data (TensorProto field 9) streamed from the IR, so that weights are
/// never copied into the protobuf message. Protobuf accepts fields in any
/// order, so the bytes parse to the same message as a plain serialization.
static bool writeStreaming(onnx::ModelProto &proto, const Exporter &exporter,
                           google::protobuf::io::CodedOutputStream &out,
                           const OnnxExportOptions &options,
                           llvm::raw_ostream *externalData) {
  using google::protobuf::io::CodedOutputStream;
  onnx::GraphProto graph;
  graph.Swap(proto.mutable_graph());
  proto.clear_graph();
  std::vector<onnx::TensorProto> inits;
  inits.reserve(graph.initializer_size());
  for (auto &t : *graph.mutable_initializer())
    inits.emplace_back().Swap(&t);
  graph.clear_initializer();

  // Large payloads go to the external data file, at increasing offsets; the
  // TensorProto keeps only where they are.
  std::vector<bool> external(inits.size(), false);
  if (externalData) {
    uint64_t offset = 0;
    for (size_t i = 0; i < inits.size(); ++i) {
      const DenseElements *d = exporter.rawDataFor(i);
      if (!d || d->getRawBytes().size() < options.externalDataMinBytes)
        continue;
      uint64_t length = d->getRawBytes().size();
      inits[i].set_data_location(onnx::TensorProto::EXTERNAL);
      auto add = [&](const char *key, const std::string &value) {
        auto *kv = inits[i].add_external_data();
        kv->set_key(key);
        kv->set_value(value);
      };
      add("location", options.externalDataLocation);
      add("offset", std::to_string(offset));
      add("length", std::to_string(length));
      external[i] = true;
      offset += length;
    }
  }

  std::vector<size_t> tensorSizes(inits.size());
  size_t graphSize = graph.ByteSizeLong();
  for (size_t i = 0; i < inits.size(); ++i) {
    size_t size = inits[i].ByteSizeLong();
    if (const DenseElements *d = exporter.rawDataFor(i); d && !external[i]) {
      size_t raw = d->getRawBytes().size();
      size += 1 + CodedOutputStream::VarintSize64(raw) + raw;
    }
    tensorSizes[i] = size;
    graphSize += 1 + CodedOutputStream::VarintSize64(size) + size;
  }
  if (graphSize > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return false; // over protobuf's 2 GiB: the caller chooses external data

  if (!proto.SerializeToCodedStream(&out))
    return false;
  out.WriteTag(onnx::ModelProto::kGraphFieldNumber << 3 | 2);
  out.WriteVarint64(graphSize);
  if (!graph.SerializeToCodedStream(&out))
    return false;
  for (size_t i = 0; i < inits.size(); ++i) {
    out.WriteTag(onnx::GraphProto::kInitializerFieldNumber << 3 | 2);
    out.WriteVarint64(tensorSizes[i]);
    if (!inits[i].SerializeToCodedStream(&out))
      return false;
    if (const DenseElements *d = exporter.rawDataFor(i)) {
      llvm::StringRef raw = d->getRawBytes();
      if (external[i]) {
        externalData->write(raw.data(), raw.size());
        continue;
      }
      out.WriteTag(onnx::TensorProto::kRawDataFieldNumber << 3 | 2);
      out.WriteVarint64(raw.size());
      out.WriteRaw(raw.data(), static_cast<int>(raw.size()));
    }
  }
  return !out.HadError();
}

llvm::Error qopt::exportOnnx(const Model &model, llvm::raw_ostream &os,
                             const OnnxExportOptions &options,
                             llvm::raw_ostream *externalData) {
  onnx::ModelProto proto;
  Exporter exporter(model, proto);
  if (auto err = exporter.run())
    return err;
  exporter.indexDeferred();
  RawOstreamOutput sink(os);
  google::protobuf::io::CopyingOutputStreamAdaptor adaptor(&sink);
  bool ok;
  {
    google::protobuf::io::CodedOutputStream coded(&adaptor);
    ok = writeStreaming(proto, exporter, coded, options, externalData);
  }
  adaptor.Flush();
  if (!ok)
    return makeError(
        externalData ? "failed to write the ONNX model"
                     : "failed to write the ONNX model (over protobuf's 2 GiB "
                       "limit: write the weights as external data)");
  return llvm::Error::success();
}

uint64_t qopt::getInitializerBytes(const Model &model) {
  uint64_t total = 0;
  for (const Node &n : model.getGraph().getNodes())
    if (const DenseElements *d =
            getConstantData(n.getNumResults() == 1 ? n.getResult() : nullptr))
      total += d->getRawBytes().size();
  return total;
}

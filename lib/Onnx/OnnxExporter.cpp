//===- OnnxExporter.cpp - qIR -> ONNX ModelProto (QDQ form) ---------------===//

#include "qopt/Onnx/OnnxExporter.h"
#include "OnnxTypes.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpInfo.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

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

    for (const std::string &name : g.getInitializerInputs())
      if (const Value *v = g.lookupValue(name))
        addValueInfo(graph->add_input(), name, v->getType());
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
  static llvm::Error makeError(const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
  }

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

  /// New scale and zero-point initializers for `q`; returns their names.
  std::pair<std::string, std::string> addQuantParams(const QuantType *q,
                                                     const std::string &stem) {
    std::string scaleName = uniqueName(stem + "_scale");
    std::string zpName = uniqueName(stem + "_zero_point");
    auto *s = graph->add_initializer();
    s->set_name(scaleName);
    s->set_data_type(onnxDataTypeOf(q->getExpressedKind()));
    auto *z = graph->add_initializer();
    z->set_name(zpName);
    z->set_data_type(onnxDataTypeOf(q->getStorageKind()));
    if (q->isPerAxis()) {
      s->add_dims(q->getNumChannels());
      z->add_dims(q->getNumChannels());
    }
    std::string sbytes, zbytes;
    unsigned zw = getElementByteSize(q->getStorageKind());
    for (size_t i = 0; i < q->getNumChannels(); ++i) {
      float f = q->getScales()[i];
      if (q->getExpressedKind() == ElementKind::F32) {
        sbytes.append(reinterpret_cast<const char *>(&f), 4);
      } else {
        uint16_t bits = q->getExpressedKind() == ElementKind::F16
                            ? floatToHalfBits(f)
                            : floatToBf16Bits(f);
        sbytes.append(reinterpret_cast<const char *>(&bits), 2);
      }
      int64_t zp = q->getZeroPoints()[i];
      zbytes.append(reinterpret_cast<const char *>(&zp), zw);
    }
    s->set_raw_data(sbytes);
    z->set_raw_data(zbytes);
    return {scaleName, zpName};
  }
  static uint16_t floatToHalfBits(float f);
  static uint16_t floatToBf16Bits(float f);

  void setAxis(onnx::NodeProto *node, const QuantType *q) {
    if (!q->isPerAxis())
      return;
    for (auto &a : *node->mutable_attribute())
      if (a.name() == "axis") {
        a.set_i(q->getAxis());
        return;
      }
    auto *a = node->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(q->getAxis());
  }

  void copyAttributes(const Node &n, onnx::NodeProto *node) {
    for (const NamedAttribute &a : n.getAttrs())
      if (!attributeToProto(a.name, a.value, *node->add_attribute()) &&
          attributeError.empty())
        attributeError = n.describe() + ": attribute '" + a.name +
                         "' holds bytes that are not a valid ONNX attribute";
  }
  std::string attributeError;

  /// QuantizeLinear/DequantizeLinear for q.quantize/q.dequantize.
  void exportQdq(const Node &n, bool isQ) {
    auto *node = graph->add_node();
    node->set_name(n.getName().str());
    node->set_op_type(isQ ? "QuantizeLinear" : "DequantizeLinear");
    const QuantType *q = isQ ? n.getResult()->getType()->getQuantType()
                             : n.getOperand(0)->getType()->getQuantType();
    node->add_input(nameOf(n.getOperand(0)));
    if (n.getNumOperands() >= 2) {
      for (unsigned i = 1; i < n.getNumOperands(); ++i)
        node->add_input(nameOf(n.getOperand(i)));
    } else {
      auto [s, z] = addQuantParams(q, n.getResult()->getName().str());
      node->add_input(s);
      node->add_input(z);
    }
    node->add_output(n.getResult()->getName().str());
    copyAttributes(n, node);
    setAxis(node, q);
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
    auto [s1, z1] = addQuantParams(qin, stem + "_in");
    dq->add_input(s1);
    dq->add_input(z1);
    dq->add_output(mid);
    setAxis(dq, qin);
    auto *qn = graph->add_node();
    qn->set_name(n.getName().str());
    qn->set_op_type("QuantizeLinear");
    qn->add_input(mid);
    auto [s2, z2] = addQuantParams(qout, stem);
    qn->add_input(s2);
    qn->add_input(z2);
    qn->add_output(stem);
    setAxis(qn, qout);
  }

  llvm::Error exportNode(const Node &n) {
    if (isInitializer(n)) {
      const DenseElements &d = **n.getAttr("value")->getIf<DenseElementsRef>();
      onnx::TensorProto *t = graph->add_initializer();
      if (d.getKind() == ElementKind::String) {
        tensorToProto(d, n.getResult()->getName(), *t);
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
    if (n.isa(ops::Quantize) || n.isa(ops::Dequantize)) {
      exportQdq(n, n.isa(ops::Quantize));
      return llvm::Error::success();
    }
    if (n.isa(ops::Requantize)) {
      exportRequantize(n);
      return llvm::Error::success();
    }
    if (n.getDialect() == "q")
      return makeError(n.describe() +
                       ": qopt op has no ONNX QDQ-form lowering yet");
    auto *node = graph->add_node();
    node->set_name(n.getName().str());
    if (n.getDialect() == "onnx") {
      node->set_op_type(n.getOpType().str());
    } else {
      node->set_domain(n.getDialect().str());
      node->set_op_type(n.getOpType().str());
    }
    for (const Value *v : n.getOperands())
      node->add_input(nameOf(v));
    for (const Value *r : n.getResults())
      node->add_output(r->isAbsent() ? std::string() : r->getName().str());
    copyAttributes(n, node);
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

#include "qopt/Support/FloatFormat.h"
uint16_t Exporter::floatToHalfBits(float f) { return floatToHalf(f); }
uint16_t Exporter::floatToBf16Bits(float f) { return floatToBFloat16(f); }

/// Writes `proto` with the graph (field 7) last and each initializer's
/// raw_data (TensorProto field 9) streamed from the IR, so that weights are
/// never copied into the protobuf message. Protobuf accepts fields in any
/// order, so the bytes parse to the same message as a plain serialization.
static bool writeStreaming(onnx::ModelProto &proto, const Exporter &exporter,
                           google::protobuf::io::CodedOutputStream &out) {
  using google::protobuf::io::CodedOutputStream;
  onnx::GraphProto graph;
  graph.Swap(proto.mutable_graph());
  proto.clear_graph();
  std::vector<onnx::TensorProto> inits;
  inits.reserve(graph.initializer_size());
  for (auto &t : *graph.mutable_initializer())
    inits.emplace_back().Swap(&t);
  graph.clear_initializer();

  std::vector<size_t> tensorSizes(inits.size());
  size_t graphSize = graph.ByteSizeLong();
  for (size_t i = 0; i < inits.size(); ++i) {
    size_t size = inits[i].ByteSizeLong();
    if (const DenseElements *d = exporter.rawDataFor(i)) {
      size_t raw = d->getRawBytes().size();
      size += 1 + CodedOutputStream::VarintSize64(raw) + raw;
    }
    tensorSizes[i] = size;
    graphSize += 1 + CodedOutputStream::VarintSize64(size) + size;
  }
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
      out.WriteTag(onnx::TensorProto::kRawDataFieldNumber << 3 | 2);
      out.WriteVarint64(raw.size());
      out.WriteRaw(raw.data(), static_cast<int>(raw.size()));
    }
  }
  return !out.HadError();
}

llvm::Error qopt::exportOnnx(const Model &model, llvm::raw_ostream &os) {
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
    ok = writeStreaming(proto, exporter, coded);
  }
  adaptor.Flush();
  if (!ok)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "failed to write the ONNX model");
  return llvm::Error::success();
}

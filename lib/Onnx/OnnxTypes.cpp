//===- OnnxTypes.cpp - Conversions between ONNX protos and qIR ------------===//

#include "OnnxTypes.h"
#include "qopt/Support/Error.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

using namespace qopt;
using namespace qopt::onnxbridge;

llvm::Expected<ElementKind>
onnxbridge::elementKindFromOnnx(int64_t dataType, llvm::StringRef what) {
  if (dataType == 0)
    return ElementKind::Unknown;
  if (auto kind = elementKindFromOnnxDataType(dataType))
    return *kind;
  switch (dataType) {
  case 14:
  case 15:
    return makeError(what + ": complex tensors are not supported");
  case 24:
    return makeError(what + ": float8 type FLOAT8E8M0 is not supported");
  case 25:
  case 26:
    return makeError(what + ": 2-bit tensors are not supported");
  default:
    return makeError(what + ": unknown tensor element type " +
                     llvm::Twine(dataType));
  }
}

llvm::Expected<const TensorType *>
onnxbridge::tensorTypeFromProto(const onnx::TypeProto &type, Context &ctx,
                                llvm::StringRef what) {
  if (!type.has_tensor_type()) {
    if (type.value_case() == onnx::TypeProto::VALUE_NOT_SET)
      return ctx.getUnknownTensorType();
    return makeError(what + ": only tensor types are supported (sequence, "
                            "map, optional and sparse values are not)");
  }
  const auto &tt = type.tensor_type();
  auto kind = elementKindFromOnnx(tt.elem_type(), what);
  if (!kind)
    return kind.takeError();
  const Type *elem = ctx.getElementType(*kind);
  if (!tt.has_shape())
    return ctx.getUnrankedTensorType(elem);
  std::vector<Dim> dims;
  for (const auto &d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0)
      dims.push_back(Dim::fixed(d.dim_value()));
    else if (d.has_dim_param() && !d.dim_param().empty())
      dims.push_back(Dim::symbolic(d.dim_param()));
    else
      dims.push_back(Dim::dynamic()); // includes dim_value -1 (tract)
  }
  return ctx.getTensorType(dims, elem);
}

void onnxbridge::tensorTypeToProto(const TensorType *type,
                                   onnx::TypeProto &out) {
  auto *tt = out.mutable_tensor_type();
  tt->set_elem_type(onnxDataTypeOf(type->getStorageKind()));
  if (!type->hasRank())
    return;
  auto *shape = tt->mutable_shape();
  for (const Dim &d : type->getShape()) {
    auto *dim = shape->add_dim();
    if (d.isStatic())
      dim->set_dim_value(d.size);
    else if (d.isSymbolic())
      dim->set_dim_param(d.symbol);
  }
}

bool onnxbridge::isPackedInOnnx(ElementKind kind) {
  return kind == ElementKind::I4 || kind == ElementKind::U4 ||
         kind == ElementKind::F4E2M1;
}

uint64_t onnxbridge::onnxByteSize(ElementKind kind, uint64_t count) {
  return isPackedInOnnx(kind) ? (count + 1) / 2
                              : count * getElementByteSize(kind);
}

std::string onnxbridge::packNibbles(llvm::StringRef unpacked) {
  std::string packed((unpacked.size() + 1) / 2, '\0');
  for (size_t i = 0; i < unpacked.size(); ++i)
    packed[i / 2] |=
        static_cast<char>((uint8_t(unpacked[i]) & 0xF) << (4 * (i % 2)));
  return packed;
}

std::string onnxbridge::unpackNibbles(llvm::StringRef packed, uint64_t count,
                                      ElementKind kind) {
  std::string out(count, '\0');
  for (uint64_t i = 0; i < count && i / 2 < packed.size(); ++i) {
    uint8_t nibble = (uint8_t(packed[i / 2]) >> (4 * (i % 2))) & 0xF;
    // I4: the nibble's top bit is the sign.
    int v = kind == ElementKind::I4 && nibble >= 8 ? int(nibble) - 16 : nibble;
    out[i] = static_cast<char>(v);
  }
  return out;
}

std::string onnxbridge::onnxRawBytes(const DenseElements &d) {
  return isPackedInOnnx(d.getKind()) ? packNibbles(d.getRawBytes())
                                     : d.getRawBytes().str();
}

void onnxbridge::tensorToProto(const DenseElements &d, llvm::StringRef name,
                               onnx::TensorProto &out) {
  out.set_name(name.str());
  for (int64_t x : d.getDims())
    out.add_dims(x);
  out.set_data_type(onnxDataTypeOf(d.getKind()));
  if (d.getKind() == ElementKind::String) {
    for (const std::string &s : d.getStrings())
      out.add_string_data(s);
    return;
  }
  out.set_raw_data(onnxRawBytes(d));
}

/// Loads the external data of tensor `t` into the tensor itself, under the
/// model's policy (tensorFromProto: a model folder, a relative path inside
/// it, the bytes there), so that a subgraph the IR keeps serialized carries
/// its weights wherever the model is written, and cannot name files the
/// policy refuses.
static llvm::Error inlineExternalTensor(onnx::TensorProto &t,
                                        llvm::StringRef baseDir,
                                        const std::string &what) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL)
    return llvm::Error::success();
  auto d = tensorFromProto(t, baseDir, what);
  if (!d)
    return d.takeError();
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::DEFAULT);
  t.set_raw_data(onnxRawBytes(**d));
  return llvm::Error::success();
}

/// inlineExternalTensor on every tensor of subgraph `g` and of the
/// subgraphs nested in it: initializers (sparse ones too) and tensor
/// attributes of its nodes.
static llvm::Error inlineExternalData(onnx::GraphProto &g,
                                      llvm::StringRef baseDir,
                                      const std::string &where, int depth) {
  if (depth > kProtoRecursionLimit)
    return makeError(where + ": subgraphs nested too deep");
  std::string in = where + ": subgraph '" + g.name() + "'";
  for (onnx::TensorProto &t : *g.mutable_initializer())
    if (auto err = inlineExternalTensor(t, baseDir,
                                        in + " initializer '" + t.name() + "'"))
      return err;
  for (onnx::SparseTensorProto &t : *g.mutable_sparse_initializer()) {
    std::string what = in + " sparse initializer '" + t.values().name() + "'";
    if (auto err = inlineExternalTensor(*t.mutable_values(), baseDir, what))
      return err;
    if (auto err = inlineExternalTensor(*t.mutable_indices(), baseDir, what))
      return err;
  }
  for (onnx::NodeProto &n : *g.mutable_node())
    for (onnx::AttributeProto &a : *n.mutable_attribute()) {
      std::string what =
          in + " node '" + n.name() + "' attribute '" + a.name() + "'";
      if (a.has_t())
        if (auto err = inlineExternalTensor(*a.mutable_t(), baseDir, what))
          return err;
      for (onnx::TensorProto &t : *a.mutable_tensors())
        if (auto err = inlineExternalTensor(t, baseDir, what))
          return err;
      if (a.has_g())
        if (auto err =
                inlineExternalData(*a.mutable_g(), baseDir, what, depth + 1))
          return err;
      for (onnx::GraphProto &sub : *a.mutable_graphs())
        if (auto err = inlineExternalData(sub, baseDir, what, depth + 1))
          return err;
    }
  return llvm::Error::success();
}

llvm::Expected<Attribute>
onnxbridge::attributeFromProto(const onnx::AttributeProto &a,
                               llvm::StringRef baseDir,
                               llvm::function_ref<std::string()> where) {
  using AP = onnx::AttributeProto;
  auto opaque = [&](const char *kind) {
    return Attribute(OpaqueAttr{kind, a.SerializeAsString()});
  };
  if (!a.ref_attr_name().empty())
    return opaque("ref_attr");
  // proto2 keeps an enum value it does not know as an unknown field.
  for (int i = 0; i < a.unknown_fields().field_count(); ++i)
    if (a.unknown_fields().field(i).number() ==
        onnx::AttributeProto::kTypeFieldNumber)
      return makeError(where() + ": attribute '" + a.name() +
                       "' has unknown type " +
                       llvm::Twine(a.unknown_fields().field(i).varint()));
  AP::AttributeType type = a.type();
  if (type == AP::UNDEFINED) { // pre-IR-3 models: infer from the fields set
    if (a.has_f())
      type = AP::FLOAT;
    else if (a.has_i())
      type = AP::INT;
    else if (a.has_s())
      type = AP::STRING;
    else if (a.has_t())
      type = AP::TENSOR;
    else if (a.has_g())
      type = AP::GRAPH;
    else if (a.floats_size())
      type = AP::FLOATS;
    else if (a.ints_size())
      type = AP::INTS;
    else if (a.strings_size())
      type = AP::STRINGS;
    else
      return opaque("undefined");
  }
  // Only tensors need the description (for their errors): built there.
  auto what = [&] { return where() + ": attribute '" + a.name() + "'"; };
  switch (type) {
  case AP::FLOAT:
    return Attribute(a.f());
  case AP::INT:
    return Attribute(static_cast<int64_t>(a.i()));
  case AP::STRING:
    return Attribute(a.s());
  case AP::FLOATS:
    return Attribute(std::vector<float>(a.floats().begin(), a.floats().end()));
  case AP::INTS:
    return Attribute(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
  case AP::STRINGS:
    return Attribute(
        std::vector<std::string>(a.strings().begin(), a.strings().end()));
  case AP::TENSOR: {
    onnx::TensorProto copy = a.t();
    auto d = tensorFromProto(copy, baseDir, what());
    if (!d)
      return d.takeError();
    return Attribute(*d);
  }
  case AP::TENSORS: {
    std::vector<DenseElementsRef> ts;
    const std::string whatText = what();
    for (const auto &t : a.tensors()) {
      onnx::TensorProto copy = t;
      auto d = tensorFromProto(copy, baseDir, whatText);
      if (!d)
        return d.takeError();
      ts.push_back(*d);
    }
    return Attribute(std::move(ts));
  }
  case AP::GRAPH:
  case AP::GRAPHS: {
    // Kept serialized, with any external data of its tensors loaded in.
    AP copy = a;
    std::string whatText = what();
    if (copy.has_g())
      if (auto err =
              inlineExternalData(*copy.mutable_g(), baseDir, whatText, 1))
        return std::move(err);
    for (onnx::GraphProto &sub : *copy.mutable_graphs())
      if (auto err = inlineExternalData(sub, baseDir, whatText, 1))
        return std::move(err);
    return Attribute(OpaqueAttr{type == AP::GRAPH ? "graph" : "graphs",
                                copy.SerializeAsString()});
  }
  case AP::SPARSE_TENSOR:
    return opaque("sparse_tensor");
  case AP::SPARSE_TENSORS:
    return opaque("sparse_tensors");
  case AP::TYPE_PROTO:
    return opaque("type_proto");
  case AP::TYPE_PROTOS:
    return opaque("type_protos");
  default:
    return makeError(what() + ": unknown attribute type " +
                     llvm::Twine(static_cast<int>(type)));
  }
}

bool onnxbridge::attributeToProto(llvm::StringRef name, const Attribute &attr,
                                  onnx::AttributeProto &out) {
  using AP = onnx::AttributeProto;
  if (auto *o = attr.getIf<OpaqueAttr>()) {
    // The nesting limit of import, so whatever imported exports whole.
    google::protobuf::io::ArrayInputStream raw(
        o->bytes.data(), static_cast<int>(o->bytes.size()));
    google::protobuf::io::CodedInputStream in(&raw);
    in.SetRecursionLimit(kProtoRecursionLimit);
    if (!out.ParseFromCodedStream(&in))
      return false;
    out.set_name(name.str());
    return true;
  }
  out.set_name(name.str());
  if (auto *i = attr.getIf<int64_t>()) {
    out.set_type(AP::INT);
    out.set_i(*i);
  } else if (auto *f = attr.getIf<float>()) {
    out.set_type(AP::FLOAT);
    out.set_f(*f);
  } else if (auto *s = attr.getIf<std::string>()) {
    out.set_type(AP::STRING);
    out.set_s(*s);
  } else if (auto *is = attr.getIf<std::vector<int64_t>>()) {
    out.set_type(AP::INTS);
    for (int64_t v : *is)
      out.add_ints(v);
  } else if (auto *fs = attr.getIf<std::vector<float>>()) {
    out.set_type(AP::FLOATS);
    for (float v : *fs)
      out.add_floats(v);
  } else if (auto *ss = attr.getIf<std::vector<std::string>>()) {
    out.set_type(AP::STRINGS);
    for (const std::string &v : *ss)
      out.add_strings(v);
  } else if (auto *t = attr.getIf<DenseElementsRef>()) {
    out.set_type(AP::TENSOR);
    tensorToProto(**t, (*t)->getName(), *out.mutable_t());
  } else if (auto *ts = attr.getIf<std::vector<DenseElementsRef>>()) {
    out.set_type(AP::TENSORS);
    for (const DenseElementsRef &t : *ts)
      tensorToProto(*t, t->getName(), *out.add_tensors());
  } else if (auto *e = attr.getIf<EmptyList>()) {
    static const AP::AttributeType kinds[] = {AP::INTS, AP::FLOATS, AP::STRINGS,
                                              AP::TENSORS};
    out.set_type(kinds[e->kind]);
  }
  return true;
}

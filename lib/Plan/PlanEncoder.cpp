//===- PlanEncoder.cpp - A plan as fields; the .qplan bytes ---------------===//
//
// The fields of a plan in order (PlanDecoder.cpp reads the same ones, by the
// same labels), and the binary sink that makes them a .qplan file
// (PlanFileFormat.h). Conv weights go out unpacked (OIHW), so the reader can
// pack them for whatever machine reads the file.
//
//===----------------------------------------------------------------------===//

#include "PlanFields.h"
#include "PlanFileFormat.h"
#include "qopt/Plan/PlanFile.h"

#include "llvm/Support/Casting.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/xxhash.h"

#include <cstring>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

//===----------------------------------------------------------------------===//
// Enum spellings of the text form
//===----------------------------------------------------------------------===//

EnumNames planfile::elementKindNames() {
  static const std::vector<llvm::StringRef> names = [] {
    std::vector<llvm::StringRef> v;
    for (unsigned k = 0; k <= unsigned(ElementKind::F4E2M1); ++k)
      v.push_back(getElementKindName(ElementKind(k)));
    return v;
  }();
  return {"element kind", names};
}

EnumNames planfile::layoutNames() {
  static const llvm::StringRef names[] = {"onnx", "nhwc"};
  return {"layout", names};
}

EnumNames planfile::stepKindNames() {
  static const llvm::StringRef names[] = {
#define PLAN_STEP(KIND, CLASS, SPELLING, DESCRIPTION, VERSION) SPELLING,
#include "qopt/Plan/PlanSteps.def"
  };
  return {"step kind", names};
}

EnumNames planfile::activationNames() {
  static const llvm::StringRef names[] = {
      "none", "relu",         "leaky_relu", "clip", "sigmoid",
      "tanh", "hard_sigmoid", "hard_swish", "silu"};
  static_assert(std::size(names) == size_t(Activation::Silu) + 1);
  return {"activation", names};
}

EnumNames planfile::attributeTagNames() {
  static const llvm::StringRef names[] = {
      "int",     "float",  "string",  "ints",   "floats",
      "strings", "tensor", "tensors", "opaque", "empty"};
  static_assert(std::size(names) == size_t(AttrTag::EmptyList) + 1);
  return {"attribute kind", names};
}

FieldSink::~FieldSink() = default;

void FieldSink::grid(const QuantizeGrid &g) {
  f32(g.scale, "grid");
  i32(g.zero, "grid");
  flag(g.isSigned, "grid");
  u8(g.flip, "grid");
}

void FieldSink::optionalGrid(const std::optional<QuantizeGrid> &g,
                             const char *label) {
  flag(g.has_value(), label);
  if (g)
    grid(*g);
}

//===----------------------------------------------------------------------===//
// The fields
//===----------------------------------------------------------------------===//

namespace {

llvm::ArrayRef<uint8_t> bytesOf(const void *data, size_t size) {
  return llvm::ArrayRef<uint8_t>(static_cast<const uint8_t *>(data), size);
}

} // namespace

void PlanEncoder::requantizedAdd(const RequantizedAdd &add, const char *label) {
  for (float v : {add.scaleV, add.scaleW, add.low, add.high, add.outputScale})
    out.f32(v, label);
  for (int32_t v : {add.zeroV, add.zeroW, add.outputZero})
    out.i32(v, label);
}

void PlanEncoder::dense(const DenseElements &d) {
  out.enumByte(uint8_t(d.getKind()), elementKindNames(), "tensor attribute");
  out.ints(d.getDims(), "tensor attribute");
  out.string(d.getName(), "tensor attribute");
  if (d.getKind() == ElementKind::String)
    out.strings(d.getStrings(), "tensor attribute data");
  else
    out.blob(bytesOf(d.getRawBytes().data(), d.getRawBytes().size()),
             "tensor attribute data");
}

void PlanEncoder::attribute(const Attribute &a) {
  const Attribute::Storage &s = a.get();
  out.enumByte(uint8_t(s.index()), attributeTagNames(), "attribute");
  switch (static_cast<AttrTag>(s.index())) {
  case AttrTag::Int:
    return out.i64(std::get<int64_t>(s), "attribute");
  case AttrTag::Float:
    return out.f32(std::get<float>(s), "attribute");
  case AttrTag::String:
    return out.string(std::get<std::string>(s), "attribute");
  case AttrTag::Ints:
    return out.ints(std::get<std::vector<int64_t>>(s), "attribute");
  case AttrTag::Floats:
    return out.floats(std::get<std::vector<float>>(s), "attribute");
  case AttrTag::Strings:
    return out.strings(std::get<std::vector<std::string>>(s), "attribute");
  case AttrTag::Tensor:
    return dense(*std::get<DenseElementsRef>(s));
  case AttrTag::Tensors: {
    const auto &list = std::get<std::vector<DenseElementsRef>>(s);
    out.u64(list.size(), "tensor list");
    for (const DenseElementsRef &d : list)
      dense(*d);
    return;
  }
  case AttrTag::Opaque:
    out.string(std::get<OpaqueAttr>(s).kind, "opaque attribute");
    return out.string(std::get<OpaqueAttr>(s).bytes, "opaque attribute");
  case AttrTag::EmptyList:
    return out.u8(uint8_t(std::get<EmptyList>(s).kind), "empty list kind");
  }
}

void PlanEncoder::quantType(const QuantType *q) {
  out.flag(q != nullptr, "quantized type");
  if (!q)
    return;
  out.enumByte(uint8_t(q->getStorageKind()), elementKindNames(),
               "quantized type");
  out.enumByte(uint8_t(q->getExpressedKind()), elementKindNames(),
               "quantized type");
  out.flag(q->isPerAxis(), "quantized type");
  out.i64(q->isPerAxis() ? q->getAxis() : 0, "quantized type");
  out.floats(q->getScales(), "scales");
  out.ints(q->getZeroPoints(), "zero points");
  out.i64(q->getBlockSize(), "block size");
}

void PlanEncoder::tensor(const PlanTensor &t, size_t id) {
  out.beginRecord();
  out.string(t.name, "tensor");
  out.enumByte(uint8_t(t.kind), elementKindNames(), "tensor");
  out.enumByte(uint8_t(t.layout), layoutNames(), "tensor");
  out.ints(t.shape, "tensor");
  out.i64(t.arenaOffset, "tensor");
  out.flag(t.constant != nullptr, "tensor");
  out.note("%" + llvm::Twine(id));
  if (!t.constant)
    return;
  if (t.kind == ElementKind::String)
    out.strings(t.constant->strings(), "constant");
  else
    out.blob(bytesOf(t.constant->bytes(), t.constant->byteSize()), "constant");
}

void PlanEncoder::conv(const Int8Conv &c) {
  const Int8ConvShape &s = c.getShape();
  for (int64_t v : {s.batch, s.inH, s.inW, s.inC, s.outC, s.kernelH, s.kernelW,
                    s.strideH, s.strideW, s.dilationH, s.dilationW, s.padTop,
                    s.padLeft, s.padBottom, s.padRight, s.groups})
    out.i64(v, "conv geometry");
  out.i64(s.inputDilationH, "conv input dilation");
  out.i64(s.inputDilationW, "conv input dilation");
  std::vector<int8_t> weights = c.getWeights();
  out.blob(bytesOf(weights.data(), weights.size()), "conv weights");
  const Int8Epilogue &e = c.getEpilogue();
  out.floats(e.scale, "conv scales");
  out.floats(e.bias, "conv biases");
  out.i32(e.inputZero, "conv input zero point");
  out.enumByte(uint8_t(e.activation), activationNames(), "activation");
  out.f32(e.alpha, "activation");
  out.f32(e.beta, "activation");
  out.flag(e.hasResidual, "residual");
  out.flag(e.residualAfterActivation, "residual");
  out.f32(e.residualScale, "residual");
  out.i32(e.residualZero, "residual");
  out.f32(e.outputScale, "output grid");
  out.i32(e.outputZero, "output grid");
  out.i32s(e.weightZero, "weight zero points");
  out.blob(e.outputTable, "conv output table");
  out.blob(e.pairTable, "conv pair table");
  out.flag(e.pairArithmetic.has_value(), "pair arithmetic");
  if (const auto &add = e.pairArithmetic)
    requantizedAdd(*add, "pair arithmetic");
}

void PlanEncoder::window(const PoolStep::Window &w) {
  for (int64_t v :
       {w.batch, w.channels, w.inH, w.inW, w.outH, w.outW, w.kernelH, w.kernelW,
        w.strideH, w.strideW, w.dilationH, w.dilationW, w.padTop, w.padLeft})
    out.i64(v, "pool window");
}

llvm::Error PlanEncoder::step(const PlanStep &s) {
  out.beginRecord();
  out.enumByte(uint8_t(s.getKind()), stepKindNames(), "step");
  out.string(s.getName(), "step");
  out.string(s.op, "step");
  out.i32s(s.inputs, "step");
  out.i32s(s.outputs, "step");
  return s.writeFields(*this);
}

llvm::Error PlanEncoder::plan(const Plan &plan) {
  out.u64(plan.arenaBytes, "arena");
  out.u64(plan.tensors.size(), "tensors");
  for (size_t id = 0; id < plan.tensors.size(); ++id)
    tensor(plan.tensors[id], id);
  out.beginRecord();
  out.i32s(plan.inputs, "inputs");
  out.i32s(plan.outputs, "outputs");
  out.u64(plan.steps.size(), "steps");
  for (const auto &s : plan.steps)
    if (auto err = step(*s))
      return err;
  return llvm::Error::success();
}

namespace {

/// The .qplan bytes: little-endian scalars, length-prefixed strings and
/// lists, blobs at 64-byte offsets.
class BinarySink final : public FieldSink {
public:
  BinarySink() : out(kHeaderBytes, '\0') {}

  void u8(uint8_t v, const char *) override {
    out.push_back(static_cast<char>(v));
  }
  void enumByte(uint8_t v, EnumNames, const char *label) override {
    u8(v, label);
  }
  void i32(int32_t v, const char *) override { scalar(v); }
  void u64(uint64_t v, const char *) override { scalar(v); }
  void i64(int64_t v, const char *) override { scalar(v); }
  void f32(float v, const char *) override {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    scalar(bits);
  }
  void string(llvm::StringRef s, const char *) override {
    scalar(uint64_t(s.size()));
    out.append(s.data(), s.size());
  }
  void blob(llvm::ArrayRef<uint8_t> bytes, const char *) override {
    scalar(uint64_t(bytes.size()));
    out.append((kBlobAlignment - out.size() % kBlobAlignment) % kBlobAlignment,
               '\0');
    out.append(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  }
  void ints(llvm::ArrayRef<int64_t> v, const char *) override { list(v); }
  void i32s(llvm::ArrayRef<int> v, const char *) override { list(v); }
  void floats(llvm::ArrayRef<float> v, const char *label) override {
    scalar(uint64_t(v.size()));
    for (float x : v)
      f32(x, label);
  }
  void strings(llvm::ArrayRef<std::string> v, const char *label) override {
    scalar(uint64_t(v.size()));
    for (const std::string &s : v)
      string(s, label);
  }

  /// The file: header, fields, end marker.
  std::string finish() {
    scalar(kEndMarker);
    using namespace llvm::support;
    char *header = out.data();
    std::memcpy(header, kPlanFileMagic.data(), 8);
    endian::write32le(header + 8, kPlanFileVersion);
    endian::write32le(header + 12, 0);
    endian::write64le(header + 16, out.size());
    endian::write64le(
        header + 24,
        llvm::xxHash64(llvm::StringRef(out).drop_front(kHeaderBytes)));
    return std::move(out);
  }

private:
  template <typename T> void scalar(T v) {
    char bytes[sizeof(T)];
    llvm::support::endian::write<T, llvm::support::little>(bytes, v);
    out.append(bytes, sizeof(T));
  }
  template <typename T> void list(llvm::ArrayRef<T> v) {
    scalar(uint64_t(v.size()));
    for (T x : v)
      scalar(x);
  }

  std::string out;
};

} // namespace

llvm::Error planfile::encodePlan(const Plan &plan, FieldSink &out) {
  return PlanEncoder(out).plan(plan);
}

bool plan::isPlanFile(llvm::StringRef bytes) {
  return bytes.startswith(kPlanFileMagic);
}

llvm::Expected<std::string> plan::serializePlan(const Plan &plan) {
  BinarySink sink;
  if (auto err = encodePlan(plan, sink))
    return std::move(err);
  return sink.finish();
}

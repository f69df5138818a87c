//===- PlanFileReader.cpp - .qplan bytes to a plan ------------------------===//
//
// Reads what PlanFileWriter.cpp writes, trusting nothing: the header first
// (magic, version, size, checksum), then every field with its bounds (a
// count is never larger than the bytes left could hold, enums are in range,
// sizes agree with shapes) before anything is built from it, and the whole
// plan through verifyPlan at the end. The first problem is the error,
// with the byte offset the reader had reached (just past the bad field).
//
//===----------------------------------------------------------------------===//

#include "PlanFileFormat.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Runtime/PlanFile.h"

#include "llvm/Support/Casting.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"

#include <cstring>
#include <variant>

using namespace qopt;
using namespace qopt::rt;
using namespace qopt::rt::planfile;

static_assert(std::variant_size_v<Attribute::Storage> ==
                  size_t(AttrTag::EmptyList) + 1,
              "one tag per kind of attribute");

namespace {

/// "plan file: <msg>" on one line (names from the file may hold line
/// breaks).
llvm::Error makeError(const llvm::Twine &msg) {
  std::string text = ("plan file: " + msg).str();
  for (char &c : text)
    if (c == '\n' || c == '\r')
      c = ' ';
  return llvm::createStringError(llvm::inconvertibleErrorCode(), text);
}

/// Reads fields in order; the first failure sticks (later reads return
/// zeros) and is reported by takeError().
class PlanFileReader {
public:
  PlanFileReader(llvm::StringRef file, Isa isa)
      : file(file), at(kHeaderBytes), isa(isa) {}

  llvm::Expected<std::unique_ptr<Plan>> read();

private:
  bool fail(const llvm::Twine &why) {
    if (!failed) {
      failed = true;
      reason = why.str() + " (at byte " + std::to_string(at) + ")";
    }
    return false;
  }
  bool take(size_t size, const char *&bytes, const char *what) {
    if (failed)
      return false;
    if (size > file.size() - at)
      return fail(llvm::Twine("truncated ") + what);
    bytes = file.data() + at;
    at += size;
    return true;
  }
  template <typename T> T scalar(const char *what) {
    const char *bytes = nullptr;
    if (!take(sizeof(T), bytes, what))
      return T();
    return llvm::support::endian::read<T, llvm::support::little>(bytes);
  }
  uint8_t u8(const char *what) { return scalar<uint8_t>(what); }
  int32_t i32(const char *what) { return scalar<int32_t>(what); }
  uint64_t u64(const char *what) { return scalar<uint64_t>(what); }
  int64_t i64(const char *what) { return scalar<int64_t>(what); }
  float f32(const char *what) {
    uint32_t bits = scalar<uint32_t>(what);
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  bool flag(const char *what) {
    uint8_t v = u8(what);
    if (v > 1)
      fail(llvm::Twine(what) + " is " + llvm::Twine(unsigned(v)) +
           ", not 0 or 1");
    return v == 1;
  }
  /// A quantize grid (scale, zero point, signedness, flip); the verifier
  /// checks it against its tensor.
  QuantizeGrid grid() {
    QuantizeGrid g;
    g.scale = f32("grid scale");
    g.zero = i32("grid zero point");
    g.isSigned = flag("grid signedness");
    g.flip = u8("grid flip");
    return g;
  }
  /// An enum stored as one byte, at most `last`.
  template <typename E> E enumValue(E last, const char *what) {
    uint8_t v = u8(what);
    if (v > static_cast<uint8_t>(last))
      fail(llvm::Twine(what) + " " + llvm::Twine(unsigned(v)) +
           " is not one this reader knows");
    return failed ? E() : static_cast<E>(v);
  }
  /// A count of elements that take at least `minBytes` each.
  size_t count(size_t minBytes, const char *what) {
    uint64_t n = u64(what);
    if (!failed && n > (file.size() - at) / minBytes)
      fail(llvm::Twine(what) + ": " + llvm::Twine(n) +
           " elements cannot fit the bytes left");
    return failed ? 0 : static_cast<size_t>(n);
  }
  std::string string(const char *what) {
    size_t n = count(1, what);
    const char *bytes = nullptr;
    if (!take(n, bytes, what))
      return {};
    return std::string(bytes, n);
  }
  /// A blob's bytes, in place in the file.
  llvm::StringRef blob(const char *what) {
    size_t n = count(1, what);
    size_t pad = (kBlobAlignment - at % kBlobAlignment) % kBlobAlignment;
    const char *bytes = nullptr;
    if (!take(pad, bytes, what) || !take(n, bytes, what))
      return {};
    return llvm::StringRef(bytes, n);
  }
  std::vector<int64_t> ints(const char *what) {
    std::vector<int64_t> v(count(8, what));
    for (int64_t &x : v)
      x = i64(what);
    return v;
  }
  std::vector<int> i32s(const char *what) {
    std::vector<int> v(count(4, what));
    for (int &x : v)
      x = i32(what);
    return v;
  }
  std::vector<float> floats(const char *what) {
    std::vector<float> v(count(4, what));
    for (float &x : v)
      x = f32(what);
    return v;
  }
  std::vector<std::string> strings(const char *what) {
    std::vector<std::string> v(count(8, what));
    for (std::string &s : v)
      s = string(what);
    return v;
  }

  DenseElementsRef dense();
  std::optional<Attribute> attribute();
  const QuantType *quantType(Context &types);
  bool tensor(PlanTensor &t);
  std::unique_ptr<PlanStep> step(Plan &plan);
  /// A conv or gemm step's kernel (its record), or none after fail().
  std::optional<Int8Conv> conv(const std::string &name);
  std::unique_ptr<PlanStep> floatStep(std::string name, Plan &plan);

  llvm::StringRef file;
  size_t at;
  Isa isa;
  uint32_t version = kPlanFileVersion;
  bool failed = false;
  std::string reason;
};

DenseElementsRef PlanFileReader::dense() {
  auto kind = enumValue(ElementKind::String, "tensor attribute kind");
  std::vector<int64_t> dims = ints("tensor attribute shape");
  std::string name = string("tensor attribute name");
  if (failed)
    return nullptr;
  auto elements = shapeNumElements(dims);
  if (!elements) {
    fail("a tensor attribute's shape is invalid");
    return nullptr;
  }
  if (kind == ElementKind::String) {
    std::vector<std::string> values = strings("tensor attribute strings");
    if (!failed && values.size() != size_t(*elements))
      fail("a string tensor attribute has the wrong number of strings");
    return failed ? nullptr
                  : std::make_shared<const DenseElements>(
                        std::move(dims), std::move(values), std::move(name));
  }
  llvm::StringRef bytes = blob("tensor attribute data");
  auto size = DenseElements::byteSizeFor(kind, *elements);
  if (!failed &&
      (kind == ElementKind::Unknown || !size || *size != bytes.size()))
    fail("a tensor attribute's data is not its shape's size");
  return failed ? nullptr
                : std::make_shared<const DenseElements>(
                      kind, std::move(dims), bytes.str(), std::move(name));
}

std::optional<Attribute> PlanFileReader::attribute() {
  AttrTag tag = enumValue(AttrTag::EmptyList, "attribute kind");
  if (failed)
    return std::nullopt;
  switch (tag) {
  case AttrTag::Int:
    return Attribute(i64("attribute"));
  case AttrTag::Float:
    return Attribute(f32("attribute"));
  case AttrTag::String:
    return Attribute(string("attribute"));
  case AttrTag::Ints:
    return Attribute(ints("attribute"));
  case AttrTag::Floats:
    return Attribute(floats("attribute"));
  case AttrTag::Strings:
    return Attribute(strings("attribute"));
  case AttrTag::Tensor:
    if (DenseElementsRef d = dense())
      return Attribute(std::move(d));
    return std::nullopt;
  case AttrTag::Tensors: {
    std::vector<DenseElementsRef> list(count(25, "tensor list"));
    for (DenseElementsRef &d : list)
      if (!(d = dense()))
        return std::nullopt;
    return Attribute(std::move(list));
  }
  case AttrTag::Opaque: {
    OpaqueAttr opaque;
    opaque.kind = string("opaque attribute");
    opaque.bytes = string("opaque attribute");
    return Attribute(std::move(opaque));
  }
  case AttrTag::EmptyList:
    return Attribute(
        EmptyList{enumValue(EmptyList::Tensors, "empty list kind")});
  }
  return std::nullopt;
}

const QuantType *PlanFileReader::quantType(Context &types) {
  if (!flag("quantized type present"))
    return nullptr;
  auto storage = enumValue(ElementKind::String, "quantized storage kind");
  auto expressed = enumValue(ElementKind::String, "quantized expressed kind");
  bool perAxis = flag("quantized axis present");
  int64_t axis = i64("quantized axis");
  std::vector<float> scales = floats("scales");
  std::vector<int64_t> zeroPoints = ints("zero points");
  if (failed)
    return nullptr;
  if (scales.empty() || scales.size() != zeroPoints.size() || axis < 0 ||
      axis > 64) {
    fail("a quantized type's scales, zero points or axis are malformed");
    return nullptr;
  }
  const QuantType *q = types.getQuantType(
      storage, expressed, perAxis ? std::optional<int64_t>(axis) : std::nullopt,
      scales, zeroPoints);
  std::string problem = checkQuantType(q);
  if (!problem.empty()) {
    fail("a quantized type: " + problem);
    return nullptr;
  }
  return q;
}

bool PlanFileReader::tensor(PlanTensor &t) {
  t.name = string("tensor name");
  t.kind = enumValue(ElementKind::String, "element kind");
  t.layout = enumValue(PlanLayout::Nhwc, "layout");
  t.shape = ints("tensor shape");
  t.arenaOffset = i64("arena offset");
  if (!flag("constant flag") || failed)
    return !failed;
  for (int64_t d : t.shape)
    if (d < 0)
      return fail("tensor '" + t.name + "' has a negative dimension");
  auto elements = shapeNumElements(t.shape);
  if (!elements)
    return fail("tensor '" + t.name + "' has too many elements");
  if (t.kind == ElementKind::String) {
    std::vector<std::string> values = strings("constant strings");
    if (failed || values.size() != size_t(*elements))
      return fail("constant '" + t.name + "' has the wrong number of strings");
    Tensor value(t.kind, t.shape);
    value.strings() = std::move(values);
    t.constant = std::make_shared<const Tensor>(std::move(value));
    return true;
  }
  llvm::StringRef bytes = blob("constant data");
  auto size = DenseElements::byteSizeFor(t.kind, *elements);
  if (failed || t.kind == ElementKind::Unknown || !size ||
      *size != bytes.size())
    return fail("constant '" + t.name + "' does not hold its shape's bytes");
  auto value = Tensor::allocate(t.kind, t.shape);
  if (!value)
    return fail("constant '" + t.name +
                "': " + llvm::toString(value.takeError()));
  if (!bytes.empty())
    std::memcpy(value->bytes(), bytes.data(), bytes.size());
  t.constant = std::make_shared<const Tensor>(std::move(*value));
  return true;
}

std::optional<Int8Conv> PlanFileReader::conv(const std::string &name) {
  Int8ConvShape s;
  for (int64_t *v :
       {&s.batch, &s.inH, &s.inW, &s.inC, &s.outC, &s.kernelH, &s.kernelW,
        &s.strideH, &s.strideW, &s.dilationH, &s.dilationW, &s.padTop,
        &s.padLeft, &s.padBottom, &s.padRight, &s.groups})
    *v = i64("conv geometry");
  if (version >= 2) {
    s.inputDilationH = i64("conv input dilation");
    s.inputDilationW = i64("conv input dilation");
  }
  llvm::StringRef weights = blob("conv weights");
  Int8Epilogue e;
  e.scale = floats("conv scales");
  e.bias = floats("conv biases");
  e.inputZero = i32("conv input zero point");
  e.activation = enumValue(Activation::Silu, "activation");
  e.alpha = f32("activation alpha");
  e.beta = f32("activation beta");
  e.hasResidual = flag("residual flag");
  e.residualAfterActivation = flag("residual order");
  e.residualScale = f32("residual scale");
  e.residualZero = i32("residual zero point");
  e.outputScale = f32("output scale");
  e.outputZero = i32("output zero point");
  if (version >= 3) {
    e.weightZero = i32s("weight zero points");
    llvm::StringRef table = blob("conv output table");
    e.outputTable.assign(table.bytes_begin(), table.bytes_end());
  }
  if (version >= 4) {
    llvm::StringRef pairs = blob("conv pair table");
    e.pairTable.assign(pairs.bytes_begin(), pairs.bytes_end());
  }
  if (version >= 5 && flag("pair arithmetic flag")) {
    RequantizedAdd add;
    for (float *v :
         {&add.scaleV, &add.scaleW, &add.low, &add.high, &add.outputScale})
      *v = f32("pair arithmetic");
    for (int32_t *v : {&add.zeroV, &add.zeroW, &add.outputZero})
      *v = i32("pair arithmetic");
    e.pairArithmetic = add; // checkParams checks it against the table
  }
  if (failed)
    return std::nullopt;
  if (auto err = Int8Conv::checkParams(s, e)) {
    fail("conv '" + name + "': " + llvm::toString(std::move(err)));
    return std::nullopt;
  }
  // checkParams bounded this product.
  if (weights.size() !=
      size_t(s.outC * (s.inC / s.groups) * s.kernelH * s.kernelW)) {
    fail("conv '" + name + "' has " + llvm::Twine(weights.size()) +
         " weights, not what its geometry needs");
    return std::nullopt;
  }
  return Int8Conv(isa, s, reinterpret_cast<const int8_t *>(weights.data()),
                  std::move(e));
}

std::unique_ptr<PlanStep> PlanFileReader::floatStep(std::string name,
                                                    Plan &plan) {
  int64_t opset = i64("opset");
  KernelOp op;
  op.op = string("op");
  op.description = string("op description");
  size_t attributes = count(9, "attributes");
  for (size_t i = 0; i < attributes && !failed; ++i) {
    std::string attrName = string("attribute name");
    std::optional<Attribute> value = attribute();
    if (value)
      op.attributes.push_back({std::move(attrName), std::move(*value)});
  }
  op.operandQuantTypes.resize(count(1, "operand types"));
  for (const QuantType *&q : op.operandQuantTypes)
    q = quantType(plan.types);
  op.resultQuantTypes.resize(count(1, "result types"));
  for (const QuantType *&q : op.resultQuantTypes)
    q = quantType(plan.types);
  size_t results = count(1, "results");
  for (size_t i = 0; i < results; ++i)
    op.resultPresent.push_back(flag("result present"));
  if (failed)
    return nullptr;
  KernelFn fn = KernelRegistry::get().lookup(op.op);
  if (!fn) {
    fail("float step '" + name + "': this qopt has no kernel for " + op.op);
    return nullptr;
  }
  return std::make_unique<FloatStep>(std::move(name), std::move(op), fn, opset);
}

std::unique_ptr<PlanStep> PlanFileReader::step(Plan &plan) {
  auto kind = enumValue(PlanStep::Kind::Gemm, "step kind");
  std::string name = string("step name");
  std::string op = string("step op");
  std::vector<int> inputs = i32s("step inputs");
  std::vector<int> outputs = i32s("step outputs");
  if (failed)
    return nullptr;
  std::unique_ptr<PlanStep> s;
  switch (kind) {
  case PlanStep::Kind::Conv:
    if (auto c = conv(name))
      s = std::make_unique<ConvStep>(name, std::move(*c));
    break;
  case PlanStep::Kind::Gemm:
    if (auto c = conv(name))
      s = std::make_unique<GemmStep>(name, std::move(*c));
    break;
  case PlanStep::Kind::Reformat: {
    auto r = std::make_unique<ReformatStep>(name);
    r->shape = ints("reformat shape");
    if (version >= 6) {
      for (int64_t *v :
           {&r->rowStride, &r->columnOffset, &r->firstRow, &r->batchRows})
        *v = i64("reformat placement");
    }
    if (!failed && r->shape.size() != 4)
      fail("reformat '" + name + "' is not of a 4-D shape");
    s = std::move(r);
    break;
  }
  case PlanStep::Kind::Float:
    s = floatStep(name, plan);
    break;
  case PlanStep::Kind::Table: {
    uint8_t arity = u8("table arity"), resultBytes = u8("table result size");
    int64_t elements = i64("table elements");
    llvm::StringRef table = blob("table");
    TableStep::Broadcast broadcast;
    if (version >= 3) {
      broadcast.operand = i32("table broadcast operand");
      broadcast.inner = i64("table broadcast inner");
      broadcast.count = i64("table broadcast count");
    }
    if (failed)
      return nullptr;
    if (!(arity == 1 || (arity == 2 && resultBytes == 1)) ||
        (resultBytes != 1 && resultBytes != 4) || elements < 0 ||
        table.size() != (size_t(1) << (8 * arity)) * resultBytes) {
      fail("table '" + name + "' is not 256^arity results of 1 or 4 bytes");
      return nullptr;
    }
    if (broadcast.operand < -1 || broadcast.operand > 1 ||
        (broadcast.operand >= 0 && arity != 2)) {
      fail("table '" + name + "' broadcasts an operand it does not have");
      return nullptr;
    }
    s = std::make_unique<TableStep>(
        name, arity, resultBytes,
        std::vector<uint8_t>(table.bytes_begin(), table.bytes_end()), elements,
        broadcast);
    break;
  }
  case PlanStep::Kind::Pool: {
    PoolStep::Window w;
    for (int64_t *v : {&w.batch, &w.channels, &w.inH, &w.inW, &w.outH, &w.outW,
                       &w.kernelH, &w.kernelW, &w.strideH, &w.strideW,
                       &w.dilationH, &w.dilationW, &w.padTop, &w.padLeft})
      *v = i64("pool window");
    bool isFloat = flag("pool kind");
    s = std::make_unique<PoolStep>(name, w, isFloat);
    break;
  }
  case PlanStep::Kind::ChannelCopy: {
    int64_t rows = i64("channel copy rows");
    std::vector<ChannelCopyStep::Piece> pieces(count(40, "pieces"));
    for (ChannelCopyStep::Piece &p : pieces) {
      p.from = i32("piece");
      p.to = i32("piece");
      p.fromChannel = i64("piece");
      p.toChannel = i64("piece");
      p.channels = i64("piece");
      llvm::StringRef table = blob("piece table");
      p.table.assign(table.bytes_begin(), table.bytes_end());
      if (version >= 6 && flag("piece grid flag"))
        p.grid = grid();
    }
    s = std::make_unique<ChannelCopyStep>(name, std::move(pieces), rows);
    break;
  }
  case PlanStep::Kind::Resize: {
    ResizeStep::Geometry g;
    for (int64_t *v : {&g.batch, &g.channels, &g.inH, &g.inW, &g.outH, &g.outW})
      *v = i64("resize geometry");
    std::vector<int64_t> rows = ints("resize rows");
    std::vector<int64_t> cols = ints("resize columns");
    s = std::make_unique<ResizeStep>(name, g, std::move(rows), std::move(cols));
    break;
  }
  case PlanStep::Kind::Quantize: {
    QuantizeGrid g = grid();
    Shape shape = ints("quantize shape");
    bool toNhwc = flag("quantize layout");
    if (failed)
      return nullptr;
    if (toNhwc && shape.size() != 4) {
      fail("quantize '" + name + "' into NHWC is not 4-D");
      return nullptr;
    }
    for (int64_t d : shape)
      if (d < 0) {
        fail("quantize '" + name + "' has a negative dimension");
        return nullptr;
      }
    if (!shapeNumElements(shape)) {
      fail("quantize '" + name + "' has too many elements");
      return nullptr;
    }
    s = std::make_unique<QuantizeStep>(name, isa, g, std::move(shape), toNhwc);
    break;
  }
  }
  if (failed || !s)
    return nullptr;
  s->op = std::move(op);
  s->inputs = std::move(inputs);
  s->outputs = std::move(outputs);
  return s;
}

llvm::Expected<std::unique_ptr<Plan>> PlanFileReader::read() {
  using namespace llvm::support;
  if (!isPlanFile(file))
    return makeError("not a qopt plan (it does not start with " +
                     kPlanFileMagic + ")");
  if (file.size() < kHeaderBytes)
    return makeError("truncated header");
  version = endian::read32le(file.data() + 8);
  if (version < kOldestPlanFileVersion || version > kPlanFileVersion ||
      endian::read32le(file.data() + 12) != 0)
    return makeError("format version " + llvm::Twine(version) +
                     "; this qopt reads versions " +
                     llvm::Twine(kOldestPlanFileVersion) + " to " +
                     llvm::Twine(kPlanFileVersion) + " (rebuild the plan)");
  uint64_t size = endian::read64le(file.data() + 16);
  if (size != file.size())
    return makeError(llvm::Twine(size > file.size() ? "truncated" : "corrupt") +
                     ": the header says " + llvm::Twine(size) +
                     " bytes, the file has " + llvm::Twine(file.size()));
  if (endian::read64le(file.data() + 24) !=
      llvm::xxHash64(file.drop_front(kHeaderBytes)))
    return makeError("checksum mismatch: the file is corrupt");

  auto plan = std::make_unique<Plan>();
  plan->isa = isa;
  plan->arenaBytes = u64("arena size");
  plan->tensors.resize(count(27, "tensors"));
  for (PlanTensor &t : plan->tensors)
    if (!tensor(t))
      break;
  plan->inputs = i32s("graph inputs");
  plan->outputs = i32s("graph outputs");
  size_t steps = count(33, "steps");
  for (size_t i = 0; i < steps && !failed; ++i)
    if (auto s = step(*plan))
      plan->steps.push_back(std::move(s));
  if (!failed && scalar<uint32_t>("end marker") != kEndMarker)
    fail("no end marker after the steps");
  if (!failed && at != file.size())
    fail("bytes after the end marker");
  if (failed)
    return makeError(reason);
  if (auto err = verifyPlan(*plan))
    return makeError(llvm::toString(std::move(err)));
  return std::move(plan);
}

} // namespace

llvm::Expected<std::unique_ptr<Plan>> rt::readPlan(llvm::StringRef bytes,
                                                   Isa isa) {
  return PlanFileReader(bytes, isa).read();
}

llvm::Expected<std::unique_ptr<Plan>> rt::loadPlanFile(llvm::StringRef path,
                                                       Isa isa) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError("cannot read it: " + buffer.getError().message());
  return readPlan((*buffer)->getBuffer(), isa);
}

//===- PlanDecoder.cpp - Fields to a plan; the .qplan reader --------------===//
//
// Reads the fields PlanEncoder.cpp writes, by the same labels, trusting
// nothing: every field with its bounds (a count is never larger than what is
// left could hold, enums are in range, sizes agree with shapes) before
// anything is built from it. The binary source adds the file's header
// (magic, version, size, checksum) and end marker; whoever reads a whole
// plan verifies it (verifyPlan). The first problem is the error, with the
// place the source had reached (just past the bad field).
//
//===----------------------------------------------------------------------===//

#include "PlanFields.h"
#include "PlanFileFormat.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Plan/PlanFile.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/ResourceLimits.h"

#include "llvm/Support/Casting.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"

#include <cstring>
#include <variant>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

static_assert(std::variant_size_v<Attribute::Storage> ==
                  size_t(AttrTag::EmptyList) + 1,
              "one tag per kind of attribute");

FieldSource::~FieldSource() = default;

bool FieldSource::fail(const llvm::Twine &why) {
  if (!failed) {
    failed = true;
    reason = why.str() + " (" + where() + ")";
  }
  return false;
}

bool FieldSource::flag(const char *what) {
  uint8_t v = u8(what);
  if (v > 1)
    fail(llvm::Twine(what) + " is " + llvm::Twine(unsigned(v)) +
         ", not 0 or 1");
  return v == 1;
}

QuantizeGrid FieldSource::grid() {
  QuantizeGrid g;
  g.scale = f32("grid");
  g.zero = i32("grid");
  g.isSigned = flag("grid");
  g.flip = u8("grid");
  return g;
}

std::optional<QuantizeGrid> FieldSource::optionalGrid(const char *what) {
  if (!flag(what))
    return std::nullopt;
  return grid();
}

namespace {

/// "plan file: <msg>" on one line (names from the file may hold line
/// breaks).
llvm::Error planFileError(const llvm::Twine &msg) {
  return makeOneLineError("plan file: " + msg);
}

/// The fields of a .qplan file, after its header.
class BinarySource final : public FieldSource {
public:
  explicit BinarySource(llvm::StringRef file) : file(file), at(kHeaderBytes) {}

  uint8_t u8(const char *what) override { return scalar<uint8_t>(what); }
  uint8_t enumByte(EnumNames names, const char *what) override {
    uint8_t v = u8(what);
    if (!failed && v >= names.size())
      fail(llvm::Twine(what) + ": " + names.kind + " " +
           llvm::Twine(unsigned(v)) + " is not one this reader knows");
    return failed ? 0 : v;
  }
  int32_t i32(const char *what) override { return scalar<int32_t>(what); }
  uint32_t u32(const char *what) { return scalar<uint32_t>(what); }
  uint64_t u64(const char *what) override { return scalar<uint64_t>(what); }
  int64_t i64(const char *what) override { return scalar<int64_t>(what); }
  float f32(const char *what) override {
    uint32_t bits = scalar<uint32_t>(what);
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  size_t count(size_t minBytes, const char *what) override {
    uint64_t n = u64(what);
    if (!failed && n > (file.size() - at) / minBytes)
      fail(llvm::Twine(what) + ": " + llvm::Twine(n) +
           " elements cannot fit the bytes left");
    return failed ? 0 : static_cast<size_t>(n);
  }
  std::string string(const char *what) override {
    size_t n = count(1, what);
    const char *bytes = nullptr;
    if (!take(n, bytes, what))
      return {};
    return std::string(bytes, n);
  }
  llvm::StringRef blob(const char *what) override {
    size_t n = count(1, what);
    size_t pad = (kBlobAlignment - at % kBlobAlignment) % kBlobAlignment;
    const char *bytes = nullptr;
    if (!take(pad, bytes, what) || !take(n, bytes, what))
      return {};
    return llvm::StringRef(bytes, n);
  }
  std::vector<int64_t> ints(const char *what) override {
    std::vector<int64_t> v(count(8, what));
    for (int64_t &x : v)
      x = i64(what);
    return v;
  }
  std::vector<int> i32s(const char *what) override {
    std::vector<int> v(count(4, what));
    for (int &x : v)
      x = i32(what);
    return v;
  }
  std::vector<float> floats(const char *what) override {
    std::vector<float> v(count(4, what));
    for (float &x : v)
      x = f32(what);
    return v;
  }
  std::vector<std::string> strings(const char *what) override {
    std::vector<std::string> v(count(8, what));
    for (std::string &s : v)
      s = string(what);
    return v;
  }
  std::string where() const override { return "at byte " + std::to_string(at); }
  bool atEnd() const { return at == file.size(); }

private:
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

  llvm::StringRef file;
  size_t at;
};

} // namespace

RequantizedAdd PlanDecoder::requantizedAdd(const char *what) {
  RequantizedAdd add;
  for (float *v :
       {&add.scaleV, &add.scaleW, &add.low, &add.high, &add.outputScale})
    *v = in.f32(what);
  for (int32_t *v : {&add.zeroV, &add.zeroW, &add.outputZero})
    *v = in.i32(what);
  return add;
}

PoolStep::Window PlanDecoder::window() {
  PoolStep::Window w;
  for (int64_t *v : {&w.batch, &w.channels, &w.inH, &w.inW, &w.outH, &w.outW,
                     &w.kernelH, &w.kernelW, &w.strideH, &w.strideW,
                     &w.dilationH, &w.dilationW, &w.padTop, &w.padLeft})
    *v = in.i64("pool window");
  return w;
}

DenseElementsRef PlanDecoder::dense() {
  auto kind = in.enumValue<ElementKind>(elementKindNames(), "tensor attribute");
  std::vector<int64_t> dims = in.ints("tensor attribute");
  std::string name = in.string("tensor attribute");
  if (in.failed)
    return nullptr;
  auto elements = shapeNumElements(dims);
  if (!elements) {
    fail("a tensor attribute's shape is invalid");
    return nullptr;
  }
  if (kind == ElementKind::String) {
    std::vector<std::string> values = in.strings("tensor attribute data");
    if (!in.failed && values.size() != size_t(*elements))
      fail("a string tensor attribute has the wrong number of strings");
    return in.failed ? nullptr
                     : std::make_shared<const DenseElements>(
                           std::move(dims), std::move(values), std::move(name));
  }
  llvm::StringRef bytes = in.blob("tensor attribute data");
  auto size = DenseElements::byteSizeFor(kind, *elements);
  if (!in.failed &&
      (kind == ElementKind::Unknown || !size || *size != bytes.size()))
    fail("a tensor attribute's data is not its shape's size");
  return in.failed ? nullptr
                   : std::make_shared<const DenseElements>(
                         kind, std::move(dims), bytes.str(), std::move(name));
}

std::optional<Attribute> PlanDecoder::attribute() {
  auto tag = in.enumValue<AttrTag>(attributeTagNames(), "attribute");
  if (in.failed)
    return std::nullopt;
  switch (tag) {
  case AttrTag::Int:
    return Attribute(in.i64("attribute"));
  case AttrTag::Float:
    return Attribute(in.f32("attribute"));
  case AttrTag::String:
    return Attribute(in.string("attribute"));
  case AttrTag::Ints:
    return Attribute(in.ints("attribute"));
  case AttrTag::Floats:
    return Attribute(in.floats("attribute"));
  case AttrTag::Strings:
    return Attribute(in.strings("attribute"));
  case AttrTag::Tensor:
    if (DenseElementsRef d = dense())
      return Attribute(std::move(d));
    return std::nullopt;
  case AttrTag::Tensors: {
    std::vector<DenseElementsRef> list(in.count(25, "tensor list"));
    for (DenseElementsRef &d : list)
      if (!(d = dense()))
        return std::nullopt;
    return Attribute(std::move(list));
  }
  case AttrTag::Opaque: {
    OpaqueAttr opaque;
    opaque.kind = in.string("opaque attribute");
    opaque.bytes = in.string("opaque attribute");
    return Attribute(std::move(opaque));
  }
  case AttrTag::EmptyList: {
    static const llvm::StringRef kinds[] = {"ints", "floats", "strings",
                                            "tensors"};
    return Attribute(EmptyList{in.enumValue<EmptyList::Kind>(
        {"empty list kind", kinds}, "empty list kind")});
  }
  }
  return std::nullopt;
}

const QuantType *PlanDecoder::quantType(Context &types) {
  if (!in.flag("quantized type"))
    return nullptr;
  auto storage =
      in.enumValue<ElementKind>(elementKindNames(), "quantized type");
  auto expressed =
      in.enumValue<ElementKind>(elementKindNames(), "quantized type");
  bool perAxis = in.flag("quantized type");
  int64_t axis = in.i64("quantized type");
  std::vector<float> scales = in.floats("scales");
  std::vector<int64_t> zeroPoints = in.ints("zero points");
  int64_t blockSize = version >= 10 ? in.i64("block size") : 0;
  if (in.failed)
    return nullptr;
  if (scales.empty() || scales.size() != zeroPoints.size() || axis < 0 ||
      axis > 64 || blockSize < 0 || (blockSize && !perAxis)) {
    fail("a quantized type's scales, zero points, axis or block size are "
         "malformed");
    return nullptr;
  }
  const QuantType *q = types.getQuantType(
      storage, expressed, perAxis ? std::optional<int64_t>(axis) : std::nullopt,
      scales, zeroPoints, blockSize);
  std::string problem = checkQuantType(q);
  if (!problem.empty()) {
    fail("a quantized type: " + problem);
    return nullptr;
  }
  return q;
}

bool PlanDecoder::tensor(PlanTensor &t) {
  in.beginRecord();
  t.name = in.string("tensor");
  t.kind = in.enumValue<ElementKind>(elementKindNames(), "tensor");
  t.layout = in.enumValue<PlanLayout>(layoutNames(), "tensor");
  t.shape = in.ints("tensor");
  t.arenaOffset = in.i64("tensor");
  if (!in.flag("tensor") || in.failed)
    return !in.failed;
  for (int64_t d : t.shape)
    if (d < 0)
      return fail("tensor '" + t.name + "' has a negative dimension");
  auto elements = shapeNumElements(t.shape);
  if (!elements)
    return fail("tensor '" + t.name + "' has too many elements");
  if (t.kind == ElementKind::String) {
    std::vector<std::string> values = in.strings("constant");
    if (in.failed || values.size() != size_t(*elements))
      return fail("constant '" + t.name + "' has the wrong number of strings");
    Tensor value(t.kind, t.shape);
    value.strings() = std::move(values);
    t.constant = std::make_shared<const Tensor>(std::move(value));
    return true;
  }
  llvm::StringRef bytes = in.blob("constant");
  auto size = DenseElements::byteSizeFor(t.kind, *elements);
  if (in.failed || t.kind == ElementKind::Unknown || !size ||
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

std::optional<Int8Conv> PlanDecoder::conv(const std::string &name) {
  Int8ConvShape s;
  for (int64_t *v :
       {&s.batch, &s.inH, &s.inW, &s.inC, &s.outC, &s.kernelH, &s.kernelW,
        &s.strideH, &s.strideW, &s.dilationH, &s.dilationW, &s.padTop,
        &s.padLeft, &s.padBottom, &s.padRight, &s.groups})
    *v = in.i64("conv geometry");
  if (version >= 2) {
    s.inputDilationH = in.i64("conv input dilation");
    s.inputDilationW = in.i64("conv input dilation");
  }
  llvm::StringRef weights = in.blob("conv weights");
  Int8Epilogue e;
  e.scale = in.floats("conv scales");
  e.bias = in.floats("conv biases");
  e.inputZero = in.i32("conv input zero point");
  e.activation = in.enumValue<Activation>(activationNames(), "activation");
  e.alpha = in.f32("activation");
  e.beta = in.f32("activation");
  e.hasResidual = in.flag("residual");
  e.residualAfterActivation = in.flag("residual");
  e.residualScale = in.f32("residual");
  e.residualZero = in.i32("residual");
  e.outputScale = in.f32("output grid");
  e.outputZero = in.i32("output grid");
  if (version >= 3) {
    e.weightZero = in.i32s("weight zero points");
    llvm::StringRef table = in.blob("conv output table");
    e.outputTable.assign(table.bytes_begin(), table.bytes_end());
  }
  if (version >= 4) {
    llvm::StringRef pairs = in.blob("conv pair table");
    e.pairTable.assign(pairs.bytes_begin(), pairs.bytes_end());
  }
  if (version >= 5 && in.flag("pair arithmetic"))
    e.pairArithmetic = requantizedAdd("pair arithmetic"); // checkParams
                                                          // checks it
  if (in.failed)
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

namespace {

/// What the table says of each kind: when files began to have it, how to
/// read its own fields.
struct StepKindInfo {
  llvm::StringRef description;
  uint32_t firstVersion;
  std::unique_ptr<PlanStep> (*read)(PlanDecoder &, Plan &, const std::string &);
};

const StepKindInfo &stepKindInfo(PlanStep::Kind kind) {
  static const StepKindInfo kinds[] = {
#define PLAN_STEP(KIND, CLASS, SPELLING, DESCRIPTION, VERSION)                 \
  {DESCRIPTION, VERSION, &read##CLASS},
#include "qopt/Plan/PlanSteps.def"
  };
  return kinds[size_t(kind)];
}

} // namespace

std::unique_ptr<PlanStep> PlanDecoder::step(Plan &plan) {
  in.beginRecord();
  auto kind = in.enumValue<PlanStep::Kind>(stepKindNames(), "step");
  std::string name = in.string("step");
  std::string op = in.string("step");
  std::vector<int> inputs = in.i32s("step");
  std::vector<int> outputs = in.i32s("step");
  if (in.failed)
    return nullptr;
  const StepKindInfo &info = stepKindInfo(kind);
  if (version < info.firstVersion) {
    llvm::StringRef what = info.description;
    fail(llvm::Twine(llvm::StringRef("aeiou").contains(what.front()) ? "an "
                                                                     : "a ") +
         what + " step in a version " + llvm::Twine(version) + " file");
    return nullptr;
  }
  std::unique_ptr<PlanStep> s = info.read(*this, plan, name);
  if (in.failed || !s)
    return nullptr;
  s->op = std::move(op);
  s->inputs = std::move(inputs);
  s->outputs = std::move(outputs);
  return s;
}

std::unique_ptr<Plan> PlanDecoder::plan() {
  auto plan = std::make_unique<Plan>();
  plan->isa = isa;
  plan->arenaBytes = in.u64("arena");
  plan->tensors.resize(in.count(27, "tensors"));
  for (PlanTensor &t : plan->tensors)
    if (!tensor(t))
      break;
  in.beginRecord();
  plan->inputs = in.i32s("inputs");
  plan->outputs = in.i32s("outputs");
  size_t steps = in.count(33, "steps");
  for (size_t i = 0; i < steps && !in.failed; ++i)
    if (auto s = step(*plan))
      plan->steps.push_back(std::move(s));
  if (in.failed)
    return nullptr;
  return plan;
}

std::unique_ptr<Plan> planfile::decodePlan(FieldSource &in, uint32_t version,
                                           Isa isa) {
  return PlanDecoder(in, version, isa).plan();
}

llvm::Expected<std::unique_ptr<Plan>> plan::readPlan(llvm::StringRef file,
                                                     Isa isa) {
  using namespace llvm::support;
  if (!isPlanFile(file))
    return planFileError("not a qopt plan (it does not start with " +
                         kPlanFileMagic + ")");
  if (file.size() < kHeaderBytes)
    return planFileError("truncated header");
  uint32_t version = endian::read32le(file.data() + 8);
  if (version < kOldestPlanFileVersion || version > kPlanFileVersion ||
      endian::read32le(file.data() + 12) != 0)
    return planFileError("format version " + llvm::Twine(version) +
                         "; this qopt reads versions " +
                         llvm::Twine(kOldestPlanFileVersion) + " to " +
                         llvm::Twine(kPlanFileVersion) + " (rebuild the plan)");
  uint64_t size = endian::read64le(file.data() + 16);
  if (size != file.size())
    return planFileError(
        llvm::Twine(size > file.size() ? "truncated" : "corrupt") +
        ": the header says " + llvm::Twine(size) + " bytes, the file has " +
        llvm::Twine(file.size()));
  if (endian::read64le(file.data() + 24) !=
      llvm::xxHash64(file.drop_front(kHeaderBytes)))
    return planFileError("checksum mismatch: the file is corrupt");

  BinarySource in(file);
  std::unique_ptr<Plan> plan = decodePlan(in, version, isa);
  if (plan && in.u32("end marker") != kEndMarker)
    in.fail("no end marker after the steps");
  if (!in.failed && !in.atEnd())
    in.fail("bytes after the end marker");
  if (in.failed)
    return planFileError(in.reason);
  if (auto err = verifyPlan(*plan))
    return planFileError(llvm::toString(std::move(err)));
  return std::move(plan);
}

llvm::Expected<std::unique_ptr<Plan>> plan::loadPlanFile(llvm::StringRef path,
                                                         Isa isa) {
  auto buffer = readFileWithinLimit(path);
  if (!buffer)
    return planFileError(llvm::toString(buffer.takeError()));
  return loadPlanBytes((*buffer)->getBuffer(), isa);
}

llvm::Expected<std::unique_ptr<Plan>> plan::loadPlanBytes(llvm::StringRef bytes,
                                                          Isa isa) {
  if (isPlanText(bytes))
    return parsePlanText(bytes, isa);
  return readPlan(bytes, isa);
}

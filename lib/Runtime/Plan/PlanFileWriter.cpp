//===- PlanFileWriter.cpp - A plan to .qplan bytes ------------------------===//
//
// Writes the layout of PlanFileFormat.h; PlanFileReader.cpp reads the same
// fields in the same order. Conv weights go out unpacked (OIHW), so the
// reader can pack them for whatever machine reads the file.
//
//===----------------------------------------------------------------------===//

#include "PlanFileFormat.h"
#include "qopt/Runtime/PlanFile.h"

#include "llvm/Support/Casting.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/xxhash.h"

#include <cstring>

using namespace qopt;
using namespace qopt::rt;
using namespace qopt::rt::planfile;

namespace {

class PlanFileWriter {
public:
  PlanFileWriter() : out(kHeaderBytes, '\0') {}

  llvm::Expected<std::string> write(const Plan &plan);

private:
  template <typename T> void scalar(T v) {
    char bytes[sizeof(T)];
    llvm::support::endian::write<T, llvm::support::little>(bytes, v);
    out.append(bytes, sizeof(T));
  }
  void u8(uint8_t v) { out.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { scalar(v); }
  void i32(int32_t v) { scalar(v); }
  void u64(uint64_t v) { scalar(v); }
  void i64(int64_t v) { scalar(v); }
  void f32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    u32(bits);
  }
  void string(llvm::StringRef s) {
    u64(s.size());
    out.append(s.data(), s.size());
  }
  void blob(const void *data, size_t size) {
    u64(size);
    out.append((kBlobAlignment - out.size() % kBlobAlignment) % kBlobAlignment,
               '\0');
    out.append(static_cast<const char *>(data), size);
  }
  void grid(const QuantizeGrid &g) {
    f32(g.scale);
    i32(g.zero);
    u8(g.isSigned);
    u8(g.flip);
  }
  void ints(llvm::ArrayRef<int64_t> v) {
    u64(v.size());
    for (int64_t x : v)
      i64(x);
  }
  void i32s(llvm::ArrayRef<int> v) {
    u64(v.size());
    for (int x : v)
      i32(x);
  }
  void floats(llvm::ArrayRef<float> v) {
    u64(v.size());
    for (float x : v)
      f32(x);
  }
  void strings(llvm::ArrayRef<std::string> v) {
    u64(v.size());
    for (const std::string &s : v)
      string(s);
  }

  void dense(const DenseElements &d);
  void attribute(const Attribute &a);
  void quantType(const QuantType *q);
  void tensor(const PlanTensor &t);
  llvm::Error step(const PlanStep &s);
  void conv(const Int8Conv &c);

  std::string out;
};

void PlanFileWriter::dense(const DenseElements &d) {
  u8(static_cast<uint8_t>(d.getKind()));
  ints(d.getDims());
  string(d.getName());
  if (d.getKind() == ElementKind::String)
    strings(d.getStrings());
  else
    blob(d.getRawBytes().data(), d.getRawBytes().size());
}

void PlanFileWriter::attribute(const Attribute &a) {
  const Attribute::Storage &s = a.get();
  u8(static_cast<uint8_t>(s.index()));
  switch (static_cast<AttrTag>(s.index())) {
  case AttrTag::Int:
    return i64(std::get<int64_t>(s));
  case AttrTag::Float:
    return f32(std::get<float>(s));
  case AttrTag::String:
    return string(std::get<std::string>(s));
  case AttrTag::Ints:
    return ints(std::get<std::vector<int64_t>>(s));
  case AttrTag::Floats:
    return floats(std::get<std::vector<float>>(s));
  case AttrTag::Strings:
    return strings(std::get<std::vector<std::string>>(s));
  case AttrTag::Tensor:
    return dense(*std::get<DenseElementsRef>(s));
  case AttrTag::Tensors: {
    const auto &list = std::get<std::vector<DenseElementsRef>>(s);
    u64(list.size());
    for (const DenseElementsRef &d : list)
      dense(*d);
    return;
  }
  case AttrTag::Opaque:
    string(std::get<OpaqueAttr>(s).kind);
    return string(std::get<OpaqueAttr>(s).bytes);
  case AttrTag::EmptyList:
    return u8(static_cast<uint8_t>(std::get<EmptyList>(s).kind));
  }
}

void PlanFileWriter::quantType(const QuantType *q) {
  u8(q != nullptr);
  if (!q)
    return;
  u8(static_cast<uint8_t>(q->getStorageKind()));
  u8(static_cast<uint8_t>(q->getExpressedKind()));
  u8(q->isPerAxis());
  i64(q->isPerAxis() ? q->getAxis() : 0);
  floats(q->getScales());
  ints(q->getZeroPoints());
}

void PlanFileWriter::tensor(const PlanTensor &t) {
  string(t.name);
  u8(static_cast<uint8_t>(t.kind));
  u8(static_cast<uint8_t>(t.layout));
  ints(t.shape);
  i64(t.arenaOffset);
  u8(t.constant != nullptr);
  if (!t.constant)
    return;
  if (t.kind == ElementKind::String)
    strings(t.constant->strings());
  else
    blob(t.constant->bytes(), t.constant->byteSize());
}

void PlanFileWriter::conv(const Int8Conv &c) {
  const Int8ConvShape &s = c.getShape();
  for (int64_t v :
       {s.batch, s.inH, s.inW, s.inC, s.outC, s.kernelH, s.kernelW, s.strideH,
        s.strideW, s.dilationH, s.dilationW, s.padTop, s.padLeft, s.padBottom,
        s.padRight, s.groups, s.inputDilationH, s.inputDilationW})
    i64(v);
  std::vector<int8_t> weights = c.getWeights();
  blob(weights.data(), weights.size());
  const Int8Epilogue &e = c.getEpilogue();
  floats(e.scale);
  floats(e.bias);
  i32(e.inputZero);
  u8(static_cast<uint8_t>(e.activation));
  f32(e.alpha);
  f32(e.beta);
  u8(e.hasResidual);
  u8(e.residualAfterActivation);
  f32(e.residualScale);
  i32(e.residualZero);
  f32(e.outputScale);
  i32(e.outputZero);
  i32s(e.weightZero);
  blob(e.outputTable.data(), e.outputTable.size());
  blob(e.pairTable.data(), e.pairTable.size());
  u8(e.pairArithmetic.has_value());
  if (const auto &add = e.pairArithmetic) {
    for (float v :
         {add->scaleV, add->scaleW, add->low, add->high, add->outputScale})
      f32(v);
    for (int32_t v : {add->zeroV, add->zeroW, add->outputZero})
      i32(v);
  }
}

llvm::Error PlanFileWriter::step(const PlanStep &s) {
  u8(static_cast<uint8_t>(s.getKind()));
  string(s.getName());
  string(s.op);
  i32s(s.inputs);
  i32s(s.outputs);
  if (const auto *c = llvm::dyn_cast<ConvStep>(&s)) {
    conv(c->getConv());
  } else if (const auto *g = llvm::dyn_cast<GemmStep>(&s)) {
    conv(g->getConv());
  } else if (const auto *r = llvm::dyn_cast<ReformatStep>(&s)) {
    ints(r->shape);
    for (int64_t v : {r->rowStride, r->columnOffset, r->firstRow, r->batchRows})
      i64(v);
  } else if (const auto *f = llvm::dyn_cast<FloatStep>(&s)) {
    const KernelOp &op = f->getOp();
    if (!KernelRegistry::get().lookup(op.op))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "float step '%s': op %s has no kernel a reader could find",
          s.getName().str().c_str(), op.op.c_str());
    i64(f->getOpset());
    string(op.op);
    string(op.description);
    u64(op.attributes.size());
    for (const NamedAttribute &a : op.attributes) {
      string(a.name);
      attribute(a.value);
    }
    u64(op.operandQuantTypes.size());
    for (const QuantType *q : op.operandQuantTypes)
      quantType(q);
    u64(op.resultQuantTypes.size());
    for (const QuantType *q : op.resultQuantTypes)
      quantType(q);
    u64(op.resultPresent.size());
    for (bool present : op.resultPresent)
      u8(present);
  } else if (const auto *t = llvm::dyn_cast<TableStep>(&s)) {
    u8(t->getArity());
    u8(t->getResultBytes());
    i64(t->getNumElements());
    blob(t->getTable().data(), t->getTable().size());
    const TableStep::Broadcast &b = t->getBroadcast();
    i32(b.operand);
    i64(b.inner);
    i64(b.count);
  } else if (const auto *p = llvm::dyn_cast<PoolStep>(&s)) {
    const PoolStep::Window &w = p->getWindow();
    for (int64_t v : {w.batch, w.channels, w.inH, w.inW, w.outH, w.outW,
                      w.kernelH, w.kernelW, w.strideH, w.strideW, w.dilationH,
                      w.dilationW, w.padTop, w.padLeft})
      i64(v);
    u8(p->isFloatPool());
  } else if (const auto *c = llvm::dyn_cast<ChannelCopyStep>(&s)) {
    i64(c->getNumTiles());
    u64(c->getPieces().size());
    for (const ChannelCopyStep::Piece &piece : c->getPieces()) {
      i32(piece.from);
      i32(piece.to);
      i64(piece.fromChannel);
      i64(piece.toChannel);
      i64(piece.channels);
      blob(piece.table.data(), piece.table.size());
      u8(piece.grid.has_value());
      if (piece.grid)
        grid(*piece.grid);
    }
  } else if (const auto *r = llvm::dyn_cast<ResizeStep>(&s)) {
    const ResizeStep::Geometry &g = r->getGeometry();
    for (int64_t v : {g.batch, g.channels, g.inH, g.inW, g.outH, g.outW})
      i64(v);
    ints(r->getSourceRows());
    ints(r->getSourceCols());
  } else if (const auto *q = llvm::dyn_cast<QuantizeStep>(&s)) {
    grid(q->getGrid());
    ints(q->getShape());
    u8(q->isToNhwc());
  }
  return llvm::Error::success();
}

llvm::Expected<std::string> PlanFileWriter::write(const Plan &plan) {
  u64(plan.arenaBytes);
  u64(plan.tensors.size());
  for (const PlanTensor &t : plan.tensors)
    tensor(t);
  i32s(plan.inputs);
  i32s(plan.outputs);
  u64(plan.steps.size());
  for (const auto &s : plan.steps)
    if (auto err = step(*s))
      return std::move(err);
  u32(kEndMarker);

  using namespace llvm::support;
  char *header = out.data();
  std::memcpy(header, kPlanFileMagic.data(), 8);
  endian::write32le(header + 8, kPlanFileVersion);
  endian::write32le(header + 12, 0);
  endian::write64le(header + 16, out.size());
  endian::write64le(header + 24, llvm::xxHash64(llvm::StringRef(out).drop_front(
                                     kHeaderBytes)));
  return std::move(out);
}

} // namespace

bool rt::isPlanFile(llvm::StringRef bytes) {
  return bytes.startswith(kPlanFileMagic);
}

llvm::Expected<std::string> rt::serializePlan(const Plan &plan) {
  return PlanFileWriter().write(plan);
}

//===- LowerDataSteps.cpp - Steps that keep int8 tensors in NHWC ----------===//
//
// Elementwise int8 ops become lookup tables over the stored bytes:
//
//   %y = q.add(%a, %b) : (tensor<..x!q.i8<sa:za>>, tensor<..x!q.u8<sb:zb>>)
//                          -> tensor<..x!q.i8<sy:zy>>
//     =>
//   table step  y[i] = T[a[i] * 256 + b[i]], where T holds what the
//               reference kernel of q.add returns for every pair of operand
//               values (so the step is bit-exact with the interpreter),
//               indexed and filled as the tensors are stored (s8 + 128 in
//               NHWC)
//
// Any op the op table marks Elementwise qualifies (q.add, q.mul,
// q.activation, q.requantize, q.dequantize to f32, Relu on int8, ...) when
// its one or two operands are int8 of the result's shape, or of two, one
// varies along one axis of the result at most (an SE block's per-channel
// scale, a mask along the width): the step reads that one in ONNX layout,
// element (i / inner) % count for the result's stored element i (pooling is
// LowerPool.cpp's). Concat and Split along the channels of NHWC
// tensors are channel copies, and q.concat a channel copy through one
// 256-entry requantize table per operand (built with its reference kernel).
// q.quantize of an f32 tensor on one grid is a quantize step, straight into
// NHWC for a 4-D result.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"

#include <limits>

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

namespace {

bool isPerAxis(const Value *v) {
  const QuantType *q = v->getType()->getQuantType();
  return q && q->isPerAxis();
}

/// The one axis of `full` along which `shape` (broadcast to it, aligned
/// right) has more than one element; -1 when it has one element; none when
/// it varies along several axes or does not broadcast.
std::optional<int64_t> broadcastAxis(const Shape &shape, const Shape &full) {
  if (shape.size() > full.size())
    return std::nullopt;
  int64_t axis = -1;
  size_t offset = full.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1)
      continue;
    if (shape[i] != full[offset + i] || axis >= 0)
      return std::nullopt;
    axis = int64_t(offset + i);
  }
  return axis;
}

/// Elements of `shape` stored in `layout` between steps along `axis`.
int64_t storedStride(const Shape &shape, int64_t axis, PlanLayout layout) {
  if (layout == PlanLayout::Nhwc) {
    // N, H, W, C in memory: C is innermost, then W, H, N.
    const int64_t order[4] = {0, 3, 1, 2}; // position of N, C, H, W
    int64_t stride = 1;
    for (int64_t d : {1, 3, 2, 0}) {
      if (order[d] == order[axis])
        return stride;
      stride *= shape[d];
    }
  }
  int64_t stride = 1;
  for (size_t d = size_t(axis) + 1; d < shape.size(); ++d)
    stride *= shape[d];
  return stride;
}

} // namespace

std::optional<Tensor> PlanBuilder::runReferenceKernel(const Node &n,
                                                      std::vector<Tensor> in) {
  KernelFn fn = KernelRegistry::get().lookup(n.getOp());
  if (!fn)
    return std::nullopt;
  KernelOp op = makeKernelOp(n);
  std::vector<const Tensor *> pointers;
  for (const Tensor &t : in)
    pointers.push_back(&t);
  KernelContext ctx(op, std::move(pointers), opset);
  if (auto err = fn(ctx)) {
    llvm::consumeError(std::move(err));
    return std::nullopt;
  }
  if (ctx.outputs.empty() || !ctx.outputs[0].isValid())
    return std::nullopt;
  return std::move(ctx.outputs[0]);
}

/// q.add `n` as RequantizedAdd's arithmetic on its bytes as stored in
/// `layout` (NHWC keeps s8 as u8 + 128), if it has that form: per-tensor
/// grids over f32 and an activation that clamps (none, relu, clip). The
/// caller checks it against the table.
static std::optional<RequantizedAdd> requantizedAddOf(const Node &n,
                                                      PlanLayout layout) {
  if (!n.isa(ops::QAdd) || n.getNumOperands() != 2)
    return std::nullopt;
  auto grid = [&](const Value *v) -> const QuantType * {
    const QuantType *q = v ? v->getType()->getQuantType() : nullptr;
    bool byte = q && (q->getStorageKind() == ElementKind::U8 ||
                      q->getStorageKind() == ElementKind::I8);
    return byte && !q->isPerAxis() && q->getExpressedKind() == ElementKind::F32
               ? q
               : nullptr;
  };
  auto stored = [&](const QuantType *q) {
    bool flipped =
        layout == PlanLayout::Nhwc && q->getStorageKind() == ElementKind::I8;
    return int32_t(q->getZeroPoint()) + (flipped ? 128 : 0);
  };
  const QuantType *v = grid(n.getOperand(0)), *w = grid(n.getOperand(1)),
                  *y = grid(n.getResult());
  if (!v || !w || !y)
    return std::nullopt;
  RequantizedAdd add;
  add.scaleV = v->getScale();
  add.zeroV = stored(v);
  add.scaleW = w->getScale();
  add.zeroW = stored(w);
  add.outputScale = y->getScale();
  add.outputZero = stored(y);
  add.low = -std::numeric_limits<float>::infinity();
  add.high = std::numeric_limits<float>::infinity();
  const Attribute *a = n.getAttr("activation");
  llvm::StringRef activation =
      a && a->isString() ? llvm::StringRef(*a->getIf<std::string>()) : "none";
  std::vector<float> params;
  if (const Attribute *p = n.getAttr("activation_params"))
    if (auto *values = p->getIf<std::vector<float>>())
      params = *values;
  if (activation == "relu") {
    add.low = 0;
  } else if (activation == "clip" && params.size() == 2) {
    add.low = params[0];
    add.high = params[1];
  } else if (activation != "none") {
    return std::nullopt;
  }
  return add;
}

llvm::Expected<bool> PlanBuilder::lowerTable(const Node &n) {
  if (!hasTrait(n, OpTrait::Elementwise) ||
      hasTrait(n, OpTrait::Nondeterministic) || n.getNumResults() != 1)
    return false;
  size_t arity = n.getNumOperands();
  const Value *y = n.getResult();
  ElementKind yKind = y->getType()->getStorageKind();
  if (arity < 1 || arity > 2 || isPerAxis(y) ||
      !(isByteInteger(yKind) || (arity == 1 && yKind == ElementKind::F32)))
    return false;
  auto yShape = staticShape(y);
  if (!yShape)
    return yShape.takeError();
  // Operands of the result's shape, or (of two) one that varies along one
  // axis of it at most: read along that axis as stored (ONNX layout).
  TableStep::Broadcast broadcast;
  int64_t axis = -1;
  for (size_t j = 0; j < arity; ++j) {
    const Value *v = n.getOperand(j);
    if (!v || isPerAxis(v) || !isByteInteger(v->getType()->getStorageKind()))
      return false;
    auto shape = staticShape(v);
    if (!shape)
      return shape.takeError();
    if (*shape == *yShape && !isConstant(v))
      continue;
    std::optional<int64_t> along = broadcastAxis(*shape, *yShape);
    if (arity != 2 || broadcast.operand >= 0 || !along)
      return false;
    broadcast.operand = int(j);
    axis = *along;
  }
  // NHWC when an operand of every element lives there.
  PlanLayout layout = PlanLayout::Onnx;
  for (size_t j = 0; j < arity; ++j)
    if (yShape->size() == 4 && int(j) != broadcast.operand &&
        homeLayout(n.getOperand(j)) == PlanLayout::Nhwc)
      layout = PlanLayout::Nhwc;
  if (broadcast.operand >= 0 && shapeNumElements(*yShape).value_or(0) == 0)
    return false; // nothing to read along
  if (broadcast.operand >= 0 && axis >= 0) {
    broadcast.inner = storedStride(*yShape, axis, layout);
    broadcast.count = (*yShape)[axis];
  }
  // What a byte is XORed with as stored in `layout` (the broadcast
  // operand stays in ONNX layout, as it is).
  auto flipOf = [&](ElementKind kind, bool inLayout = true) -> uint8_t {
    return inLayout && layout == PlanLayout::Nhwc && kind == ElementKind::I8
               ? 0x80
               : 0;
  };

  // Every combination of stored operand bytes, through the reference
  // kernel (entry i has operand 0's byte in its high bits). A kernel that
  // refuses them leaves the node to its float step.
  int64_t entries = int64_t(1) << (8 * arity);
  std::vector<Tensor> operands;
  for (size_t j = 0; j < arity; ++j) {
    ElementKind kind = n.getOperand(j)->getType()->getStorageKind();
    Tensor values(kind, {entries});
    int shift = 8 * int(arity - 1 - j);
    for (int64_t i = 0; i < entries; ++i)
      values.bytes()[i] = static_cast<char>(
          ((i >> shift) & 0xff) ^ flipOf(kind, int(j) != broadcast.operand));
    operands.push_back(std::move(values));
  }
  std::optional<Tensor> result = runReferenceKernel(n, std::move(operands));
  if (!result || result->kind() != yKind || result->numElements() != entries)
    return false;
  const Tensor &values = *result;

  std::vector<int> inputs;
  for (size_t j = 0; j < arity; ++j) {
    auto id =
        tensorFor(n.getOperand(j),
                  int(j) == broadcast.operand ? PlanLayout::Onnx : layout);
    if (!id)
      return id.takeError();
    inputs.push_back(*id);
  }
  auto yId = defineResult(y, layout, yKind);
  if (!yId)
    return yId.takeError();
  int resultBytes = static_cast<int>(getElementByteSize(yKind));
  std::vector<uint8_t> table(values.byteSize());
  std::memcpy(table.data(), values.bytes(), table.size());
  if (uint8_t flip = flipOf(yKind))
    for (uint8_t &b : table)
      b ^= flip;
  auto step = std::make_unique<TableStep>(
      n.getName().str(), int(arity), resultBytes, std::move(table),
      plan.tensors[*yId].numElements(), broadcast);
  if (broadcast.operand < 0 && resultBytes == 1) {
    std::optional<RequantizedAdd> add = requantizedAddOf(n, layout);
    if (add && add->reproduces(step->getTable()))
      step->setArithmetic(*add);
  }
  addStep(std::move(step), n, std::move(inputs), {*yId});
  return true;
}

llvm::Expected<bool> PlanBuilder::lowerChannelCopy(const Node &n) {
  // q.concat requantizes each operand onto the result's grid on the way.
  bool requantizes = n.isa(ops::QConcat);
  bool isConcat = requantizes || n.isa(ops::Concat);
  // Concat's data operands, or Split's input (its `split` operand is read
  // off the result shapes).
  std::vector<const Value *> sources =
      isConcat ? std::vector<const Value *>(n.getOperands().begin(),
                                            n.getOperands().end())
               : std::vector<const Value *>{n.getOperand(0)};
  std::vector<Value *> results = n.getResults();
  std::vector<const Value *> sinks(results.begin(), results.end());
  const Value *whole = isConcat ? sinks.front() : sources.front();
  if (!whole || (isConcat && sinks.size() != 1))
    return false;
  ElementKind kind = whole->getType()->getStorageKind();
  size_t size = getElementByteSize(kind);
  int64_t axis = n.getIntAttr("axis").value_or(0);
  auto wholeShape = staticShape(whole);
  if (!wholeShape)
    return wholeShape.takeError();
  bool alongChannels = wholeShape->size() == 4 && (axis == 1 || axis == -3);
  if (requantizes && !alongChannels)
    return lowerConcatInOnnxLayout(n);
  if ((size != 1 && size != 4) || !alongChannels)
    return isConcat ? lowerConcatInOnnxLayout(n) : false;
  bool anyNhwc = false;
  std::vector<int64_t> channels;
  if (requantizes && (!isByteInteger(kind) || isPerAxis(whole)))
    return false;
  for (const Value *v : isConcat ? sources : sinks) {
    if (!v || v->isAbsent() || (isConcat && isConstant(v)))
      return false;
    ElementKind vKind = v->getType()->getStorageKind();
    if (requantizes ? !isByteInteger(vKind) || isPerAxis(v) : vKind != kind)
      return false;
    auto shape = staticShape(v);
    if (!shape)
      return shape.takeError();
    Shape expected = *wholeShape;
    expected[1] = shape->size() == 4 ? (*shape)[1] : -1;
    if (*shape != expected)
      return false;
    channels.push_back((*shape)[1]);
    anyNhwc |= isConcat && homeLayout(v) == PlanLayout::Nhwc;
  }
  if (!isConcat)
    anyNhwc = homeLayout(whole) == PlanLayout::Nhwc && !isConstant(whole);
  // Int8 tensors go NHWC for requantizing; a concat of tensors that live in
  // ONNX layout stays there.
  if (!anyNhwc && !requantizes)
    return isConcat ? lowerConcatInOnnxLayout(n) : false;
  std::vector<std::vector<uint8_t>> tables;
  if (requantizes) {
    auto made = requantizeTables(n, sources, whole, 4, 1, PlanLayout::Nhwc);
    if (!made)
      return false;
    tables = std::move(*made);
  }

  std::vector<int> inputs, outputs;
  for (const Value *v : sources) {
    auto id = tensorFor(v, PlanLayout::Nhwc);
    if (!id)
      return id.takeError();
    inputs.push_back(*id);
  }
  for (const Value *v : sinks) {
    auto id = defineResult(v, PlanLayout::Nhwc, kind);
    if (!id)
      return id.takeError();
    outputs.push_back(*id);
  }
  std::vector<ChannelCopyStep::Piece> pieces;
  int64_t offset = 0;
  for (size_t i = 0; i < channels.size(); ++i) {
    if (isConcat)
      pieces.push_back(
          {inputs[i], outputs[0], 0, offset, channels[i],
           requantizes ? std::move(tables[i]) : std::vector<uint8_t>()});
    else
      pieces.push_back({inputs[0], outputs[i], offset, 0, channels[i], {}});
    offset += channels[i];
  }
  if (offset != (*wholeShape)[1])
    return makeError("the channel counts add up to " + llvm::Twine(offset) +
                     ", not " + llvm::Twine((*wholeShape)[1]));
  int64_t rows = (*wholeShape)[0] * (*wholeShape)[2];
  addStep(std::make_unique<ChannelCopyStep>(n.getName().str(),
                                            std::move(pieces), rows),
          n, std::move(inputs), std::move(outputs));
  return true;
}

/// The input channel of each result channel of a Slice or Gather along the
/// channels (axis 1) of a 4-D tensor of `channels` channels, all else
/// kept; none for any other form.
static std::optional<std::vector<int64_t>> selectedChannels(const Node &n,
                                                            int64_t channels) {
  auto operand = [&](unsigned i) {
    return i < n.getNumOperands() ? n.getOperand(i) : nullptr;
  };
  auto axisIsChannels = [](int64_t axis) { return axis == 1 || axis == -3; };
  std::vector<int64_t> picked;
  if (n.isa(ops::Gather)) {
    auto indices = getConstantInts(operand(1));
    if (!indices || operand(1)->getType()->getRank() != 1 ||
        !axisIsChannels(n.getIntAttr("axis").value_or(0)))
      return std::nullopt;
    for (int64_t i : *indices) {
      if (i < -channels || i >= channels)
        return std::nullopt; // the kernel says why
      picked.push_back(i < 0 ? i + channels : i);
    }
    return picked;
  }
  // Slice (operand form, as the IR spells it): one axis, step 1.
  auto starts = getConstantInts(operand(1)), ends = getConstantInts(operand(2));
  auto axes =
      operand(3) ? getConstantInts(operand(3)) : std::vector<int64_t>{0};
  auto steps =
      operand(4) ? getConstantInts(operand(4)) : std::vector<int64_t>{1};
  if (!starts || !ends || !axes || !steps || starts->size() != 1 ||
      ends->size() != 1 || axes->size() != 1 || steps->size() != 1 ||
      !axisIsChannels((*axes)[0]) || (*steps)[0] != 1)
    return std::nullopt;
  auto clampIndex = [&](int64_t i) {
    if (i < 0)
      i += channels;
    return std::clamp<int64_t>(i, 0, channels);
  };
  int64_t first = clampIndex((*starts)[0]), last = clampIndex((*ends)[0]);
  for (int64_t c = first; c < last; ++c)
    picked.push_back(c);
  return picked;
}

llvm::Expected<bool> PlanBuilder::lowerChannelSelect(const Node &n) {
  // A Slice or Gather picking channels of an NHWC tensor: its result is
  // NHWC too, each run of consecutive channels one piece of a copy.
  const Value *x = n.getOperand(0);
  const Value *y = n.getNumResults() == 1 ? n.getResult() : nullptr;
  if (!x || !y || isConstant(x) || homeLayout(x) != PlanLayout::Nhwc ||
      isPerAxis(x) || isPerAxis(y))
    return false;
  ElementKind kind = x->getType()->getStorageKind();
  size_t size = getElementByteSize(kind);
  // A copy keeps the stored values: one grid (or none) on both sides.
  if ((size != 1 && size != 4) || y->getType()->getStorageKind() != kind ||
      x->getType()->getQuantType() != y->getType()->getQuantType())
    return false;
  auto xShape = staticShape(x);
  if (!xShape)
    return xShape.takeError();
  auto yShape = staticShape(y);
  if (!yShape)
    return yShape.takeError();
  if (xShape->size() != 4)
    return false;
  auto picked = selectedChannels(n, (*xShape)[1]);
  if (!picked || picked->empty())
    return false;
  Shape expected = *xShape;
  expected[1] = int64_t(picked->size());
  if (*yShape != expected)
    return false;
  auto xId = tensorFor(x, PlanLayout::Nhwc);
  if (!xId)
    return xId.takeError();
  auto yId = defineResult(y, PlanLayout::Nhwc, kind);
  if (!yId)
    return yId.takeError();
  std::vector<ChannelCopyStep::Piece> pieces;
  for (size_t i = 0; i < picked->size(); ++i) {
    int64_t from = (*picked)[i];
    ChannelCopyStep::Piece *last = pieces.empty() ? nullptr : &pieces.back();
    if (last && last->fromChannel + last->channels == from)
      ++last->channels;
    else
      pieces.push_back({*xId, *yId, from, int64_t(i), 1, {}});
  }
  int64_t rows = (*xShape)[0] * (*xShape)[2];
  addStep(std::make_unique<ChannelCopyStep>(n.getName().str(),
                                            std::move(pieces), rows),
          n, {*xId}, {*yId});
  return true;
}

llvm::Expected<bool> PlanBuilder::lowerConcatInOnnxLayout(const Node &n) {
  // Each index before the axis is a row; operand i's row (its elements
  // from the axis on) goes (through its table, for q.concat) into the
  // result's row at the sum of the spans before it.
  bool requantizes = n.isa(ops::QConcat);
  const Value *whole = n.getNumResults() == 1 ? n.getResult() : nullptr;
  if (!whole)
    return false;
  ElementKind kind = whole->getType()->getStorageKind();
  // A plain Concat copies any fixed-size element; q.concat int8 bytes.
  if (requantizes
          ? !isByteInteger(kind) || isPerAxis(whole)
          : getElementByteSize(kind) == 0 || kind == ElementKind::String)
    return false;
  auto wholeShape = staticShape(whole);
  if (!wholeShape)
    return wholeShape.takeError();
  int64_t rank = wholeShape->size();
  int64_t axis = n.getIntAttr("axis").value_or(0);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return false;
  int64_t rows = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? rows : inner) *= d == axis ? 1 : (*wholeShape)[d];
  if (rows == 0 || inner == 0)
    return false;
  std::vector<const Value *> sources(n.getOperands().begin(),
                                     n.getOperands().end());
  std::vector<int64_t> spans;
  for (const Value *v : sources) {
    if (!v || v->isAbsent() || isConstant(v))
      return false;
    ElementKind vKind = v->getType()->getStorageKind();
    if (requantizes ? !isByteInteger(vKind) || isPerAxis(v) : vKind != kind)
      return false;
    auto shape = staticShape(v);
    if (!shape)
      return shape.takeError();
    Shape expected = *wholeShape;
    expected[axis] = int64_t(shape->size()) == rank ? (*shape)[axis] : -1;
    if (*shape != expected)
      return false;
    spans.push_back((*shape)[axis] * inner);
  }
  std::vector<std::vector<uint8_t>> tables(sources.size());
  if (requantizes) {
    auto made =
        requantizeTables(n, sources, whole, rank, axis, PlanLayout::Onnx);
    if (!made)
      return false;
    tables = std::move(*made);
  }

  std::vector<int> inputs;
  for (const Value *v : sources) {
    auto id = tensorFor(v, PlanLayout::Onnx);
    if (!id)
      return id.takeError();
    inputs.push_back(*id);
  }
  auto output = defineResult(whole, PlanLayout::Onnx, kind);
  if (!output)
    return output.takeError();
  std::vector<ChannelCopyStep::Piece> pieces;
  int64_t offset = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    pieces.push_back(
        {inputs[i], *output, 0, offset, spans[i], std::move(tables[i])});
    offset += spans[i];
  }
  if (offset != (*wholeShape)[axis] * inner)
    return makeError("the operands' extents along axis " + llvm::Twine(axis) +
                     " add up to " + llvm::Twine(offset / inner) + ", not " +
                     llvm::Twine((*wholeShape)[axis]));
  addStep(std::make_unique<ChannelCopyStep>(n.getName().str(),
                                            std::move(pieces), rows),
          n, std::move(inputs), {*output});
  return true;
}

llvm::Expected<bool> PlanBuilder::lowerReshape(const Node &n) {
  // The elements in ONNX layout keep their order: one copy, in rows of the
  // result's trailing dims (1,024 elements or more each, but all of a
  // smaller tensor) so that threads share it.
  const Value *x = n.getNumOperands() > 0 ? n.getOperand(0) : nullptr;
  const Value *y = n.getNumResults() == 1 ? n.getResult() : nullptr;
  if (!x || !y || isConstant(x))
    return false;
  ElementKind kind = y->getType()->getStorageKind();
  if (x->getType()->getStorageKind() != kind || getElementByteSize(kind) == 0 ||
      kind == ElementKind::String)
    return false;
  auto xShape = staticShape(x);
  if (!xShape)
    return xShape.takeError();
  auto yShape = staticShape(y);
  if (!yShape)
    return yShape.takeError();
  std::optional<int64_t> elements = shapeNumElements(*yShape);
  if (!elements || *elements == 0 || shapeNumElements(*xShape) != elements)
    return false;
  int64_t inner = 1;
  for (size_t d = yShape->size(); d-- > 0 && inner < 1024;)
    inner *= (*yShape)[d];
  int64_t rows = *elements / inner;
  auto xId = tensorFor(x, PlanLayout::Onnx);
  if (!xId)
    return xId.takeError();
  auto yId = defineResult(y, PlanLayout::Onnx, kind);
  if (!yId)
    return yId.takeError();
  std::vector<ChannelCopyStep::Piece> pieces{
      {*xId, *yId, 0, 0, *elements / rows, {}}};
  addStep(std::make_unique<ChannelCopyStep>(n.getName().str(),
                                            std::move(pieces), rows),
          n, {*xId}, {*yId});
  return true;
}

llvm::Expected<bool> PlanBuilder::lowerQuantize(const Node &n) {
  const Value *x = n.getOperand(0);
  const Value *y = n.getResult();
  const QuantType *q = y->getType()->getQuantType();
  if (!x || isConstant(x) ||
      x->getType()->getStorageKind() != ElementKind::F32 || !q ||
      q->isPerAxis() || !isByteInteger(q->getStorageKind()))
    return false;
  auto shape = staticShape(y);
  if (!shape)
    return shape.takeError();
  // Int8 tensors live in NHWC: quantize an NCHW input straight into it.
  PlanLayout xLayout = homeLayout(x);
  PlanLayout yLayout = shape->size() == 4 ? PlanLayout::Nhwc : PlanLayout::Onnx;
  return addStepFor(n, {{x, xLayout}}, y, yLayout, q->getStorageKind(),
                    [&](const PlanTensor &result) {
                      return std::make_unique<QuantizeStep>(
                          n.getName().str(), plan.isa,
                          getQuantizeGrid(*q, result.getStoredFlip()), *shape,
                          xLayout != yLayout);
                    });
}

std::optional<std::vector<std::vector<uint8_t>>> PlanBuilder::requantizeTables(
    const Node &n, llvm::ArrayRef<const Value *> sources, const Value *whole,
    int64_t rank, int64_t axis, PlanLayout layout) {
  // The reference kernel on operands of 256 along the axis and 1 elsewhere
  // ([1, 256, 1, 1] for channels), holding every stored byte (NHWC: s8 +
  // 128): operand j's table is the result's elements [256 j, 256 j + 256),
  // as stored. A table that maps every byte to itself is left empty: a
  // plain copy.
  Shape operandShape(rank, 1);
  operandShape[axis] = 256;
  auto storedFlip = [&](const Value *v) -> uint8_t {
    return layout == PlanLayout::Nhwc &&
                   v->getType()->getStorageKind() == ElementKind::I8
               ? 0x80
               : 0;
  };
  std::vector<Tensor> operands;
  for (const Value *v : sources) {
    Tensor bytes(v->getType()->getStorageKind(), operandShape);
    for (int b = 0; b < 256; ++b)
      bytes.bytes()[b] = static_cast<char>(b ^ storedFlip(v));
    operands.push_back(std::move(bytes));
  }
  std::optional<Tensor> result = runReferenceKernel(n, std::move(operands));
  int64_t entries = 256 * int64_t(sources.size());
  if (!result || result->kind() != whole->getType()->getStorageKind() ||
      result->numElements() != entries)
    return std::nullopt;
  std::vector<std::vector<uint8_t>> tables;
  for (size_t j = 0; j < sources.size(); ++j) {
    std::vector<uint8_t> table(256);
    bool identity = true;
    for (int b = 0; b < 256; ++b) {
      table[b] = static_cast<uint8_t>(result->bytes()[j * 256 + b]) ^
                 storedFlip(whole);
      identity &= table[b] == b;
    }
    tables.push_back(identity ? std::vector<uint8_t>() : std::move(table));
  }
  return tables;
}

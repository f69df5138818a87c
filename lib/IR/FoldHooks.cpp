//===- FoldHooks.cpp - The op table's fold hooks --------------------------===//
//
// One function per kind of op named by FOLD(...) in Ops.def: constants,
// shapes and data movement here, arithmetic, logic and Cast in
// FoldArithmetic.cpp, the helpers they share in FoldSupport.h. Each computes
// what ONNX defines for constant operands, in the op's element type, or
// returns false. Result shapes come from the node's inferred result type
// (inference ran on the same constants), so the hooks only move and compute
// elements. Arithmetic folds integers exactly (declining on overflow) and
// f32/f64 in double, rounded once to the result type: for +, -, *, / of
// float operands that is the float operation's result bit for bit.
//
//===----------------------------------------------------------------------===//

#include "FoldSupport.h"
#include "OpImpl.h"
#include "qopt/IR/ConstantFolding.h"
#include "qopt/IR/QuantMath.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace qopt;
using namespace qopt::opimpl;
using namespace qopt::opimpl::fold;

namespace qopt {
namespace opimpl {
namespace fold {

int64_t numElementsOf(llvm::ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(n, d, &n))
      return -1;
  return n;
}

std::vector<int64_t> rowMajorStrides(llvm::ArrayRef<int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return strides;
}

/// For each element of a tensor of `outDims`, the flat index of the element
/// of an operand of `inDims` that broadcasting (numpy rules, right-aligned)
/// reads. Empty when the operand does not broadcast to `outDims`.
std::optional<std::vector<int64_t>>
broadcastIndices(llvm::ArrayRef<int64_t> inDims,
                 llvm::ArrayRef<int64_t> outDims) {
  if (inDims.size() > outDims.size())
    return std::nullopt;
  size_t lead = outDims.size() - inDims.size();
  std::vector<int64_t> inStrides = rowMajorStrides(inDims);
  std::vector<int64_t> strides(outDims.size(), 0);
  for (size_t i = 0; i < inDims.size(); ++i) {
    if (inDims[i] == outDims[lead + i])
      strides[lead + i] = inStrides[i];
    else if (inDims[i] != 1)
      return std::nullopt;
  }
  int64_t count = numElementsOf(outDims);
  std::vector<int64_t> indices;
  indices.reserve(count);
  std::vector<int64_t> coord(outDims.size(), 0);
  int64_t flat = 0;
  for (int64_t e = 0; e < count; ++e) {
    indices.push_back(flat);
    for (size_t a = outDims.size(); a-- > 0;) {
      flat += strides[a];
      if (++coord[a] < outDims[a])
        break;
      flat -= strides[a] * coord[a];
      coord[a] = 0;
    }
  }
  return indices;
}

/// A tensor of `dims` whose element e is element indices[e] of `src`, any
/// kind but strings.
DenseElementsRef gatherElements(const DenseElements &src,
                                llvm::ArrayRef<int64_t> dims,
                                llvm::ArrayRef<int64_t> indices) {
  size_t size = *DenseElements::byteSizeFor(src.getKind(), 1);
  llvm::StringRef in = src.getRawBytes();
  std::string bytes(indices.size() * size, '\0');
  for (size_t e = 0; e < indices.size(); ++e)
    std::memcpy(&bytes[e * size], in.data() + indices[e] * size, size);
  return std::make_shared<DenseElements>(
      src.getKind(), std::vector<int64_t>(dims.begin(), dims.end()),
      std::move(bytes));
}

/// Data the hooks compute on: numbers that getAsInt/getAsDouble read as
/// they are (u64 past 2^63 would read negative: not folded).
bool isPlainData(const DenseElements *d) {
  return d && d->getKind() != ElementKind::String &&
         d->getKind() != ElementKind::Unknown &&
         d->getKind() != ElementKind::U64;
}

/// Every operand present is a constant of plain data.
bool allOperandsPlain(const FoldContext &ctx) {
  for (unsigned i = 0; i < ctx.getNumOperands(); ++i)
    if (ctx.getOperandType(i) && !isPlainData(ctx.getOperand(i)))
      return false;
  return true;
}

int64_t wrapAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// The integer value of `v` in `kind`, if it is one.
bool fitsKind(int64_t v, ElementKind kind) {
  switch (kind) {
  case ElementKind::I4:
  case ElementKind::U4:
    return v >= getIntegerRange(kind).first &&
           v <= getIntegerRange(kind).second;
  case ElementKind::I8:
    return v >= INT8_MIN && v <= INT8_MAX;
  case ElementKind::U8:
    return v >= 0 && v <= UINT8_MAX;
  case ElementKind::I16:
    return v >= INT16_MIN && v <= INT16_MAX;
  case ElementKind::U16:
    return v >= 0 && v <= UINT16_MAX;
  case ElementKind::I32:
    return v >= INT32_MIN && v <= INT32_MAX;
  case ElementKind::U32:
    return v >= 0 && v <= UINT32_MAX;
  case ElementKind::I64:
    return true;
  case ElementKind::Bool:
    return v == 0 || v == 1;
  default:
    return false; // u64 past int64 and the rest: not folded
  }
}

bool isIntegral(ElementKind k) {
  return k == ElementKind::Bool || isIntegerKind(k);
}
bool isFoldableFloat(ElementKind k) {
  return k == ElementKind::F32 || k == ElementKind::F64;
}

/// Integer results; false when one does not fit `kind`.
bool setIntResult(FoldContext &ctx, ElementKind kind,
                  llvm::ArrayRef<int64_t> dims,
                  llvm::ArrayRef<int64_t> values) {
  for (int64_t v : values)
    if (!fitsKind(v, kind))
      return false;
  ctx.results.push_back(quant::makeDenseInt(kind, dims, values));
  return true;
}

} // namespace fold
} // namespace opimpl
} // namespace qopt

//===----------------------------------------------------------------------===//
// Constants and shapes
//===----------------------------------------------------------------------===//

bool opimpl::foldConstantAttr(FoldContext &ctx) {
  const Node &n = ctx.node;
  if (const Attribute *a = n.getAttr("value_float")) {
    if (const float *f = a->getIf<float>()) {
      ctx.results.push_back(quant::makeDenseF32({}, {*f}));
      return true;
    }
  } else if (const Attribute *a = n.getAttr("value_floats")) {
    if (const auto *v = a->getIf<std::vector<float>>()) {
      if (!ctx.fits(v->size()))
        return false;
      ctx.results.push_back(quant::makeDenseF32({int64_t(v->size())}, *v));
      return true;
    }
  } else if (const Attribute *a = n.getAttr("value_int")) {
    if (const int64_t *i = a->getIf<int64_t>()) {
      ctx.results.push_back(quant::makeDenseInt(ElementKind::I64, {}, {*i}));
      return true;
    }
  } else if (const Attribute *a = n.getAttr("value_ints")) {
    if (a->getIf<std::vector<int64_t>>() || a->getIf<EmptyList>()) {
      std::vector<int64_t> v = a->getInts();
      if (!ctx.fits(v.size()))
        return false;
      ctx.results.push_back(
          quant::makeDenseInt(ElementKind::I64, {int64_t(v.size())}, v));
      return true;
    }
  }
  return false;
}

bool opimpl::foldShape(FoldContext &ctx) {
  const TensorType *t = ctx.getOperandType(0);
  if (!t || !t->hasRank() || !t->hasStaticShape())
    return false;
  auto dims = ctx.getResultDims();
  if (!dims || dims->size() != 1)
    return false;
  int64_t rank = t->getShape().size();
  auto clamp = [&](int64_t v) {
    v = wrapAxis(v, rank);
    return std::min(std::max<int64_t>(v, 0), rank);
  };
  int64_t start = clamp(getIntAttrOr(ctx.node, "start", 0));
  int64_t end = ctx.node.getAttr("end")
                    ? clamp(getIntAttrOr(ctx.node, "end", rank))
                    : rank;
  std::vector<int64_t> values;
  for (int64_t a = start; a < end; ++a)
    values.push_back(t->getShape()[a].size);
  if (int64_t(values.size()) != (*dims)[0])
    return false;
  ctx.results.push_back(
      quant::makeDenseInt(ElementKind::I64, {int64_t(values.size())}, values));
  return true;
}

bool opimpl::foldSize(FoldContext &ctx) {
  const TensorType *t = ctx.getOperandType(0);
  if (!t || !t->hasRank() || !t->hasStaticShape())
    return false;
  auto count = t->getNumElements();
  if (!count)
    return false;
  ctx.results.push_back(quant::makeDenseInt(ElementKind::I64, {}, {*count}));
  return true;
}

bool opimpl::foldConstantOfShape(FoldContext &ctx) {
  auto dims = ctx.getResultDims();
  if (!dims || !ctx.getOperand(0) || !ctx.fits(numElementsOf(*dims)))
    return false;
  DenseElementsRef fill = quant::makeDenseF32({1}, {0.0f});
  if (const Attribute *a = ctx.node.getAttr("value")) {
    const DenseElementsRef *d = a->getIf<DenseElementsRef>();
    if (!d || (*d)->getNumElements() != 1 || !isPlainData(d->get()))
      return false;
    fill = *d;
  }
  std::vector<int64_t> zeros(numElementsOf(*dims), 0);
  ctx.results.push_back(gatherElements(*fill, *dims, zeros));
  return true;
}

bool opimpl::foldRange(FoldContext &ctx) {
  const DenseElements *start = ctx.getOperand(0), *limit = ctx.getOperand(1),
                      *delta = ctx.getOperand(2);
  auto dims = ctx.getResultDims();
  if (!start || !limit || !delta || !dims || dims->size() != 1 ||
      !isIntegerKind(start->getKind()) || start->getNumElements() != 1 ||
      limit->getNumElements() != 1 || delta->getNumElements() != 1)
    return false;
  // Integers only: float ranges accumulate rounding the way the runtime
  // happens to add, which the hook would have to copy.
  int64_t s = start->getAsInt(0), l = limit->getAsInt(0),
          d = delta->getAsInt(0);
  // max(ceil((limit - start) / delta), 0), without overflow.
  if (d == 0 || (l > s) != (d > 0) || l == s)
    return false;
  __int128 span = __int128(l) - s;
  __int128 count128 = (span + d + (d > 0 ? -1 : 1)) / d;
  int64_t count = static_cast<int64_t>(count128);
  if (count != (*dims)[0] || !ctx.fits(count))
    return false;
  std::vector<int64_t> values;
  values.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t v;
    if (__builtin_mul_overflow(i, d, &v) || __builtin_add_overflow(s, v, &v))
      return false;
    values.push_back(v);
  }
  return setIntResult(ctx, start->getKind(), *dims, values);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

bool opimpl::foldQuantize(FoldContext &ctx) {
  const DenseElements *in = ctx.getOperand(0);
  const QuantType *q = ctx.node.getResult()->getType()->getQuantType();
  if (!ctx.options.foldQdq || !in || !q || !isFoldableFloat(in->getKind()) ||
      !ctx.fits(in->getNumElements()))
    return false;
  // The interpreter's and ONNX Runtime's QuantizeLinear: x / scale rounded
  // half to even in float, plus zp, saturated.
  auto values =
      quant::quantizeDense(*in, q, getIntAttrOr(ctx.node, "saturate", 1) != 0);
  if (!values) {
    llvm::consumeError(values.takeError());
    return false;
  }
  ctx.results.push_back(std::move(*values));
  return true;
}

bool opimpl::foldDequantize(FoldContext &ctx) {
  const DenseElements *in = ctx.getOperand(0);
  const TensorType *type = ctx.getOperandType(0);
  const QuantType *q = type ? type->getQuantType() : nullptr;
  ElementKind kind = ctx.getResultKind();
  if (!ctx.options.foldQdq || !in || !q || !isFoldableFloat(kind) ||
      !ctx.fits(in->getNumElements()) ||
      (ctx.options.keepDequantize && ctx.options.keepDequantize(ctx.node)))
    return false;
  // The interpreter's and ONNX Runtime's DequantizeLinear: (x - zp) * scale
  // in float.
  auto values = quant::dequantizeDense(*in, q, kind);
  if (!values) {
    llvm::consumeError(values.takeError());
    return false;
  }
  ctx.results.push_back(std::move(*values));
  return true;
}

bool opimpl::foldFloat8Dequantize(FoldContext &ctx) {
  // The DequantizeLinear of a constant float8 tensor (a weight in NVIDIA
  // Model Optimizer's FP8 form; integer ones import as q.dequantize):
  // (float(x) - float(zero point)) * scale in float32, as the interpreter
  // computes it, per tensor, per axis or block-wise.
  const DenseElements *x = ctx.getOperand(0), *scale = ctx.getOperand(1);
  bool zeroGiven = ctx.getNumOperands() > 2 && ctx.getOperandType(2);
  const DenseElements *zero = zeroGiven ? ctx.getOperand(2) : nullptr;
  if (!ctx.options.foldQdq || !x || !scale || (zeroGiven && !zero) ||
      !isMinifloatKind(x->getKind()) ||
      ctx.getResultKind() != ElementKind::F32 ||
      scale->getKind() != ElementKind::F32 ||
      (zero && zero->getKind() != x->getKind()) ||
      !ctx.fits(x->getNumElements()))
    return false;
  llvm::ArrayRef<int64_t> dims = x->getDims();
  int64_t rank = int64_t(dims.size());
  int64_t block = getIntAttrOr(ctx.node, "block_size", 0);
  int64_t axis = -1, parameters = 1;
  if (block > 0 || scale->getDims().size() == 1) {
    axis = wrapAxis(getIntAttrOr(ctx.node, "axis", 1), rank);
    if (axis < 0 || axis >= rank || block < 0)
      return false;
    for (int64_t d = 0; d < rank; ++d)
      parameters *= d != axis ? (block > 0 ? dims[d] : 1)
                              : (block > 0 ? quant::blocksAlong(dims[d], block)
                                           : dims[d]);
  }
  if (scale->getNumElements() != parameters ||
      (zero && zero->getNumElements() != parameters))
    return false;
  quant::ChannelIndexer channel(dims, axis, block);
  int64_t n = x->getNumElements();
  std::string bytes(size_t(n) * sizeof(float), '\0');
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = channel(i);
    float z = zero ? static_cast<float>(zero->getAsDouble(c)) : 0.0f;
    float v = (static_cast<float>(x->getAsDouble(i)) - z) *
              static_cast<float>(scale->getAsDouble(c));
    std::memcpy(&bytes[size_t(i) * sizeof(float)], &v, sizeof v);
  }
  ctx.results.push_back(std::make_shared<const DenseElements>(
      ElementKind::F32, std::vector<int64_t>(dims.begin(), dims.end()),
      std::move(bytes), x->getName().str()));
  return true;
}

bool opimpl::foldIdentity(FoldContext &ctx) {
  DenseElementsRef in = ctx.getOperandRef(0);
  if (!in)
    return false;
  ctx.results.push_back(std::move(in));
  return true;
}

bool opimpl::foldReshapeLike(FoldContext &ctx) {
  DenseElementsRef in = ctx.getOperandRef(0);
  auto dims = ctx.getResultDims();
  if (!in || !dims || !allOperandsPlain(ctx) ||
      numElementsOf(*dims) != in->getNumElements() ||
      !ctx.fits(in->getNumElements()))
    return false;
  DenseElementsRef out = quant::reshapeDense(*in, *dims);
  if (!out)
    return false;
  ctx.results.push_back(std::move(out));
  return true;
}

bool opimpl::foldTranspose(FoldContext &ctx) {
  const DenseElements *in = ctx.getOperand(0);
  if (!isPlainData(in) || !ctx.fits(in->getNumElements()))
    return false;
  int64_t rank = in->getDims().size();
  std::vector<int64_t> perm = getIntsAttrOr(ctx.node, "perm");
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  if (auto err = quant::checkPermutation(perm, rank)) {
    llvm::consumeError(std::move(err));
    return false;
  }
  DenseElementsRef out = quant::transposeDense(*in, perm);
  if (!out)
    return false;
  ctx.results.push_back(std::move(out));
  return true;
}

bool opimpl::foldGather(FoldContext &ctx) {
  const DenseElements *data = ctx.getOperand(0), *indices = ctx.getOperand(1);
  auto dims = ctx.getResultDims();
  if (!isPlainData(data) || !indices || !isIntegerKind(indices->getKind()) ||
      indices->getKind() == ElementKind::U64 || !dims ||
      !ctx.fits(numElementsOf(*dims)))
    return false;
  llvm::ArrayRef<int64_t> dd = data->getDims();
  int64_t rank = dd.size();
  int64_t axis = wrapAxis(getIntAttrOr(ctx.node, "axis", 0), rank);
  if (axis < 0 || axis >= rank)
    return false;
  int64_t outer = numElementsOf(dd.take_front(axis));
  int64_t inner = numElementsOf(dd.drop_front(axis + 1));
  int64_t axisSize = dd[axis];
  int64_t numIndices = indices->getNumElements();
  if (outer * numIndices * inner != numElementsOf(*dims))
    return false;
  std::vector<int64_t> flat;
  flat.reserve(outer * numIndices * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < numIndices; ++k) {
      int64_t i = indices->getAsInt(k);
      if (i < 0)
        i += axisSize;
      if (i < 0 || i >= axisSize)
        return false; // out of range: the runtime's error, not ours
      for (int64_t j = 0; j < inner; ++j)
        flat.push_back((o * axisSize + i) * inner + j);
    }
  ctx.results.push_back(gatherElements(*data, *dims, flat));
  return true;
}

bool opimpl::foldConcat(FoldContext &ctx) {
  auto dims = ctx.getResultDims();
  if (!dims || !allOperandsPlain(ctx) || ctx.getNumOperands() == 0 ||
      !ctx.fits(numElementsOf(*dims)))
    return false;
  int64_t rank = dims->size();
  int64_t axis = wrapAxis(getIntAttrOr(ctx.node, "axis", 0), rank);
  if (axis < 0 || axis >= rank)
    return false;
  int64_t outer =
      numElementsOf(llvm::ArrayRef<int64_t>(*dims).take_front(axis));
  const DenseElements *first = ctx.getOperand(0);
  size_t size = *DenseElements::byteSizeFor(first->getKind(), 1);
  std::string bytes;
  bytes.reserve(numElementsOf(*dims) * size);
  for (int64_t o = 0; o < outer; ++o)
    for (unsigned i = 0; i < ctx.getNumOperands(); ++i) {
      const DenseElements *d = ctx.getOperand(i);
      if (d->getKind() != first->getKind() ||
          int64_t(d->getDims().size()) != rank)
        return false;
      for (int64_t a = 0; a < rank; ++a)
        if (a != axis && d->getDims()[a] != (*dims)[a])
          return false;
      int64_t block = numElementsOf(d->getDims().drop_front(axis)) * size;
      bytes.append(d->getRawBytes().data() + o * block, block);
    }
  if (int64_t(bytes.size()) != numElementsOf(*dims) * int64_t(size))
    return false;
  ctx.results.push_back(std::make_shared<DenseElements>(first->getKind(), *dims,
                                                        std::move(bytes)));
  return true;
}

bool opimpl::foldSlice(FoldContext &ctx) {
  const DenseElements *data = ctx.getOperand(0);
  auto starts = getConstantInts(ctx.node.getOperand(1));
  auto ends = getConstantInts(ctx.node.getOperand(2));
  auto dims = ctx.getResultDims();
  if (!isPlainData(data) || !starts || !ends || !dims ||
      starts->size() != ends->size() || !ctx.fits(numElementsOf(*dims)))
    return false;
  llvm::ArrayRef<int64_t> dd = data->getDims();
  int64_t rank = dd.size();
  std::vector<int64_t> axes, steps(starts->size(), 1);
  if (ctx.getNumOperands() > 3 && ctx.getOperandType(3)) {
    auto a = getConstantInts(ctx.node.getOperand(3));
    if (!a || a->size() != starts->size())
      return false;
    axes = *a;
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (ctx.getNumOperands() > 4 && ctx.getOperandType(4)) {
    auto s = getConstantInts(ctx.node.getOperand(4));
    if (!s || s->size() != starts->size())
      return false;
    steps = *s;
  }
  std::vector<int64_t> first(rank, 0), step(rank, 1),
      count(dd.begin(), dd.end());
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = wrapAxis(axes[i], rank);
    if (a < 0 || a >= rank || seen[a] || steps[i] == 0)
      return false;
    seen[a] = true;
    int64_t d = dd[a], st = steps[i];
    int64_t s = (*starts)[i], e = (*ends)[i];
    if (d == 0 || st == INT64_MIN)
      return false;
    if (s < 0)
      s = s < -d ? -1 : s + d; // below the first element
    if (e < 0)
      e = e < -d ? -1 : e + d;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      count[a] = e > s ? (e - s - 1) / st + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      count[a] = s > e ? (s - e - 1) / -st + 1 : 0;
    }
    first[a] = s;
    step[a] = st;
  }
  if (count != *dims)
    return false;
  std::vector<int64_t> inStrides = rowMajorStrides(dd);
  int64_t total = numElementsOf(count);
  std::vector<int64_t> flat;
  flat.reserve(total);
  std::vector<int64_t> coord(rank, 0);
  for (int64_t e = 0; e < total; ++e) {
    int64_t index = 0;
    for (int64_t a = 0; a < rank; ++a)
      index += (first[a] + coord[a] * step[a]) * inStrides[a];
    flat.push_back(index);
    for (int64_t a = rank; a-- > 0;) {
      if (++coord[a] < count[a])
        break;
      coord[a] = 0;
    }
  }
  ctx.results.push_back(gatherElements(*data, count, flat));
  return true;
}

bool opimpl::foldBroadcastCopy(FoldContext &ctx) {
  const DenseElements *data = ctx.getOperand(0);
  auto dims = ctx.getResultDims();
  if (!isPlainData(data) || !ctx.getOperand(1) || !dims ||
      !ctx.fits(numElementsOf(*dims)))
    return false;
  auto indices = broadcastIndices(data->getDims(), *dims);
  if (!indices)
    return false;
  ctx.results.push_back(gatherElements(*data, *dims, *indices));
  return true;
}

bool opimpl::foldTile(FoldContext &ctx) {
  const DenseElements *data = ctx.getOperand(0);
  auto dims = ctx.getResultDims();
  if (!isPlainData(data) || !ctx.getOperand(1) || !dims ||
      dims->size() != data->getDims().size() || !ctx.fits(numElementsOf(*dims)))
    return false;
  llvm::ArrayRef<int64_t> dd = data->getDims();
  auto repeats = getConstantInts(ctx.node.getOperand(1));
  if (!repeats || repeats->size() != dd.size())
    return false;
  for (size_t a = 0; a < dd.size(); ++a) {
    int64_t want;
    if ((*repeats)[a] < 0 ||
        __builtin_mul_overflow(dd[a], (*repeats)[a], &want) ||
        want != (*dims)[a])
      return false;
  }
  std::vector<int64_t> inStrides = rowMajorStrides(dd);
  int64_t total = numElementsOf(*dims);
  std::vector<int64_t> flat, coord(dims->size(), 0);
  flat.reserve(total);
  for (int64_t e = 0; e < total; ++e) {
    int64_t index = 0;
    for (size_t a = 0; a < dims->size(); ++a)
      index += (coord[a] % dd[a]) * inStrides[a];
    flat.push_back(index);
    for (size_t a = dims->size(); a-- > 0;) {
      if (++coord[a] < (*dims)[a])
        break;
      coord[a] = 0;
    }
  }
  ctx.results.push_back(gatherElements(*data, *dims, flat));
  return true;
}

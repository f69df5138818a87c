//===- QuantAxisRemap.cpp - Per-axis quantization through data movement ---===//
//
// How a per-axis quantization axis crosses a data-movement op (the op
// table's remap functions), and which operand of a weighted op is the weight:
//
//   Transpose perm=[0,2,3,1]:  axis 1 -> axis 3
//   Reshape 64x3x3x3 -> 64x27: axis 0 -> axis 0 (its dimension survives)
//   Reshape 64x3x3x3 -> 1728:  refused, axis 0 is merged with others
//   Slice along the axis:      refused, the channels change or move
//   MaxPool, axis 2 or 3:      refused, windows mix the channels
//   Resize, scale != 1 on it:  refused, even when the size stays
//
//===----------------------------------------------------------------------===//

#include "OpImpl.h"
#include "qopt/IR/QuantMath.h"

#include "llvm/ADT/Twine.h"

#include <numeric>

using namespace qopt;
using namespace qopt::opimpl;

//===----------------------------------------------------------------------===//
// Per-axis quantization through data movement
//===----------------------------------------------------------------------===//

static std::string dimText(const Dim &d) {
  return d.isStatic()     ? std::to_string(d.size)
         : d.isSymbolic() ? "\"" + d.symbol + "\""
                          : std::string("?");
}

llvm::Expected<int64_t> opimpl::remapSameAxis(const Node &n, int64_t axis,
                                              llvm::ArrayRef<Dim> in,
                                              llvm::ArrayRef<Dim> out) {
  if (in.size() != out.size() || axis < 0 ||
      axis >= static_cast<int64_t>(in.size()))
    return nodeError(n, "per-axis quantization cannot cross: the rank changes");
  const Dim &a = in[axis], &b = out[axis];
  if (!(a.isStatic() && b.isStatic() && a.size == b.size) &&
      !(a.isSymbolic() && a == b))
    return nodeError(n, "per-axis quantization cannot cross: quantized axis " +
                            llvm::Twine(axis) + " changes size (" + dimText(a) +
                            " -> " + dimText(b) + ")");
  return axis;
}

llvm::Expected<int64_t> opimpl::remapReshape(const Node &n, int64_t axis,
                                             llvm::ArrayRef<Dim> in,
                                             llvm::ArrayRef<Dim> out) {
  auto ints =
      [](llvm::ArrayRef<Dim> dims) -> std::optional<std::vector<int64_t>> {
    std::vector<int64_t> v;
    for (const Dim &d : dims) {
      if (!d.isStatic())
        return std::nullopt;
      v.push_back(d.size);
    }
    return v;
  };
  auto inDims = ints(in), outDims = ints(out);
  if (!inDims || !outDims)
    return nodeError(n, "per-axis quantization cannot cross: the reshape "
                        "from " +
                            shapeToText(in) + " to " + shapeToText(out) +
                            " is not static");
  auto remapped = quant::remapAxisThroughReshape(*inDims, *outDims, axis);
  if (!remapped)
    return nodeError(n, "per-axis quantization cannot cross: " +
                            llvm::toString(remapped.takeError()));
  return *remapped;
}

llvm::Expected<int64_t> opimpl::remapTranspose(const Node &n, int64_t axis,
                                               llvm::ArrayRef<Dim> in,
                                               llvm::ArrayRef<Dim>) {
  std::vector<int64_t> perm = getIntsAttrOr(n, "perm");
  if (!n.getAttr("perm")) {
    perm.resize(in.size());
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  for (size_t j = 0; j < perm.size(); ++j)
    if (perm[j] == axis)
      return static_cast<int64_t>(j);
  return nodeError(n, "per-axis quantization cannot cross: perm does not "
                      "contain axis " +
                          llvm::Twine(axis));
}

llvm::Expected<int64_t> opimpl::remapGather(const Node &n, int64_t axis,
                                            llvm::ArrayRef<Dim> in,
                                            llvm::ArrayRef<Dim> out) {
  int64_t gatherAxis = getIntAttrOr(n, "axis", 0);
  if (gatherAxis < 0)
    gatherAxis += in.size();
  if (axis == gatherAxis)
    return nodeError(n, "per-axis quantization cannot cross: Gather selects "
                        "along the quantized axis " +
                            llvm::Twine(axis));
  if (axis < gatherAxis)
    return axis;
  return axis + static_cast<int64_t>(out.size()) -
         static_cast<int64_t>(in.size());
}

llvm::Expected<int64_t> opimpl::remapBroadcast(const Node &n, int64_t axis,
                                               llvm::ArrayRef<Dim> in,
                                               llvm::ArrayRef<Dim> out) {
  int64_t shift =
      static_cast<int64_t>(out.size()) - static_cast<int64_t>(in.size());
  if (shift < 0)
    return nodeError(n, "per-axis quantization cannot cross: the rank shrinks");
  auto same = remapSameAxis(n, axis, in, out.drop_front(shift));
  if (!same)
    return same.takeError();
  return *same + shift;
}

/// A Slice keeps per-axis parameters only when it does not touch the
/// quantized axis: a reversed or shifted slice of the same size reorders the
/// channels.
llvm::Expected<int64_t> opimpl::remapSlice(const Node &n, int64_t axis,
                                           llvm::ArrayRef<Dim> in,
                                           llvm::ArrayRef<Dim> out) {
  auto refuse = [&](const llvm::Twine &why) {
    return nodeError(n, "per-axis quantization cannot cross: " + why);
  };
  int64_t rank = in.size();
  auto starts =
      n.getNumOperands() > 1 ? getConstantInts(n.getOperand(1)) : std::nullopt;
  auto ends =
      n.getNumOperands() > 2 ? getConstantInts(n.getOperand(2)) : std::nullopt;
  std::optional<std::vector<int64_t>> axes, steps;
  if (n.getNumOperands() > 3 && n.getOperand(3))
    axes = getConstantInts(n.getOperand(3));
  else if (starts)
    axes = [&] {
      std::vector<int64_t> v(starts->size());
      std::iota(v.begin(), v.end(), 0);
      return v;
    }();
  if (n.getNumOperands() > 4 && n.getOperand(4))
    steps = getConstantInts(n.getOperand(4));
  if (!starts || !ends || !axes ||
      (n.getNumOperands() > 4 && n.getOperand(4) && !steps))
    return refuse("the slice is computed, so it may cut the quantized axis");
  for (size_t i = 0; i < axes->size() && i < starts->size(); ++i) {
    int64_t a = (*axes)[i] < 0 ? (*axes)[i] + rank : (*axes)[i];
    if (a != axis)
      continue;
    int64_t step = steps && i < steps->size() ? (*steps)[i] : 1;
    int64_t start = (*starts)[i];
    bool whole = step == 1 && (start == 0 || start <= -in[axis].size) &&
                 in[axis].isStatic() && i < ends->size() &&
                 (*ends)[i] >= in[axis].size;
    if (!whole)
      return refuse("the slice selects or reorders along quantized axis " +
                    llvm::Twine(axis));
  }
  return remapSameAxis(n, axis, in, out);
}

/// A Pad keeps per-axis parameters only when it pads no other axis than
/// the quantized one by nothing.
llvm::Expected<int64_t> opimpl::remapPad(const Node &n, int64_t axis,
                                         llvm::ArrayRef<Dim> in,
                                         llvm::ArrayRef<Dim> out) {
  auto pads =
      n.getNumOperands() > 1 ? getConstantInts(n.getOperand(1)) : std::nullopt;
  std::optional<std::vector<int64_t>> axes;
  if (n.getNumOperands() > 3 && n.getOperand(3))
    axes = getConstantInts(n.getOperand(3));
  else {
    axes.emplace(in.size());
    std::iota(axes->begin(), axes->end(), 0);
  }
  if (!pads || !axes || pads->size() != 2 * axes->size())
    return nodeError(n, "per-axis quantization cannot cross: the pads are "
                        "computed, so they may pad the quantized axis");
  for (size_t i = 0; i < axes->size(); ++i) {
    int64_t a = (*axes)[i] < 0 ? (*axes)[i] + in.size() : (*axes)[i];
    if (a == axis && ((*pads)[i] != 0 || (*pads)[i + axes->size()] != 0))
      return nodeError(n, "per-axis quantization cannot cross: the op pads "
                          "quantized axis " +
                              llvm::Twine(axis));
  }
  return remapSameAxis(n, axis, in, out);
}

llvm::Expected<int64_t> opimpl::remapBatchOnly(const Node &n, int64_t axis,
                                               llvm::ArrayRef<Dim>,
                                               llvm::ArrayRef<Dim>) {
  if (axis == 0)
    return axis;
  return nodeError(n, "per-axis quantization cannot cross: the op moves "
                      "data between axis " +
                          llvm::Twine(axis) + " and others");
}

/// A pool mixes the elements of a window along every spatial axis (2 and
/// up): per-axis parameters on such an axis cross only when it has one
/// element (no window holds two channels). The same size before and after
/// is not enough: a 3x3 window with pads 1 keeps the size and takes the
/// maximum over neighbouring channels.
llvm::Expected<int64_t> opimpl::remapPool(const Node &n, int64_t axis,
                                          llvm::ArrayRef<Dim> in,
                                          llvm::ArrayRef<Dim> out) {
  auto same = remapSameAxis(n, axis, in, out);
  if (!same)
    return same.takeError();
  if (axis >= 2 && !(in[axis].isStatic() && in[axis].size == 1))
    return nodeError(n, "per-axis quantization cannot cross: the op pools "
                        "along quantized axis " +
                            llvm::Twine(axis));
  return *same;
}

/// A Resize keeps per-axis parameters only when it maps every index of the
/// quantized axis to itself: scale exactly 1 on that axis (given, or sizes
/// equal to the input's with the stretch policy) and not tf_crop_and_resize
/// (its roi shifts the indices). The same size is not enough: scale 1.3 on
/// 3 elements gives 3 elements, the last a copy of the second.
llvm::Expected<int64_t> opimpl::remapResize(const Node &n, int64_t axis,
                                            llvm::ArrayRef<Dim> in,
                                            llvm::ArrayRef<Dim> out) {
  auto same = remapSameAxis(n, axis, in, out);
  if (!same)
    return same.takeError();
  auto refuse = [&](const llvm::Twine &why) {
    return nodeError(n, "per-axis quantization cannot cross: " + why);
  };
  if (getStringAttrOr(n, "coordinate_transformation_mode", "half_pixel") ==
      "tf_crop_and_resize")
    return refuse("tf_crop_and_resize may move indices of quantized axis " +
                  llvm::Twine(axis));
  int64_t rank = in.size();
  int64_t pos = axis;
  if (n.getAttr("axes")) {
    pos = -1;
    std::vector<int64_t> axes = getIntsAttrOr(n, "axes");
    for (size_t i = 0; i < axes.size(); ++i)
      if ((axes[i] < 0 ? axes[i] + rank : axes[i]) == axis)
        pos = static_cast<int64_t>(i);
    if (pos < 0)
      return *same; // the axis is not resized
  }
  auto operand = [&](unsigned i) -> const DenseElements * {
    if (n.getNumOperands() <= i || !n.getOperand(i))
      return nullptr;
    const DenseElements *d = getConstantData(n.getOperand(i));
    return d && d->getNumElements() != 0 ? d : nullptr;
  };
  bool computed =
      (n.getNumOperands() > 3 && n.getOperand(3) && !operand(3)) ||
      (!operand(3) && n.getNumOperands() > 2 && n.getOperand(2) && !operand(2));
  if (computed)
    return refuse("the resize is computed, so it may move indices of "
                  "quantized axis " +
                  llvm::Twine(axis));
  if (operand(3)) {
    if (getStringAttrOr(n, "keep_aspect_ratio_policy", "stretch") != "stretch")
      return refuse("one scale for every axis may move indices of quantized "
                    "axis " +
                    llvm::Twine(axis));
    return *same; // stretch: the axis keeps its size, scale 1
  }
  const DenseElements *scales = operand(2);
  if (!scales || pos >= scales->getNumElements() ||
      scales->getAsDouble(pos) != 1.0)
    return refuse("the op resizes quantized axis " + llvm::Twine(axis));
  return *same;
}

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

std::optional<WeightInfo> opimpl::convWeight(const Node &) {
  return WeightInfo{1, 0}; // W: [M, C/group, k...]
}

std::optional<WeightInfo> opimpl::convTransposeWeight(const Node &) {
  return WeightInfo{1, 1}; // W: [C, M/group, k...]
}

std::optional<WeightInfo> opimpl::gemmWeight(const Node &n) {
  return WeightInfo{1, getIntAttrOr(n, "transB", 0) ? 0 : 1};
}

std::optional<WeightInfo> opimpl::matMulWeight(const Node &n) {
  const Value *b = n.getNumOperands() > 1 ? n.getOperand(1) : nullptr;
  if (!b || !b->getType()->hasRank() || b->getType()->getRank() < 2)
    return std::nullopt;
  return WeightInfo{1, b->getType()->getRank() - 1};
}

//===- ShapeInferenceMovement.cpp - Shapes of data-movement ops -----------===//
//
// Shapes of the ops that move data without computing it (Reshape, Transpose,
// Slice, Concat, ...). How a per-axis quantization axis crosses them is in
// QuantAxisRemap.cpp.
//
//===----------------------------------------------------------------------===//

#include "OpImpl.h"

#include "llvm/ADT/Twine.h"

#include <numeric>

using namespace qopt;
using namespace qopt::opimpl;

static std::string listText(llvm::ArrayRef<int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Reshape family
//===----------------------------------------------------------------------===//

llvm::Error opimpl::inferReshape(InferenceContext &ctx) {
  auto target = ctx.getConstantInts(1);
  if (!target) {
    if (ctx.hasRank(1) && ctx.getRank(1) == 1 && ctx.getShape(1)[0].isStatic())
      ctx.setResultShape(0, Shape(ctx.getShape(1)[0].size, Dim::dynamic()));
    return llvm::Error::success();
  }
  bool allowZero = ctx.getInt("allowzero") != 0;
  Shape out;
  int inferredAt = -1;
  for (size_t i = 0; i < target->size(); ++i) {
    int64_t d = (*target)[i];
    if (d == -1) {
      if (inferredAt >= 0)
        return ctx.error("shape " + listText(*target) +
                         " has more than one -1");
      inferredAt = i;
      out.push_back(Dim::dynamic());
    } else if (d == 0 && !allowZero) {
      if (!ctx.hasRank(0)) {
        out.push_back(Dim::dynamic());
        continue;
      }
      if (static_cast<int64_t>(i) >= ctx.getRank(0))
        return ctx.error("shape " + listText(*target) + " copies dimension " +
                         llvm::Twine(i) + " of an input of rank " +
                         llvm::Twine(ctx.getRank(0)));
      out.push_back(ctx.getShape(0)[i]);
    } else if (d < 0) {
      return ctx.error("invalid dimension " + llvm::Twine(d) + " in shape " +
                       listText(*target));
    } else {
      out.push_back(Dim::fixed(d));
    }
  }
  // A -1 next to dimensions copied from the input: the symbols cancel
  // ("N"x3x4 to [0, -1] is "N"x12).
  if (inferredAt >= 0 && ctx.hasRank(0)) {
    llvm::SmallVector<Dim, 4> inRest(ctx.getShape(0).begin(),
                                     ctx.getShape(0).end());
    int64_t inStatic = 1, outStatic = 1;
    bool ok = true;
    for (size_t i = 0; i < out.size() && ok; ++i) {
      if (static_cast<int>(i) == inferredAt)
        continue;
      if (out[i].isStatic()) {
        outStatic *= out[i].size;
        continue;
      }
      auto it = std::find(inRest.begin(), inRest.end(), out[i]);
      ok = out[i].isSymbolic() && it != inRest.end();
      if (ok)
        inRest.erase(it);
    }
    llvm::SmallVector<Dim, 2> leftSymbols;
    for (const Dim &d : inRest) {
      if (d.isStatic())
        inStatic *= d.size;
      else
        leftSymbols.push_back(d);
    }
    if (ok && outStatic > 0 && inStatic % outStatic == 0) {
      int64_t ratio = inStatic / outStatic;
      if (leftSymbols.empty())
        out[inferredAt] = Dim::fixed(ratio);
      else if (leftSymbols.size() == 1 && leftSymbols[0].isSymbolic() &&
               ratio == 1)
        out[inferredAt] = leftSymbols[0];
    }
  }
  std::optional<int64_t> total =
      ctx.hasRank(0) ? staticProduct(ctx.getShape(0)) : std::nullopt;
  std::optional<int64_t> known;
  {
    Shape rest = out;
    if (inferredAt >= 0)
      rest.erase(rest.begin() + inferredAt);
    known = staticProduct(rest);
  }
  if (total && known) {
    std::string inText = shapeToText(ctx.getShape(0));
    if (inferredAt >= 0) {
      if (*known == 0 || *total % *known != 0)
        return ctx.error("cannot reshape " + inText + " (" +
                         llvm::Twine(*total) + " elements) to " +
                         listText(*target));
      out[inferredAt] = Dim::fixed(*total / *known);
    } else if (*known != *total) {
      return ctx.error("cannot reshape " + inText + " (" + llvm::Twine(*total) +
                       " elements) to " + listText(*target) + " (" +
                       llvm::Twine(*known) + " elements)");
    }
  }
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

llvm::Error opimpl::inferFlatten(InferenceContext &ctx) {
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> in = ctx.getShape(0);
  int64_t rank = in.size(), axis = ctx.getInt("axis");
  if (axis < -rank || axis > rank)
    return ctx.error("axis " + llvm::Twine(axis) +
                     " is out of range for rank " + llvm::Twine(rank));
  if (axis < 0)
    axis += rank;
  // One symbolic dimension times static ones of product 1 stays symbolic.
  auto side = [](llvm::ArrayRef<Dim> dims) {
    if (auto p = staticProduct(dims))
      return Dim::fixed(*p);
    const Dim *symbol = nullptr;
    int64_t rest = 1;
    for (const Dim &d : dims) {
      if (d.isStatic())
        rest *= d.size;
      else if (!symbol && d.isSymbolic())
        symbol = &d;
      else
        return Dim::dynamic();
    }
    return symbol && rest == 1 ? *symbol : Dim::dynamic();
  };
  ctx.setResultShape(0, {side(in.take_front(axis)), side(in.drop_front(axis))});
  return llvm::Error::success();
}

llvm::Error opimpl::inferSqueeze(InferenceContext &ctx) {
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> in = ctx.getShape(0);
  int64_t rank = in.size();
  std::vector<bool> drop(rank, false);
  if (ctx.getOperand(1)) {
    auto axes = ctx.getConstantInts(1);
    if (!axes)
      return llvm::Error::success();
    for (int64_t a : *axes) {
      auto axis = normalizeAxis(ctx, a, rank, "axis");
      if (!axis)
        return axis.takeError();
      if (in[*axis].isStatic() && in[*axis].size != 1)
        return ctx.error("cannot squeeze axis " + llvm::Twine(*axis) +
                         " of size " + llvm::Twine(in[*axis].size) + " in " +
                         shapeToText(in));
      drop[*axis] = true;
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) {
      if (!in[i].isStatic())
        return llvm::Error::success(); // which axes go depends on the data
      drop[i] = in[i].size == 1;
    }
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i])
      out.push_back(in[i]);
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

llvm::Error opimpl::inferUnsqueeze(InferenceContext &ctx) {
  auto axes = ctx.getConstantInts(1);
  if (!ctx.hasRank(0) || !axes)
    return llvm::Error::success();
  int64_t rank = ctx.getRank(0) + axes->size();
  std::vector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    auto axis = normalizeAxis(ctx, a, rank, "axis");
    if (!axis)
      return axis.takeError();
    if (inserted[*axis])
      return ctx.error("axis " + llvm::Twine(*axis) + " is repeated");
    inserted[*axis] = true;
  }
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    out.push_back(inserted[i] ? Dim::fixed(1) : ctx.getShape(0)[next++]);
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

llvm::Error opimpl::inferTranspose(InferenceContext &ctx) {
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> in = ctx.getShape(0);
  int64_t rank = in.size();
  std::vector<int64_t> perm = ctx.getInts("perm");
  if (!ctx.hasAttr("perm")) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  std::vector<bool> seen(rank, false);
  if (static_cast<int64_t>(perm.size()) != rank)
    return ctx.error("perm " + listText(perm) + " does not fit rank " +
                     llvm::Twine(rank));
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return ctx.error("perm " + listText(perm) + " is not a permutation");
    seen[p] = true;
    out.push_back(in[p]);
  }
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Slicing, splitting, joining
//===----------------------------------------------------------------------===//

llvm::Error opimpl::inferSlice(InferenceContext &ctx) {
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> in = ctx.getShape(0);
  int64_t rank = in.size();
  auto starts = ctx.getConstantInts(1), ends = ctx.getConstantInts(2);
  std::optional<std::vector<int64_t>> axes, steps;
  if (ctx.getOperand(3))
    axes = ctx.getConstantInts(3);
  else
    axes.emplace();
  if (ctx.getOperand(4))
    steps = ctx.getConstantInts(4);
  else
    steps.emplace();
  if (!starts || !ends || !axes || !steps) {
    ctx.setResultShape(0, Shape(rank, Dim::dynamic()));
    return llvm::Error::success();
  }
  size_t n = starts->size();
  if (ends->size() != n)
    return ctx.error("starts and ends have different lengths");
  if (axes->empty()) {
    axes->resize(n);
    std::iota(axes->begin(), axes->end(), 0);
  }
  if (steps->empty())
    steps->assign(n, 1);
  if (axes->size() != n || steps->size() != n)
    return ctx.error("starts, ends, axes and steps have different lengths");
  Shape out(in.begin(), in.end());
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < n; ++i) {
    auto axis = normalizeAxis(ctx, (*axes)[i], rank, "axis");
    if (!axis)
      return axis.takeError();
    if (seen[*axis])
      return ctx.error("axis " + llvm::Twine(*axis) + " is sliced twice");
    seen[*axis] = true;
    int64_t step = (*steps)[i];
    if (step == 0)
      return ctx.error("step is 0");
    if (!in[*axis].isStatic()) {
      out[*axis] = Dim::dynamic();
      continue;
    }
    int64_t dim = in[*axis].size, start = (*starts)[i], end = (*ends)[i];
    if (start < 0)
      start += dim;
    if (end < 0 && end > std::numeric_limits<int64_t>::min() + dim)
      end += dim;
    int64_t count;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end - step - 1) / -step : 0;
    }
    out[*axis] = Dim::fixed(count);
  }
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

llvm::Error opimpl::inferSplit(InferenceContext &ctx) {
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> in = ctx.getShape(0);
  auto axis = normalizeAxis(ctx, ctx.getInt("axis"), in.size(), "axis");
  if (!axis)
    return axis.takeError();
  unsigned outputs = ctx.getNumResults();
  std::vector<int64_t> sizes;
  if (ctx.getOperand(1)) {
    auto split = ctx.getConstantInts(1);
    if (!split) {
      for (unsigned i = 0; i < outputs; ++i) {
        Shape s(in.begin(), in.end());
        s[*axis] = Dim::dynamic();
        ctx.setResultShape(i, s);
      }
      return llvm::Error::success();
    }
    sizes = *split;
    if (sizes.size() != outputs)
      return ctx.error("split has " + llvm::Twine(sizes.size()) +
                       " sizes for " + llvm::Twine(outputs) + " outputs");
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0)
        return ctx.error("negative split size " + llvm::Twine(s));
      sum += s;
    }
    if (in[*axis].isStatic() && sum != in[*axis].size)
      return ctx.error("split sizes " + listText(sizes) + " add up to " +
                       llvm::Twine(sum) + ", but axis " + llvm::Twine(*axis) +
                       " has size " + llvm::Twine(in[*axis].size));
  } else if (in[*axis].isStatic()) {
    int64_t dim = in[*axis].size;
    int64_t chunk = (dim + outputs - 1) / outputs; // the last may be smaller
    if (!ctx.hasAttr("num_outputs") && dim % outputs != 0)
      return ctx.error("axis " + llvm::Twine(*axis) + " of size " +
                       llvm::Twine(dim) + " does not split into " +
                       llvm::Twine(outputs) + " equal parts");
    if (outputs > 1 && chunk * (outputs - 1) >= dim)
      return ctx.error("axis " + llvm::Twine(*axis) + " of size " +
                       llvm::Twine(dim) + " cannot be split into " +
                       llvm::Twine(outputs) +
                       " outputs (the last would be "
                       "empty)");
    for (unsigned i = 0; i < outputs; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
  }
  for (unsigned i = 0; i < outputs; ++i) {
    Shape s(in.begin(), in.end());
    s[*axis] = sizes.empty() ? Dim::dynamic() : Dim::fixed(sizes[i]);
    ctx.setResultShape(i, s);
  }
  return llvm::Error::success();
}

llvm::Error opimpl::inferConcat(InferenceContext &ctx) {
  int first = -1;
  for (unsigned i = 0; i < ctx.getNumOperands(); ++i) {
    if (!ctx.getOperand(i))
      return ctx.error("input " + llvm::Twine(i) + " is missing");
    if (!ctx.hasRank(i))
      return llvm::Error::success();
    if (first < 0)
      first = i;
  }
  if (first < 0)
    return llvm::Error::success();
  int64_t rank = ctx.getRank(first);
  auto axis = normalizeAxis(ctx, ctx.getInt("axis"), rank, "axis");
  if (!axis)
    return axis.takeError();
  Shape out(ctx.getShape(first).begin(), ctx.getShape(first).end());
  int64_t sum = 0;
  bool sumKnown = true;
  for (unsigned i = 0; i < ctx.getNumOperands(); ++i) {
    llvm::ArrayRef<Dim> s = ctx.getShape(i);
    if (static_cast<int64_t>(s.size()) != rank)
      return ctx.error("input " + llvm::Twine(i) + " has shape " +
                       shapeToText(s) + ", input 0 has " +
                       shapeToText(ctx.getShape(first)) + ": ranks differ");
    for (int64_t d = 0; d < rank; ++d) {
      if (d == *axis)
        continue;
      if (s[d].isStatic() && out[d].isStatic() && s[d].size != out[d].size)
        return ctx.error("input " + llvm::Twine(i) + " has shape " +
                         shapeToText(s) + ", input 0 has " +
                         shapeToText(ctx.getShape(first)) + ": dimension " +
                         llvm::Twine(d) + " differs");
      if ((!out[d].isStatic() && s[d].isStatic()) ||
          (!out[d].isStatic() && !out[d].isSymbolic() && s[d].isSymbolic()))
        out[d] = s[d];
    }
    if (s[*axis].isStatic())
      sum += s[*axis].size;
    else
      sumKnown = false;
  }
  out[*axis] = sumKnown ? Dim::fixed(sum) : Dim::dynamic();
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Gather, expand, tile, pad, resize
//===----------------------------------------------------------------------===//

llvm::Error opimpl::inferGather(InferenceContext &ctx) {
  if (!ctx.hasRank(0) || !ctx.hasRank(1))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> data = ctx.getShape(0), idx = ctx.getShape(1);
  auto axis = normalizeAxis(ctx, ctx.getInt("axis"), data.size(), "axis");
  if (!axis)
    return axis.takeError();
  Shape out(data.begin(), data.begin() + *axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + *axis + 1, data.end());
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

llvm::Error opimpl::inferGatherElements(InferenceContext &ctx) {
  if (ctx.hasRank(0) && ctx.hasRank(1) && ctx.getRank(0) != ctx.getRank(1))
    return ctx.error("indices " + shapeToText(ctx.getShape(1)) + " and data " +
                     shapeToText(ctx.getShape(0)) + " have different ranks");
  ctx.setResultShapeLike(0, 1);
  return llvm::Error::success();
}

llvm::Error opimpl::inferGatherND(InferenceContext &ctx) {
  if (!ctx.hasRank(0) || !ctx.hasRank(1))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> data = ctx.getShape(0), idx = ctx.getShape(1);
  int64_t batch = ctx.getInt("batch_dims");
  if (idx.empty() || !idx.back().isStatic())
    return llvm::Error::success();
  int64_t k = idx.back().size;
  if (batch < 0 || batch + k > static_cast<int64_t>(data.size()))
    return ctx.error("indices " + shapeToText(idx) +
                     " index past the rank of " + shapeToText(data));
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), data.begin() + batch + k, data.end());
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

llvm::Error opimpl::inferExpand(InferenceContext &ctx) {
  auto target = ctx.getConstantInts(1);
  if (!target)
    return llvm::Error::success();
  for (int64_t d : *target)
    if (d < 0)
      return ctx.error("negative dimension " + llvm::Twine(d) +
                       " in the shape " + listText(*target));
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  auto out = broadcastShapes(ctx, ctx.getShape(0), staticShape(*target));
  if (!out)
    return out.takeError();
  ctx.setResultShape(0, *out);
  return llvm::Error::success();
}

llvm::Error opimpl::inferTile(InferenceContext &ctx) {
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  auto repeats = ctx.getConstantInts(1);
  int64_t rank = ctx.getRank(0);
  if (!repeats) {
    ctx.setResultShape(0, Shape(rank, Dim::dynamic()));
    return llvm::Error::success();
  }
  if (static_cast<int64_t>(repeats->size()) != rank)
    return ctx.error("repeats " + listText(*repeats) + " does not fit rank " +
                     llvm::Twine(rank));
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    const Dim &d = ctx.getShape(0)[i];
    if ((*repeats)[i] < 0)
      return ctx.error("negative repeat " + llvm::Twine((*repeats)[i]));
    out.push_back((*repeats)[i] == 1 ? d
                  : d.isStatic()     ? Dim::fixed(d.size * (*repeats)[i])
                                     : Dim::dynamic());
  }
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

llvm::Error opimpl::inferPad(InferenceContext &ctx) {
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> in = ctx.getShape(0);
  int64_t rank = in.size();
  auto pads = ctx.getConstantInts(1);
  std::optional<std::vector<int64_t>> axes;
  if (ctx.getOperand(3))
    axes = ctx.getConstantInts(3);
  else {
    axes.emplace(rank);
    std::iota(axes->begin(), axes->end(), 0);
  }
  if (!pads || !axes) {
    ctx.setResultShape(0, Shape(rank, Dim::dynamic()));
    return llvm::Error::success();
  }
  size_t n = axes->size();
  if (pads->size() != 2 * n)
    return ctx.error("pads has " + llvm::Twine(pads->size()) +
                     " values, expected " + llvm::Twine(2 * n));
  Shape out(in.begin(), in.end());
  for (size_t i = 0; i < n; ++i) {
    auto axis = normalizeAxis(ctx, (*axes)[i], rank, "axis");
    if (!axis)
      return axis.takeError();
    if (!in[*axis].isStatic()) {
      bool untouched = (*pads)[i] == 0 && (*pads)[i + n] == 0;
      out[*axis] = untouched ? in[*axis] : Dim::dynamic();
      continue;
    }
    int64_t size = in[*axis].size + (*pads)[i] + (*pads)[i + n];
    if (size < 0)
      return ctx.error("pads " + listText(*pads) + " remove more than axis " +
                       llvm::Twine(*axis) + " holds");
    out[*axis] = Dim::fixed(size);
  }
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

llvm::Error opimpl::inferResize(InferenceContext &ctx) {
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> in = ctx.getShape(0);
  int64_t rank = in.size();
  std::vector<int64_t> axes = ctx.getInts("axes");
  if (axes.empty()) {
    axes.resize(rank);
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t &a : axes) {
    auto axis = normalizeAxis(ctx, a, rank, "axis");
    if (!axis)
      return axis.takeError();
    a = *axis;
  }
  Shape out(in.begin(), in.end());
  const DenseElements *sizes = ctx.getOperand(3) ? ctx.getConstant(3) : nullptr;
  const DenseElements *scales =
      ctx.getOperand(2) ? ctx.getConstant(2) : nullptr;
  if (scales && scales->getNumElements() == 0)
    scales = nullptr; // opset 11+ passes an empty scales with sizes
  if (sizes && sizes->getNumElements() != 0) {
    if (sizes->getNumElements() != static_cast<int64_t>(axes.size()))
      return ctx.error("sizes has " + llvm::Twine(sizes->getNumElements()) +
                       " values for " + llvm::Twine(axes.size()) + " axes");
    for (int64_t i = 0; i < sizes->getNumElements(); ++i)
      if (sizes->getAsInt(i) < 0)
        return ctx.error("sizes holds " + llvm::Twine(sizes->getAsInt(i)) +
                         " for axis " + llvm::Twine(axes[i]) +
                         "; sizes are >= 0");
    std::string policy = ctx.getString("keep_aspect_ratio_policy");
    if (policy == "stretch") {
      for (size_t i = 0; i < axes.size(); ++i)
        out[axes[i]] = Dim::fixed(sizes->getAsInt(i));
    } else {
      // One scale for every axis: the smallest (not_larger) or largest
      // (not_smaller) of sizes/in; each size is round(in * scale).
      std::optional<float> scale;
      for (size_t i = 0; i < axes.size(); ++i) {
        const Dim &d = in[axes[i]];
        if (!d.isStatic() || d.size == 0) {
          scale.reset();
          break;
        }
        float s =
            static_cast<float>(sizes->getAsInt(i)) / static_cast<float>(d.size);
        if (!scale || (policy == "not_larger" ? s < *scale : s > *scale))
          scale = s;
      }
      for (size_t i = 0; i < axes.size(); ++i) {
        float size = scale ? std::floor(in[axes[i]].size * *scale + 0.5f) : 0;
        if (!(size <= kMaxInferredDim))
          return ctx.error("sizes make axis " + llvm::Twine(axes[i]) +
                           " too large");
        out[axes[i]] =
            scale ? Dim::fixed(static_cast<int64_t>(size)) : Dim::dynamic();
      }
    }
  } else if (scales) {
    if (scales->getNumElements() != static_cast<int64_t>(axes.size()))
      return ctx.error("scales has " + llvm::Twine(scales->getNumElements()) +
                       " values for " + llvm::Twine(axes.size()) + " axes");
    for (size_t i = 0; i < axes.size(); ++i) {
      double s = scales->getAsDouble(i);
      if (!(s > 0))
        return ctx.error("scale " + std::to_string(s) + " must be > 0");
      const Dim &d = in[axes[i]];
      // In float, as ONNX Runtime computes it (3 * 5/3 is 5, not 4).
      float size = static_cast<float>(d.size) * static_cast<float>(s);
      if (d.isStatic() && !(std::floor(size) <= kMaxInferredDim))
        return ctx.error("scale " + std::to_string(s) + " makes axis " +
                         llvm::Twine(axes[i]) + " too large");
      out[axes[i]] = d.isStatic()
                         ? Dim::fixed(static_cast<int64_t>(std::floor(size)))
                         : Dim::dynamic();
    }
  } else {
    for (int64_t a : axes)
      out[a] = Dim::dynamic();
  }
  ctx.setResultShape(0, out);
  return llvm::Error::success();
}

static llvm::Error inferBlockMove(InferenceContext &ctx, bool toSpace) {
  if (!ctx.hasRank(0))
    return llvm::Error::success();
  llvm::ArrayRef<Dim> in = ctx.getShape(0);
  if (in.size() != 4)
    return ctx.error("input must be 4-D, got " + shapeToText(in));
  int64_t b = ctx.getInt("blocksize");
  if (b <= 0)
    return ctx.error("blocksize must be > 0");
  auto scale = [](const Dim &d, int64_t mul, int64_t div) {
    return d.isStatic() ? Dim::fixed(d.size * mul / div) : Dim::dynamic();
  };
  if (toSpace) {
    if (in[1].isStatic() && in[1].size % (b * b) != 0)
      return ctx.error(
          llvm::Twine(in[1].size) +
          " channels do not divide by blocksize^2 = " + llvm::Twine(b * b));
    ctx.setResultShape(0, {in[0], scale(in[1], 1, b * b), scale(in[2], b, 1),
                           scale(in[3], b, 1)});
  } else {
    for (int i = 2; i < 4; ++i)
      if (in[i].isStatic() && in[i].size % b != 0)
        return ctx.error("spatial size " + llvm::Twine(in[i].size) +
                         " does not divide by blocksize " + llvm::Twine(b));
    ctx.setResultShape(0, {in[0], scale(in[1], b * b, 1), scale(in[2], 1, b),
                           scale(in[3], 1, b)});
  }
  return llvm::Error::success();
}

llvm::Error opimpl::inferDepthToSpace(InferenceContext &ctx) {
  return inferBlockMove(ctx, true);
}
llvm::Error opimpl::inferSpaceToDepth(InferenceContext &ctx) {
  return inferBlockMove(ctx, false);
}

//===- PlaceReformats.cpp - Reformats written into the Concat they feed ---===//
//
// A reformat from NHWC into ONNX layout whose result, as it is or through a
// Reshape's copy, is one part of a Concat along the last axis (in ONNX
// layout: each of the Concat's rows takes a run of each part's) writes its
// rows straight into the Concat's result, rowStride elements apart from
// the part's column on. The Reshape copy and the Concat's piece go; so does
// the Concat when no piece is left. A Reshape's copy of a reformat's result
// alone is a Concat of one part: the reformat writes the Reshape's result.
// The bytes are the same: a Reshape keeps the elements' order, and the
// Concat only copies.
//
//   %y = reformat %x to NCHW           =>   %o[:, :, off:off + h*w] =
//   %z = copy %y   (Reshape, optional)             reformat %x to NCHW
//   %o = copy (%a -> %o[.., 0:m],                 %o[.., 0:m] = copy %a
//              %z -> %o[.., off:off + h*w])
//
// YOLO's detection head ends so: each level's boxes and classes (a Concat
// along the channels, NHWC) go to NCHW, are reshaped to [1, no, h * w] and
// concatenated along the last axis into [1, no, 8400].
//
//===----------------------------------------------------------------------===//

#include "PlanBuilderImpl.h"

#include "llvm/Support/Casting.h"

#include <algorithm>

using namespace qopt;
using namespace qopt::codegen;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

namespace {

/// Whether `copy` is a Reshape's: one plain piece copying every element of
/// one ONNX-layout tensor into another of the same kind.
bool isWholeCopy(const Plan &plan, const ChannelCopyStep &copy) {
  if (copy.getPieces().size() != 1 || copy.inputs.size() != 1 ||
      copy.outputs.size() != 1)
    return false;
  const ChannelCopyStep::Piece &p = copy.getPieces()[0];
  const PlanTensor &from = plan.tensors[p.from], &to = plan.tensors[p.to];
  return p.from != p.to && p.table.empty() && !p.grid && p.fromChannel == 0 &&
         p.toChannel == 0 && from.layout == PlanLayout::Onnx &&
         to.layout == PlanLayout::Onnx && from.kind == to.kind &&
         from.numElements() == to.numElements() &&
         p.channels * copy.getNumTiles() == to.numElements();
}

} // namespace

/// A reformat into ONNX layout of an NHWC Concat's result that nothing
/// else reads becomes one reformat per part, each writing its channels'
/// rows where the Concat's reformat would have; the Concat goes.
///
///   %x = copy (%a -> %x[.., 0, m), %b -> %x[.., m, n))   (NHWC)
///   %y = reformat %x to NCHW        =>   %y[rows 0, m) = reformat %a
///                                        %y[rows m, n) = reformat %b
static void splitReformatsByParts(Plan &plan) {
  Readers readers(plan);
  std::vector<int> producer = findProducers(plan);
  bool changed = false;
  // A split's first part is looked at again: it may be a Concat's too.
  for (size_t i = 0; i < plan.steps.size();) {
    auto *reformat = llvm::dyn_cast_or_null<ReformatStep>(plan.steps[i].get());
    if (!reformat) {
      ++i;
      continue;
    }
    int x = reformat->inputs[0];
    const PlanTensor &joined = plan.tensors[x];
    int at = producer[x];
    auto *concat = at < 0
                       ? nullptr
                       : llvm::dyn_cast<ChannelCopyStep>(plan.steps[at].get());
    if (!concat || joined.layout != PlanLayout::Nhwc ||
        plan.tensors[reformat->outputs[0]].layout != PlanLayout::Onnx ||
        !readers.onlyReader(x, 1) || concat->outputs.size() != 1) {
      ++i;
      continue;
    }
    // Whole NHWC tensors of the same pixels and kind, each once, every
    // channel of %x.
    int64_t channels = 0;
    bool wholeParts = true;
    std::vector<int> seen;
    for (const ChannelCopyStep::Piece &p : concat->getPieces()) {
      const PlanTensor &part = plan.tensors[p.from];
      wholeParts =
          wholeParts && !llvm::is_contained(seen, p.from) && p.to == x &&
          p.from != x && p.table.empty() && !p.grid && p.fromChannel == 0 &&
          part.layout == PlanLayout::Nhwc && part.kind == joined.kind &&
          part.shape.size() == 4 && part.shape[0] == joined.shape[0] &&
          part.shape[1] == p.channels && part.shape[2] == joined.shape[2] &&
          part.shape[3] == joined.shape[3];
      channels += p.channels;
      seen.push_back(p.from);
    }
    if (!wholeParts || channels != joined.shape[1]) {
      ++i;
      continue;
    }
    const Shape &s = reformat->shape;
    int64_t rowStride = reformat->rowStride ? reformat->rowStride : s[2] * s[3];
    int64_t batchRows = reformat->batchRows ? reformat->batchRows : s[1];
    std::vector<std::unique_ptr<PlanStep>> parts;
    for (const ChannelCopyStep::Piece &p : concat->getPieces()) {
      auto part = std::make_unique<ReformatStep>(plan.tensors[p.from].name +
                                                 " to NCHW");
      part->shape = plan.tensors[p.from].shape;
      part->rowStride = rowStride;
      part->columnOffset = reformat->columnOffset;
      part->firstRow = reformat->firstRow + p.toChannel;
      part->batchRows = batchRows;
      part->inputs = {p.from};
      part->outputs = reformat->outputs;
      parts.push_back(std::move(part));
    }
    plan.steps[at].reset();
    plan.steps.erase(plan.steps.begin() + i);
    plan.steps.insert(plan.steps.begin() + i,
                      std::make_move_iterator(parts.begin()),
                      std::make_move_iterator(parts.end()));
    // Indices after i moved, and each part has a new reader.
    producer = findProducers(plan);
    readers = Readers(plan);
    changed = true;
  }
  if (changed)
    plan.steps.erase(std::remove(plan.steps.begin(), plan.steps.end(), nullptr),
                     plan.steps.end());
}

void codegen::placeReformatsInConcats(Plan &plan) {
  Readers readers(plan);
  std::vector<int> producer = findProducers(plan);
  auto stepAt = [&](int id) -> PlanStep * {
    return producer[id] < 0 ? nullptr : plan.steps[producer[id]].get();
  };
  bool changed = false;
  // From the last step back: a Concat is placed before the Reshapes that
  // feed it (which are copies of one piece, as a Concat of one part is).
  for (size_t i = plan.steps.size(); i-- > 0;) {
    auto *concat = llvm::dyn_cast_or_null<ChannelCopyStep>(plan.steps[i].get());
    if (!concat || concat->outputs.size() != 1)
      continue;
    int result = concat->outputs[0];
    const PlanTensor &whole = plan.tensors[result];
    int64_t rows = concat->getNumTiles();
    if (whole.layout != PlanLayout::Onnx || rows <= 0)
      continue;
    int64_t rowStride = whole.numElements() / rows;
    std::vector<ChannelCopyStep::Piece> kept;
    for (const ChannelCopyStep::Piece &p : concat->getPieces()) {
      // The part: %z, whole rows of it, read by this piece alone.
      const PlanTensor &part = plan.tensors[p.from];
      bool wholeRows =
          p.to == result && p.table.empty() && !p.grid && p.fromChannel == 0 &&
          part.layout == PlanLayout::Onnx && part.kind == whole.kind &&
          p.channels * rows == part.numElements() &&
          readers.onlyReader(p.from, 1) &&
          llvm::count_if(concat->getPieces(),
                         [&](const auto &q) { return q.from == p.from; }) == 1;
      // Through a Reshape's copy, read by it alone, or straight from the
      // reformat.
      auto *reshape =
          wholeRows ? llvm::dyn_cast_or_null<ChannelCopyStep>(stepAt(p.from))
                    : nullptr;
      int reformatted = p.from;
      if (reshape && isWholeCopy(plan, *reshape) &&
          readers.onlyReader(reshape->inputs[0], 1))
        reformatted = reshape->inputs[0];
      else
        reshape = nullptr;
      auto *reformat =
          wholeRows ? llvm::dyn_cast_or_null<ReformatStep>(stepAt(reformatted))
                    : nullptr;
      if (!reformat || reformat->rowStride != 0 ||
          plan.tensors[reformatted].layout != PlanLayout::Onnx) {
        kept.push_back(p);
        continue;
      }
      // The reformat's rows as the Concat's, or the whole result (a
      // Reshape's copy, in whatever rows it was cut): rows of h * w
      // elements one after the other.
      const Shape &s = reformat->shape;
      int64_t pixels = s[2] * s[3];
      bool asRows = s[0] * s[1] == rows && pixels == p.channels;
      bool asWhole = concat->getPieces().size() == 1 && p.toChannel == 0 &&
                     part.numElements() == whole.numElements();
      if (!asRows && !asWhole) {
        kept.push_back(p);
        continue;
      }
      reformat->outputs = {result};
      reformat->rowStride = asRows ? rowStride : pixels;
      reformat->columnOffset = asRows ? p.toChannel : 0;
      producer[result] = -2;
      if (reshape)
        for (auto &step : plan.steps)
          if (step.get() == reshape)
            step.reset();
      changed = true;
    }
    if (kept.size() == concat->getPieces().size())
      continue;
    if (kept.empty()) {
      plan.steps[i].reset();
      continue;
    }
    plan.steps[i] = rebuildCopy(*concat, std::move(kept), {result});
  }
  if (changed)
    plan.steps.erase(std::remove(plan.steps.begin(), plan.steps.end(), nullptr),
                     plan.steps.end());
  splitReformatsByParts(plan);
}

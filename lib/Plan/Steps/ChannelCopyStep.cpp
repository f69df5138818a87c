//===- ChannelCopyStep.cpp - Concat and Split along channels --------------===//
//
// Concat/Split along the channels of NHWC tensors (or along any axis in
// ONNX layout): copies of a contiguous channel range of each pixel, through
// a byte table where they requantize, or quantized from f32.
//
// The kind's row is in qopt/Plan/PlanSteps.def; this file has what it
// does, its fields in a plan file, what its kernel relies on and its work.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/ChannelCopyStep.h"

#include "PlanFields.h"
#include "PlanVerifier.h"
#include "qopt/Kernels/ByteTable.h"
#include "qopt/Kernels/CopyRun.h"
#include "qopt/Support/Error.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cstring>

#include <emmintrin.h> // SSE2, every x86-64 CPU

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

/// The pieces writing one result, when they gather channels into its
/// consecutive channels: per source tensor, (its channel, the result's
/// channel from the first) pairs; the grid every piece quantizes onto, or
/// none.
struct ChannelCopyStep::Gather {
  struct Source {
    int from;
    std::vector<int64_t> fromChannels, toChannels;
  };
  int to;
  int64_t firstChannel, channels = 0;
  std::optional<QuantizeGrid> grid;
  std::vector<Source> sources;
};

/// Whether two grids are the same.
static bool sameGrid(const std::optional<QuantizeGrid> &a,
                     const std::optional<QuantizeGrid> &b) {
  return a.has_value() == b.has_value() &&
         (!a || (a->scale == b->scale && a->zero == b->zero &&
                 a->isSigned == b->isSigned && a->flip == b->flip));
}

ChannelCopyStep::ChannelCopyStep(std::string name, std::vector<Piece> pieces,
                                 int64_t rows)
    : PlanStep(Kind::ChannelCopy, std::move(name)), pieces(std::move(pieces)),
      rows(rows) {
  // Many short pieces only: a few long ones copy faster one by one.
  if (this->pieces.size() < 8)
    return;
  for (const Piece &p : this->pieces) {
    auto g = llvm::find_if(gathers, [&](auto &g) { return g.to == p.to; });
    if (g == gathers.end()) {
      gathers.push_back({p.to, p.toChannel, 0, p.grid, {}});
      g = gathers.end() - 1;
    }
    // A channel count no tensor has (a hostile plan file, before verify
    // sees the tensors) is left to the piece-by-piece path verify checks.
    constexpr int64_t kMaxGatherChannels = int64_t(1) << 20;
    if (!p.table.empty() || p.from == p.to || p.channels < 1 ||
        p.channels > kMaxGatherChannels - g->channels ||
        p.toChannel != g->firstChannel + g->channels ||
        !sameGrid(p.grid, g->grid)) {
      gathers.clear(); // not a gather: piece by piece
      return;
    }
    auto s =
        llvm::find_if(g->sources, [&](auto &s) { return s.from == p.from; });
    if (s == g->sources.end()) {
      g->sources.push_back({p.from, {}, {}});
      s = g->sources.end() - 1;
    }
    for (int64_t c = 0; c < p.channels; ++c) {
      s->fromChannels.push_back(p.fromChannel + c);
      s->toChannels.push_back(g->channels++);
    }
  }
}

ChannelCopyStep::~ChannelCopyStep() = default;

namespace {

/// Whether `g`'s tensors are NHWC of kinds it can gather (the same kind of
/// 1 or 4 bytes, or f32 onto a grid); a plan file may pair any.
bool gatherFits(const PlanRun &run, int to, int from,
                const std::optional<QuantizeGrid> &grid) {
  const PlanTensor &t = run.tensor(to), &f = run.tensor(from);
  if (t.layout != PlanLayout::Nhwc || f.layout != PlanLayout::Nhwc)
    return false;
  size_t size = getElementByteSize(t.kind);
  return grid ? f.kind == ElementKind::F32
              : f.kind == t.kind && (size == 4 || size == 1);
}

/// One result's gather over pixels [pixelBegin, pixelEnd): the index lists
/// copied pixel by pixel; with a grid, the f32 channels gathered into a row
/// and quantized.
template <typename T, typename Gather>
void gatherChannels(const PlanRun &run, const Gather &g, int64_t pixelBegin,
                    int64_t pixelEnd) {
  int64_t toC = run.tensor(g.to).shape[1];
  char *dst = run.write(g.to);
  auto gatherPixel = [&](int64_t px, auto *out) {
    for (const auto &s : g.sources) {
      const T *in = reinterpret_cast<const T *>(run.read(s.from)) +
                    px * run.tensor(s.from).shape[1];
      const int64_t *from = s.fromChannels.data(), *to = s.toChannels.data();
      for (size_t k = 0, e = s.fromChannels.size(); k < e; ++k)
        out[to[k]] = in[from[k]];
    }
  };
  if (!g.grid) {
    for (int64_t px = pixelBegin; px < pixelEnd; ++px)
      gatherPixel(px, reinterpret_cast<T *>(dst) + px * toC + g.firstChannel);
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    std::vector<float> row(g.channels);
    Isa isa = run.getPlan().isa;
    for (int64_t px = pixelBegin; px < pixelEnd; ++px) {
      gatherPixel(px, row.data());
      quantizeFloats(isa, row.data(), g.channels, *g.grid,
                     reinterpret_cast<uint8_t *>(dst) + px * toC +
                         g.firstChannel);
    }
  }
}

} // namespace

llvm::Error ChannelCopyStep::run(PlanRun &run, int64_t tileBegin,
                                 int64_t tileEnd, void * /*scratch*/) const {
  if (tileBegin >= tileEnd)
    return llvm::Error::success();
  bool gathering = !gathers.empty();
  for (const Gather &g : gathers)
    for (const Gather::Source &s : g.sources)
      gathering &= gatherFits(run, g.to, s.from, g.grid);
  if (gathering) {
    // Rows of pixels: every tensor of the step has the same.
    int64_t width = run.tensor(gathers.front().to).shape[3];
    for (const Gather &g : gathers) {
      if (run.tensor(g.sources.front().from).kind == ElementKind::F32)
        gatherChannels<float>(run, g, tileBegin * width, tileEnd * width);
      else
        gatherChannels<uint8_t>(run, g, tileBegin * width, tileEnd * width);
    }
    return llvm::Error::success();
  }
  for (const Piece &p : pieces) {
    if (p.channels == 0)
      continue; // nothing to copy, maybe from an empty constant's null bytes
    const PlanTensor &from = run.tensor(p.from), &to = run.tensor(p.to);
    size_t size = getElementByteSize(to.kind);
    // NHWC: a tile is a row of pixels, each with its channels. ONNX layout:
    // a tile is one row, its span the elements from the axis on.
    bool nhwc = from.layout == PlanLayout::Nhwc;
    int64_t width = nhwc ? from.shape[3] : 1;
    int64_t fromC = nhwc ? from.shape[1] : from.numElements() / rows;
    int64_t toC = nhwc ? to.shape[1] : to.numElements() / rows;
    const char *src = run.read(p.from);
    char *dst = run.write(p.to);
    if (p.grid) { // f32 -> int8 bytes: the tiles' pixels in one call
      int64_t first = tileBegin * width, pixels = (tileEnd - tileBegin) * width;
      quantizeFloatRuns(
          run.getPlan().isa,
          reinterpret_cast<const float *>(src) + first * fromC + p.fromChannel,
          fromC, p.channels, pixels, *p.grid,
          reinterpret_cast<uint8_t *>(dst) + first * toC + p.toChannel, toC);
      continue;
    }
    for (int64_t pixel = tileBegin * width, end = tileEnd * width; pixel < end;
         ++pixel) {
      char *dstPixel = dst + (pixel * toC + p.toChannel) * size;
      const char *srcPixel = src + (pixel * fromC + p.fromChannel) * size;
      if (p.table.empty()) {
        // The verifier lets a piece copy within one tensor, and a plan
        // file may place two tensors on the same bytes.
        size_t bytes = p.channels * size;
        uintptr_t to = reinterpret_cast<uintptr_t>(dstPixel),
                  from = reinterpret_cast<uintptr_t>(srcPixel);
        if (to < from + bytes && from < to + bytes)
          std::memmove(dstPixel, srcPixel, bytes);
        else
          copyRun(dstPixel, srcPixel, int64_t(bytes));
        continue;
      }
      lookupBytes(run.getPlan().isa, p.table.data(),
                  reinterpret_cast<const uint8_t *>(srcPixel), p.channels,
                  reinterpret_cast<uint8_t *>(dstPixel));
    }
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Fields, checks, work
//===----------------------------------------------------------------------===//

llvm::Error ChannelCopyStep::writeFields(planfile::PlanEncoder &encoder) const {
  FieldSink &out = encoder.out;
  out.i64(rows, "channel copy rows");
  out.u64(pieces.size(), "pieces");
  for (const Piece &piece : pieces) {
    out.i32(piece.from, "piece");
    out.i32(piece.to, "piece");
    out.i64(piece.fromChannel, "piece");
    out.i64(piece.toChannel, "piece");
    out.i64(piece.channels, "piece");
    out.blob(piece.table, "piece table");
    out.flag(piece.grid.has_value(), "piece grid flag");
    if (piece.grid)
      out.grid(*piece.grid);
  }
  return llvm::Error::success();
}

std::unique_ptr<PlanStep>
planfile::readChannelCopyStep(PlanDecoder &decoder, Plan &,
                              const std::string &name) {
  FieldSource &in = decoder.in;
  int64_t rows = in.i64("channel copy rows");
  std::vector<ChannelCopyStep::Piece> pieces(in.count(40, "pieces"));
  for (ChannelCopyStep::Piece &p : pieces) {
    p.from = in.i32("piece");
    p.to = in.i32("piece");
    p.fromChannel = in.i64("piece");
    p.toChannel = in.i64("piece");
    p.channels = in.i64("piece");
    llvm::StringRef table = in.blob("piece table");
    p.table.assign(table.bytes_begin(), table.bytes_end());
    if (decoder.version >= 6 && in.flag("piece grid flag"))
      p.grid = in.grid();
  }
  return std::make_unique<ChannelCopyStep>(name, std::move(pieces), rows);
}

llvm::Error ChannelCopyStep::verify(const PlanVerifier &check) const {
  const ChannelCopyStep &step = *this;
  const Plan &plan = check.getPlan();
  if (auto err = check.checkIds(step, false))
    return err;
  for (const ChannelCopyStep::Piece &p : step.getPieces()) {
    if (!llvm::is_contained(step.inputs, p.from) ||
        !llvm::is_contained(step.outputs, p.to))
      return makeError("a piece copies from a tensor the step does not "
                       "read or into one it does not write");
    const PlanTensor &from = plan.tensors[p.from], &to = plan.tensors[p.to];
    if (p.grid) {
      if (from.kind != ElementKind::F32 || !PlanVerifier::isInt8Kind(to.kind) ||
          !p.table.empty())
        return makeError("a piece quantizes '" + from.name + "' into '" +
                         to.name + "', which is not f32 into int8 bytes");
      if (auto err = check.checkGrid(*p.grid, to))
        return err;
    }
    unsigned size = getElementByteSize(from.kind);
    int64_t rows = step.getNumTiles();
    // Each test only once the ones before it hold: no subtraction or
    // product below can overflow.
    auto fitsBoth = [&]() {
      if (size == 0 || (!p.grid && getElementByteSize(to.kind) != size) ||
          p.channels < 0 || p.fromChannel < 0 || p.toChannel < 0 ||
          !(p.table.empty() || (p.table.size() == 256 && size == 1)))
        return false;
      int64_t fromWidth, toWidth;
      if (from.layout == PlanLayout::Nhwc) {
        int64_t pixelRows;
        if (to.layout != PlanLayout::Nhwc || from.shape[0] != to.shape[0] ||
            from.shape[2] != to.shape[2] || from.shape[3] != to.shape[3] ||
            llvm::MulOverflow(from.shape[0], from.shape[2], pixelRows) ||
            rows != pixelRows)
          return false;
        fromWidth = from.shape[1];
        toWidth = to.shape[1];
      } else {
        // Rows in ONNX layout: each tensor's elements are whole rows.
        if (to.layout != PlanLayout::Onnx || rows <= 0 ||
            from.numElements() % rows || to.numElements() % rows)
          return false;
        fromWidth = from.numElements() / rows;
        toWidth = to.numElements() / rows;
      }
      return p.channels <= fromWidth - p.fromChannel &&
             p.channels <= toWidth - p.toChannel;
    };
    bool fits = fitsBoth();
    if (!fits)
      return makeError("a piece of " + llvm::Twine(p.channels) +
                       " channels from '" + from.name + "' to '" + to.name +
                       "' does not fit both tensors' pixels and channels "
                       "(or rows)");
  }
  return llvm::Error::success();
}

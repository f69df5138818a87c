//===- ReformatStep.cpp - Layout changes ----------------------------------===//
//
// A 4-D tensor between NCHW (ONNX layout) and NHWC, s8 <-> u8 (+128), or
// into its place in a Concat's NCHW result.
//
// The kind's row is in qopt/Plan/PlanSteps.def; this file has what it
// does, its fields in a plan file, what its kernel relies on and its work.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/ReformatStep.h"

#include "PlanFields.h"
#include "PlanVerifier.h"
#include "qopt/Kernels/Transpose.h"
#include "qopt/Support/Error.h"

#include <cstring>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

int64_t ReformatStep::getNumTiles() const { return shape[0] * shape[2]; }

namespace {

/// Rows (n, h) of a 4-D tensor moved between NCHW and NHWC; `flip` toggles
/// the top bit of each byte (s8 <-> u8 + 128). NCHW row (n, c) of h * w
/// elements is row n * batchRows + firstRow + c of rows `rowStride` apart,
/// from `columnOffset` on.
template <typename T>
void reformatRows(const T *in, T *out, const Shape &shape, bool toNhwc,
                  bool flip, int64_t rowStride, int64_t columnOffset,
                  int64_t firstRow, int64_t batchRows, int64_t rowBegin,
                  int64_t rowEnd) {
  int64_t c = shape[1], h = shape[2], w = shape[3];
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    int64_t n = row / h, y = row % h;
    for (int64_t ch = 0; ch < c; ++ch) {
      int64_t nchw =
          (n * batchRows + firstRow + ch) * rowStride + columnOffset + y * w;
      int64_t nhwc = (n * h + y) * w * c + ch;
      for (int64_t x = 0; x < w; ++x) {
        const T &from = toNhwc ? in[nchw + x] : in[nhwc + x * c];
        T &to = toNhwc ? out[nhwc + x * c] : out[nchw + x];
        if constexpr (sizeof(T) == 1)
          to = flip ? static_cast<T>(from ^ 0x80) : from;
        else
          to = from;
      }
    }
  }
}

} // namespace

llvm::Error ReformatStep::run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                              void * /*scratch*/) const {
  const PlanTensor &from = run.tensor(inputs[0]);
  const PlanTensor &to = run.tensor(outputs[0]);
  bool toNhwc = to.layout == PlanLayout::Nhwc;
  bool flip = from.getStoredFlip() != to.getStoredFlip();
  int64_t stride = rowStride ? rowStride : shape[2] * shape[3];
  int64_t rows = batchRows ? batchRows : shape[1];
  switch (getElementByteSize(from.kind)) {
  case 1:
    reformatRows(reinterpret_cast<const uint8_t *>(run.read(inputs[0])),
                 reinterpret_cast<uint8_t *>(run.write(outputs[0])), shape,
                 toNhwc, flip, stride, columnOffset, firstRow, rows, tileBegin,
                 tileEnd);
    return llvm::Error::success();
  case 4: {
    // Each image row: a transpose between its pixels' channels and its
    // channels' rows.
    const uint32_t *in =
        reinterpret_cast<const uint32_t *>(run.read(inputs[0]));
    uint32_t *out = reinterpret_cast<uint32_t *>(run.write(outputs[0]));
    int64_t c = shape[1], h = shape[2], w = shape[3];
    Isa isa = run.getPlan().isa;
    for (int64_t row = tileBegin; row < tileEnd; ++row) {
      int64_t n = row / h, y = row % h;
      int64_t pixels = (n * h + y) * w * c;
      int64_t channels = (n * rows + firstRow) * stride + columnOffset + y * w;
      if (toNhwc)
        transpose32(isa, in + channels, stride, c, w, out + pixels, c);
      else
        transpose32(isa, in + pixels, c, w, c, out + channels, stride);
    }
    return llvm::Error::success();
  }
  default:
    return makeError("reformat of '" + from.name + "': no NHWC layout for " +
                     getElementKindName(from.kind));
  }
}

//===----------------------------------------------------------------------===//
// Fields, checks, work
//===----------------------------------------------------------------------===//

llvm::Error ReformatStep::writeFields(planfile::PlanEncoder &encoder) const {
  FieldSink &out = encoder.out;
  out.ints(shape, "reformat shape");
  for (int64_t v : {rowStride, columnOffset, firstRow, batchRows})
    out.i64(v, "reformat placement");
  return llvm::Error::success();
}

std::unique_ptr<PlanStep> planfile::readReformatStep(PlanDecoder &decoder,
                                                     Plan &,
                                                     const std::string &name) {
  FieldSource &in = decoder.in;
  auto r = std::make_unique<ReformatStep>(name);
  r->shape = in.ints("reformat shape");
  if (decoder.version >= 6) {
    for (int64_t *v :
         {&r->rowStride, &r->columnOffset, &r->firstRow, &r->batchRows})
      *v = in.i64("reformat placement");
  }
  if (!in.failed && r->shape.size() != 4)
    in.fail("reformat '" + name + "' is not of a 4-D shape");
  return r;
}

llvm::Error ReformatStep::verify(const PlanVerifier &check) const {
  const ReformatStep &step = *this;
  const Plan &plan = check.getPlan();
  if (auto err = check.checkOperands(step, 1, 1))
    return err;
  const PlanTensor &from = plan.tensors[step.inputs[0]];
  const PlanTensor &to = plan.tensors[step.outputs[0]];
  unsigned size = getElementByteSize(from.kind);
  bool placed = step.rowStride != 0 || step.columnOffset != 0 ||
                step.firstRow != 0 || step.batchRows != 0;
  if (step.shape.size() != 4 || from.shape != step.shape ||
      (!placed && to.shape != step.shape) || from.kind != to.kind ||
      from.layout == to.layout || (size != 1 && size != 4))
    return makeError("moves " + shapeToString(step.shape) + " from '" +
                     from.name + "' to '" + to.name +
                     "', which are not that shape in the two layouts with "
                     "one element kind of 1 or 4 bytes");
  if (!placed)
    return llvm::Error::success();
  // Rows of h * w elements, rowStride apart from columnOffset on, rows
  // firstRow to firstRow + C of batchRows an image, inside the result;
  // each product checked before the next uses it.
  const Shape &s = step.shape;
  int64_t batchRows = step.batchRows ? step.batchRows : s[1];
  int64_t rows, rowElements, total;
  bool fits = to.layout == PlanLayout::Onnx && step.rowStride > 0 &&
              step.columnOffset >= 0 && step.firstRow >= 0 &&
              step.batchRows >= 0 && s[1] <= batchRows - step.firstRow &&
              !llvm::MulOverflow(s[0], batchRows, rows) &&
              !llvm::MulOverflow(s[2], s[3], rowElements) &&
              rowElements <= step.rowStride - step.columnOffset &&
              !llvm::MulOverflow(rows, step.rowStride, total) &&
              total == to.numElements();
  if (!fits)
    return makeError("places the rows of " + shapeToString(s) + " " +
                     llvm::Twine(step.rowStride) + " elements apart from " +
                     llvm::Twine(step.columnOffset) + " on, from row " +
                     llvm::Twine(step.firstRow) + " of " +
                     llvm::Twine(batchRows) + " an image, in '" + to.name +
                     "', which they do not fit");
  return llvm::Error::success();
}

//===- AveragePoolStep.cpp - Int8 average pooling over NHWC ---------------===//
//
// Each result pixel: for every channel at once, the values of the window's
// taps inside the input (f32, or the stored bytes through the step's value
// table, as the reference dequantizes them) summed in double in the reference
// pooling kernel's order (rows, then columns), divided by the taps counted
// (or, with count_include_pad, by the taps inside the padded input), rounded
// to f32 as the reference stores its f32 result, then quantized as
// q.quantize quantizes. Every rounding is the reference's, in its order, so
// the bytes are too; what changes is the layout (NHWC, channels in a row)
// and that no f32 tensor is made on the way.
//
//===----------------------------------------------------------------------===//

#include "qopt/Plan/Steps/AveragePoolStep.h"
#include "qopt/Interpreter/NNUtil.h"

#include "PlanFields.h"
#include "PlanVerifier.h"
#include "qopt/Support/Error.h"

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

/// The taps of one window dim inside the input padded at its end by
/// `padEnd`, as the reference counts them for count_include_pad: from the
/// window's first position on, at most `kernel`.
static double tapsInsidePadded(int64_t base, int64_t dilation, int64_t size,
                               int64_t padEnd, int64_t kernel) {
  __int128 padLimit = __int128(size) + padEnd - base;
  __int128 taps = padLimit <= 0 ? 0 : (padLimit - 1) / dilation + 1;
  return static_cast<double>(std::min<__int128>(taps, kernel));
}

llvm::Error AveragePoolStep::run(PlanRun &run, int64_t tileBegin,
                                 int64_t tileEnd, void *scratch) const {
  const PoolStep::Window &w = params.window;
  int64_t c = w.channels;
  const char *in = run.read(inputs[0]);
  bool bytes = !params.values.empty();
  char *out = run.write(outputs[0]);
  double *sum = static_cast<double *>(scratch);
  float *mean = reinterpret_cast<float *>(sum + c);
  const float *values = params.values.data();
  for (int64_t row = tileBegin; row < tileEnd; ++row) {
    int64_t n = row / w.outH, oh = row % w.outH;
    int64_t baseH = oh * w.strideH - w.padTop;
    auto [kyBegin, kyEnd] = tapsInside(baseH, w.dilationH, w.inH, w.kernelH);
    for (int64_t ow = 0; ow < w.outW; ++ow) {
      int64_t baseW = ow * w.strideW - w.padLeft;
      auto [kxBegin, kxEnd] = tapsInside(baseW, w.dilationW, w.inW, w.kernelW);
      std::fill(sum, sum + c, 0.0);
      int64_t counted = 0;
      for (int64_t ky = kyBegin; ky < kyEnd; ++ky) {
        int64_t ih = baseH + ky * w.dilationH;
        for (int64_t kx = kxBegin; kx < kxEnd; ++kx) {
          int64_t iw = baseW + kx * w.dilationW;
          int64_t at = ((n * w.inH + ih) * w.inW + iw) * c;
          if (bytes) {
            const uint8_t *x = reinterpret_cast<const uint8_t *>(in) + at;
            for (int64_t ch = 0; ch < c; ++ch)
              sum[ch] += static_cast<double>(values[x[ch]]);
          } else {
            const float *x = reinterpret_cast<const float *>(in) + at;
            for (int64_t ch = 0; ch < c; ++ch)
              sum[ch] += static_cast<double>(x[ch]);
          }
          ++counted;
        }
      }
      double divisor = params.countIncludePad
                           ? tapsInsidePadded(baseH, w.dilationH, w.inH,
                                              params.padBottom, w.kernelH) *
                                 tapsInsidePadded(baseW, w.dilationW, w.inW,
                                                  params.padRight, w.kernelW)
                           : static_cast<double>(counted);
      for (int64_t ch = 0; ch < c; ++ch)
        mean[ch] = static_cast<float>(divisor != 0 ? sum[ch] / divisor : 0.0);
      int64_t pixel = (n * w.outH + oh) * w.outW + ow;
      if (params.output)
        quantizeFloats(isa, mean, c, *params.output,
                       reinterpret_cast<uint8_t *>(out) + pixel * c);
      else
        std::copy(mean, mean + c, reinterpret_cast<float *>(out) + pixel * c);
    }
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Fields, checks, work
//===----------------------------------------------------------------------===//

llvm::Error AveragePoolStep::writeFields(planfile::PlanEncoder &encoder) const {
  FieldSink &out = encoder.out;
  const Params &p = params;
  encoder.window(p.window);
  out.i64(p.padBottom, "pads after");
  out.i64(p.padRight, "pads after");
  out.flag(p.countIncludePad, "count include pad");
  out.floats(p.values, "input values");
  out.optionalGrid(p.output, "output grid flag");
  return llvm::Error::success();
}

std::unique_ptr<PlanStep>
planfile::readAveragePoolStep(PlanDecoder &decoder, Plan &,
                              const std::string &name) {
  FieldSource &in = decoder.in;
  AveragePoolStep::Params p;
  p.window = decoder.window();
  p.padBottom = in.i64("pads after");
  p.padRight = in.i64("pads after");
  p.countIncludePad = in.flag("count include pad");
  p.values = in.floats("input values");
  p.output = in.optionalGrid("output grid flag");
  return std::make_unique<AveragePoolStep>(name, decoder.isa, std::move(p));
}

uint64_t AveragePoolStep::getWork(const Plan &) const {
  return PoolStep::getWindowWork(params.window);
}

llvm::Error AveragePoolStep::verify(const PlanVerifier &check) const {
  const AveragePoolStep &step = *this;
  const Plan &plan = check.getPlan();
  if (auto err = check.checkOperands(step, 1, 1))
    return err;
  const AveragePoolStep::Params &p = step.getParams();
  const PoolStep::Window &w = p.window;
  if (auto err = PlanVerifier::checkWindow(w))
    return err;
  if (p.padBottom < 0 || p.padBottom > PlanVerifier::kMaxGeometry ||
      p.padRight < 0 || p.padRight > PlanVerifier::kMaxGeometry)
    return makeError("a pad is out of range");
  bool bytes = !p.values.empty();
  if (bytes && p.values.size() != 256)
    return makeError("its value table has " + llvm::Twine(p.values.size()) +
                     " entries, not 256");
  if (auto err =
          check.expectNhwc(step.inputs[0], {w.batch, w.channels, w.inH, w.inW},
                           bytes, "its input"))
    return err;
  // A 1 x 1 result is the same bytes in ONNX layout: [N, C] or
  // [N, C, 1, 1] (ReduceMean without or with keepdims).
  const PlanTensor &y = plan.tensors[step.outputs[0]];
  bool flat = w.outH == 1 && w.outW == 1 && y.layout == PlanLayout::Onnx &&
              !p.output && y.kind == ElementKind::F32 &&
              (y.shape == Shape{w.batch, w.channels} ||
               y.shape == Shape{w.batch, w.channels, 1, 1});
  if (!flat)
    if (auto err = check.expectNhwc(step.outputs[0],
                                    {w.batch, w.channels, w.outH, w.outW},
                                    p.output.has_value(), "its result"))
      return err;
  return p.output ? check.checkGrid(*p.output, y) : llvm::Error::success();
}

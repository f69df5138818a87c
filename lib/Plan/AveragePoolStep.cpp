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

#include "qopt/Interpreter/NNUtil.h"
#include "qopt/Plan/Plan.h"

using namespace qopt;
using namespace qopt::rt;

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

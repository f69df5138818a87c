//===- Int8QuantizeTest.cpp - The plan's quantize against QuantMath -------===//

#include "qopt/Kernels/Int8Quantize.h"
#include "qopt/IR/QuantMath.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace qopt;
using namespace qopt::kernels;

namespace {

/// Values where a quantizer goes wrong: exact ties of the grid (both
/// parities), both sides of each saturation bound, NaN, infinities, signed
/// zeros, denormals and magnitudes past int32; then random ones.
std::vector<float> interestingValues(float scale, std::mt19937 &rng) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.0f,
                          -0.0f,
                          std::numeric_limits<float>::quiet_NaN(),
                          -std::numeric_limits<float>::quiet_NaN(),
                          inf,
                          -inf,
                          std::numeric_limits<float>::denorm_min(),
                          -std::numeric_limits<float>::denorm_min(),
                          3e9f,
                          -3e9f,
                          std::numeric_limits<float>::max(),
                          -std::numeric_limits<float>::max()};
  // A quotient just past FLT_MAX (over scale 0x3e6ba5fb), and one of 8.5
  // over a scale below 2^-126 (0x00b9ac15): cases where a quotient through
  // the scale's reciprocal is easily wrong.
  for (uint32_t bits : {0x7e6ba5fbu, 0xfe6ba5fbu, 0x024546d7u}) {
    float x;
    std::memcpy(&x, &bits, sizeof(x));
    v.push_back(x);
  }
  for (int k = -300; k <= 300; ++k) {
    v.push_back((float(k) + 0.5f) * scale);
    v.push_back(float(k) * scale);
    v.push_back(std::nextafter(float(k) * scale, inf));
  }
  std::uniform_real_distribution<float> wide(-400 * scale, 400 * scale);
  for (int i = 0; i < 2000; ++i)
    v.push_back(wide(rng));
  return v;
}

} // namespace

TEST(Int8Quantize, EveryFamilyGivesQuantizeLinearsBytes) {
  std::mt19937 rng(7);
  auto fromBits = [](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
  };
  const float scales[] = {
      0.1f,   1.0f / 3, 0.0078125f,           0.5f,
      1e-30f, 37.5f,    fromBits(0x3e6ba5fb), fromBits(0x00b9ac15)};
  struct Grid {
    bool isSigned;
    int32_t zero;
  };
  const Grid grids[] = {{false, 0}, {false, 128}, {false, 255}, {false, 3},
                        {true, 0},  {true, -128}, {true, 127},  {true, -5}};
  for (Isa isa : getSupportedIsas())
    for (float scale : scales)
      for (const Grid &gr : grids)
        for (uint8_t flip : {uint8_t(0), uint8_t(0x80)}) {
          std::vector<float> x = interestingValues(scale, rng);
          std::shuffle(x.begin() + 12, x.end(), rng);
          QuantizeGrid grid{scale, gr.zero, gr.isSigned, flip};
          ElementKind storage = gr.isSigned ? ElementKind::I8 : ElementKind::U8;
          // Every count up to 40 on the first values (the 8- and 16-wide
          // bodies and each tail), then all of them.
          for (int64_t count = 1; count <= int64_t(x.size());
               count = count < 40 ? count + 1 : int64_t(x.size())) {
            std::vector<uint8_t> out(count + 1, 0xa5);
            quantizeFloats(isa, x.data(), count, grid, out.data());
            for (int64_t i = 0; i < count; ++i) {
              uint8_t want = uint8_t(
                  quant::quantizeValue(x[i], scale, gr.zero, storage) ^ flip);
              ASSERT_EQ(out[i], want)
                  << getIsaName(isa).str() << " x=" << x[i]
                  << " scale=" << scale << " zero=" << gr.zero
                  << (gr.isSigned ? " s8" : " u8") << " flip=" << int(flip);
            }
            ASSERT_EQ(out[count], 0xa5) << "wrote past the end";
            if (count == int64_t(x.size()))
              break;
          }
        }
}

// Runs of channels within pixels, as a copy step quantizes a Concat's
// operand into its part of the result: each run's bytes are
// QuantizeLinear's whatever its length (the 8-wide body and every tail,
// the tails through masked loads), and nothing between the runs, or after
// the last, is written.
TEST(Int8Quantize, RunsWithStridesGiveQuantizeLinearsBytes) {
  std::mt19937 rng(9);
  const float scale = 0.0371f;
  std::vector<float> values = interestingValues(scale, rng);
  for (Isa isa : getSupportedIsas())
    for (int64_t count : {1, 5, 8, 13, 16, 23, 64, 71})
      for (bool isSigned : {false, true}) {
        QuantizeGrid grid{scale, isSigned ? -3 : 117, isSigned,
                          uint8_t(isSigned ? 0x80 : 0)};
        ElementKind storage = isSigned ? ElementKind::I8 : ElementKind::U8;
        const int64_t runs = 37, xStride = count + 3, outStride = count + 5;
        std::vector<float> x(runs * xStride);
        for (size_t i = 0; i < x.size(); ++i)
          x[i] = values[(i * 7919) % values.size()];
        std::vector<uint8_t> out(runs * outStride, 0xa5);
        quantizeFloatRuns(isa, x.data(), xStride, count, runs, grid, out.data(),
                          outStride);
        for (int64_t r = 0; r < runs; ++r)
          for (int64_t i = 0; i < outStride; ++i) {
            uint8_t got = out[r * outStride + i];
            if (i >= count) {
              ASSERT_EQ(got, 0xa5) << "wrote between runs";
              continue;
            }
            float v = x[r * xStride + i];
            uint8_t want = uint8_t(
                quant::quantizeValue(v, scale, grid.zero, storage) ^ grid.flip);
            ASSERT_EQ(got, want) << getIsaName(isa).str() << " count " << count
                                 << " run " << r << " x=" << v;
          }
      }
}

// Planes of an NCHW row into NHWC pixels: every element's byte is
// QuantizeLinear's at its interleaved place, for one to five planes (three,
// an image's, through byte shuffles), every length around the blocks of 16
// pixels, and nothing past the last pixel is written.
TEST(Int8Quantize, PlanesInterleaveIntoPixels) {
  std::mt19937 rng(13);
  const float scale = 0.0213f;
  std::vector<float> values = interestingValues(scale, rng);
  for (Isa isa : getSupportedIsas())
    for (int64_t planes : {1, 2, 3, 4, 5})
      for (int64_t count : {1, 7, 15, 16, 17, 31, 32, 33, 50})
        for (bool isSigned : {false, true}) {
          QuantizeGrid grid{scale, isSigned ? 5 : 131, isSigned,
                            uint8_t(isSigned ? 0x80 : 0)};
          ElementKind storage = isSigned ? ElementKind::I8 : ElementKind::U8;
          const int64_t planeStride = count + 9;
          std::vector<float> x(planes * planeStride);
          for (size_t i = 0; i < x.size(); ++i)
            x[i] = values[(i * 104729 + count) % values.size()];
          std::vector<uint8_t> out(count * planes + 16, 0xa5);
          quantizeFloatPlanes(isa, x.data(), planeStride, planes, count, grid,
                              out.data());
          for (int64_t i = 0; i < count; ++i)
            for (int64_t p = 0; p < planes; ++p) {
              float v = x[p * planeStride + i];
              uint8_t want =
                  uint8_t(quant::quantizeValue(v, scale, grid.zero, storage) ^
                          grid.flip);
              ASSERT_EQ(out[i * planes + p], want)
                  << getIsaName(isa).str() << " planes " << planes << " count "
                  << count << " at " << i << ", plane " << p;
            }
          for (size_t k = count * planes; k < out.size(); ++k)
            ASSERT_EQ(out[k], 0xa5) << "wrote past the last pixel";
        }
}

TEST(Int8Quantize, DynamicGridIsDynamicQuantizeLinears) {
  // ONNX's definition: the range of x widened to hold 0, over 255 steps;
  // the zero point -min / scale rounded half to even and saturated; NaNs
  // never move a bound (the reference's std::min/std::max).
  auto reference = [](const std::vector<float> &x) {
    float lo = 0.0f, hi = 0.0f;
    for (float v : x) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    float scale = (hi - lo) / 255.0f;
    int64_t zero =
        scale > 0 ? quant::saturateToStorage(std::nearbyintf(0.0f - lo / scale),
                                             ElementKind::U8)
                  : 0;
    return std::make_pair(scale, zero);
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::mt19937 rng(11);
  std::vector<std::vector<float>> inputs = {
      {},
      {0.0f, -0.0f, 0.0f},
      {nan, 1.0f, nan},
      {-3.0f},
      {2.5f, -0.5f, nan, 7.25f, -0.0f, 1e-30f, -1e-30f, 3.0f, 4.0f},
      // One end: all positive (zero point 0) and all negative (255).
      {0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7.5f, 8.5f, 9.5f},
      {-0.5f, -1.5f, -2.5f, -3.5f, -4.5f, -5.5f, -6.5f, -7.5f, -8.5f},
      // A zero point that is an exact tie: -lo / scale = 127.5.
      {-127.5f, 127.5f}};
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 100, 1000}) {
    std::uniform_real_distribution<float> d(-3.0f, 5.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (float &v : x)
      v = d(rng);
    if (n > 8)
      x[size_t(n / 2)] = nan;
    inputs.push_back(x);
  }
  for (Isa isa : getSupportedIsas())
    for (const std::vector<float> &x : inputs) {
      auto [scale, zero] = reference(x);
      QuantizeGrid g = dynamicQuantizeGrid(isa, x.data(), int64_t(x.size()));
      EXPECT_EQ(std::memcmp(&g.scale, &scale, sizeof(float)), 0)
          << getIsaName(isa).str() << ": scale " << g.scale << " != " << scale
          << " for " << x.size() << " values";
      EXPECT_EQ(g.zero, zero) << getIsaName(isa).str();
      EXPECT_FALSE(g.isSigned);
      EXPECT_EQ(g.flip, 0);
    }
}

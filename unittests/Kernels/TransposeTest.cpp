//===- TransposeTest.cpp - The reformats' transpose on every family -------===//

#include "qopt/Kernels/Transpose.h"

#include "gtest/gtest.h"

#include <vector>

using namespace qopt;
using namespace qopt::kernels;

// Every row and column count around the 8 x 8 blocks, between padded rows
// in both directions: each element lands where the plain loop puts it,
// NaN bit patterns included, and nothing else in the output moves.
TEST(Transpose, EveryFamilyMovesEachElementOnce) {
  const uint32_t kUntouched = 0xa5a5a5a5u;
  for (Isa isa : getSupportedIsas())
    for (int64_t rows = 1; rows <= 19; ++rows)
      for (int64_t cols = 1; cols <= 19; ++cols) {
        int64_t inStride = cols + 3, outStride = rows + 5;
        std::vector<uint32_t> in(rows * inStride);
        for (size_t i = 0; i < in.size(); ++i)
          in[i] = uint32_t(i * 2654435761u) | 0x7fc00000u; // NaNs too
        std::vector<uint32_t> out(cols * outStride, kUntouched);
        transpose32(isa, in.data(), inStride, rows, cols, out.data(),
                    outStride);
        for (int64_t c = 0; c < cols; ++c)
          for (int64_t r = 0; r < outStride; ++r)
            ASSERT_EQ(out[c * outStride + r],
                      r < rows ? in[r * inStride + c] : kUntouched)
                << getIsaName(isa).str() << " " << rows << " x " << cols
                << " at column " << c << ", row " << r;
      }
}

//===- ByteTableTest.cpp - Byte lookups on every ISA path -----------------===//

#include "qopt/Kernels/ByteTable.h"
#include "TestedIsas.h"

#include "gtest/gtest.h"

#include <numeric>
#include <random>
#include <vector>

using namespace qopt;
using namespace qopt::kernels;

// Every byte value through a random table, at lengths around the 32- and
// 64-byte blocks and unaligned offsets, and in place: each path (the
// AVX-512 families' VBMI one emulated where the CPU lacks it) gives
// table[x].
TEST(ByteTable, EveryPathLooksUpEveryByte) {
  std::mt19937 rng(3);
  std::vector<uint8_t> table(256);
  for (uint8_t &t : table)
    t = uint8_t(rng());
  std::vector<uint8_t> in(256 + 100);
  std::iota(in.begin(), in.begin() + 256, 0); // every value once
  for (size_t i = 256; i < in.size(); ++i)
    in[i] = uint8_t(rng());
  for (Isa isa : getTestedIsas()) {
    for (int64_t offset : {0, 1, 7}) {
      for (int64_t count :
           {0, 1, 31, 32, 33, 63, 64, 65, 95, 127, 128, 256, 300}) {
        if (offset + count > int64_t(in.size()))
          continue;
        std::vector<uint8_t> out(count + 2, 0xa5);
        lookupBytes(isa, table.data(), in.data() + offset, count,
                    out.data() + 1);
        for (int64_t i = 0; i < count; ++i)
          ASSERT_EQ(out[i + 1], table[in[offset + i]])
              << getIsaName(isa).str() << " offset " << offset << " count "
              << count << " at " << i;
        EXPECT_EQ(out[0], 0xa5) << "wrote before the output";
        EXPECT_EQ(out[count + 1], 0xa5) << "wrote past the output";
      }
    }
    std::vector<uint8_t> same(in.begin(), in.begin() + 256);
    lookupBytes(isa, table.data(), same.data(), 256, same.data());
    for (int v = 0; v < 256; ++v)
      ASSERT_EQ(same[v], table[v]) << getIsaName(isa).str() << " in place";
  }
}

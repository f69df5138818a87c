//===- Int8GemmTest.cpp - Every int8 GEMM family against a plain loop -----===//

#include "qopt/Kernels/Int8Gemm.h"
#include "TestedIsas.h"

#ifdef QOPT_HAVE_EMULATED_KERNELS
// The families built over portable intrinsics, as gemm::emulated::*.
#define QOPT_EMULATED_INTRINSICS
#include "Emulated/EmulatedAmx.h"
#include "GemmKernels.h"
#endif

#include "gtest/gtest.h"

#include <cstdlib>
#include <functional>
#include <random>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
#define QOPT_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QOPT_TEST_UNDER_ASAN 1
#endif
#endif
#ifdef QOPT_TEST_UNDER_ASAN
#include <sanitizer/asan_interface.h>
#endif

using namespace qopt;
using namespace qopt::kernels;

namespace {

struct Shape {
  int64_t m, n, k;
};

/// Fills A and B with random values that include the extremes (0 and 255,
/// -128 and 127), where a saturating instruction would go wrong.
void fill(std::mt19937 &rng, std::vector<uint8_t> &a, std::vector<int8_t> &b) {
  std::uniform_int_distribution<int> pick(0, 9);
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t &x : a) {
    int p = pick(rng);
    x = p == 0 ? 255 : p == 1 ? 0 : uint8_t(byte(rng));
  }
  for (int8_t &x : b) {
    int p = pick(rng);
    x = p == 0 ? -128 : p == 1 ? 127 : int8_t(byte(rng) - 128);
  }
}

/// getGemmScratchBytes(b, m) bytes, 64-byte aligned, freed with the object;
/// not zeroed (a plan's scratch holds what the last step left there). Under
/// ASan, the bytes past them are poisoned: a kernel using more is reported.
struct GemmScratch {
  GemmScratch(const PackedInt8Weights &b, int64_t m)
      : used(getGemmScratchBytes(b, m)), bytes(used + 64, char(0xa5)) {
#ifdef QOPT_TEST_UNDER_ASAN
    char *end = static_cast<char *>(get()) + used;
    ASAN_POISON_MEMORY_REGION(end, bytes.data() + bytes.size() - end);
#endif
  }
  ~GemmScratch() {
#ifdef QOPT_TEST_UNDER_ASAN
    ASAN_UNPOISON_MEMORY_REGION(bytes.data(), bytes.size());
#endif
  }
  GemmScratch(const GemmScratch &) = delete;
  GemmScratch &operator=(const GemmScratch &) = delete;
  void *get() {
    return reinterpret_cast<void *>(
        (reinterpret_cast<uintptr_t>(bytes.data()) + 63) & ~uintptr_t(63));
  }
  size_t used;
  std::vector<char> bytes;
};

/// C = A * B^T by some family's kernel, for B packed for that family.
using GemmKernel = std::function<void(const uint8_t *a, int64_t lda, int64_t m,
                                      const PackedInt8Weights &b, int32_t *c,
                                      int64_t ldc, void *scratch)>;

void runDispatched(const uint8_t *a, int64_t lda, int64_t m,
                   const PackedInt8Weights &b, int32_t *c, int64_t ldc,
                   void *scratch) {
  gemmU8S8(a, lda, m, b, c, ldc, scratch);
}

void checkFamily(Isa isa, Shape s, int64_t padA, int64_t padC, unsigned seed,
                 const GemmKernel &kernel = runDispatched) {
  std::mt19937 rng(seed);
  int64_t lda = s.k + padA, ldb = s.k + 3, ldc = s.n + padC;
  std::vector<uint8_t> a(s.m * lda);
  std::vector<int8_t> b(s.n * ldb);
  fill(rng, a, b);
  PackedInt8Weights packed(isa, b.data(), s.n, s.k, ldb);
  const int32_t kUntouched = 0x5a5a5a5a;
  std::vector<int32_t> c(s.m * ldc, kUntouched);
  GemmScratch scratch(packed, s.m);
  kernel(a.data(), lda, s.m, packed, c.data(), ldc, scratch.get());
  for (int64_t n = 0; n < s.n; ++n) {
    int32_t sum = 0;
    for (int64_t k = 0; k < s.k; ++k)
      sum += b[n * ldb + k];
    ASSERT_EQ(packed.getChannelSums()[n], sum) << "channel " << n;
  }
  for (int64_t m = 0; m < s.m; ++m) {
    for (int64_t n = 0; n < s.n; ++n) {
      int32_t want = 0;
      for (int64_t k = 0; k < s.k; ++k)
        want += int32_t(a[m * lda + k]) * b[n * ldb + k];
      ASSERT_EQ(c[m * ldc + n], want)
          << getIsaName(isa).str() << " m=" << s.m << " n=" << s.n
          << " k=" << s.k << " at (" << m << ", " << n << ")";
    }
    for (int64_t n = s.n; n < ldc; ++n)
      ASSERT_EQ(c[m * ldc + n], kUntouched)
          << getIsaName(isa).str() << ": wrote past column " << s.n;
  }
}

// Row counts around each family's register tile (8 and 6 rows, the avx2
// family's split of 7 or 8 last rows into two tiles, amx's blocks of 16 and
// 32), channel counts that end a panel of 16, the avx2 family's half panel
// of 8 or amx's pair of panels anywhere, k around the groups of 4, the avx2
// widening's 16 bytes and amx's chunks of 64; 8 and 11 panels (avx512vnni's
// columns of 4 + 4 and 4 + 3 + 4) and 49 and 9 rows (its tiles of 7 x 7
// and 5 + 4, rows split evenly).
const Shape kShapes[] = {
    {1, 1, 1},     {1, 16, 4},    {2, 5, 3},     {3, 17, 5},    {7, 48, 64},
    {8, 49, 67},   {9, 64, 300},  {17, 33, 9},   {24, 96, 128}, {5, 3, 1000},
    {16, 100, 37}, {4, 13, 8},    {11, 30, 21},  {6, 75, 12},   {13, 9, 2},
    {12, 8, 33},   {18, 24, 17},  {19, 7, 64},   {14, 16, 20},  {49, 24, 36},
    {50, 8, 8},    {32, 32, 64},  {33, 31, 65},  {31, 47, 127}, {64, 80, 192},
    {15, 20, 63},  {48, 16, 129}, {65, 33, 576}, {40, 64, 700}, {23, 128, 40},
    {10, 170, 12}};

TEST(Int8Gemm, EveryFamilyMatchesThePlainLoop) {
  unsigned seed = 1;
  for (Isa isa : getTestedIsas())
    for (const Shape &s : kShapes) {
      checkFamily(isa, s, 0, 0, seed++);
      checkFamily(isa, s, 5, 3, seed++); // rows further apart than k / n
    }
}

#ifdef QOPT_HAVE_EMULATED_KERNELS
/// Runs family `kernel` as gemmU8S8 would, over all of b's panels.
template <typename Kernel> GemmKernel emulatedFamily(Kernel kernel) {
  return [kernel](const uint8_t *a, int64_t lda, int64_t m,
                  const PackedInt8Weights &b, int32_t *c, int64_t ldc,
                  void *scratch) {
    gemm::Panels panels{b.getPanel(0),      int64_t(b.getPanelBytes()),
                        b.getNumPanels(),   b.getNumGroups(),
                        b.getNumChannels(), b.getDepth()};
    kernel(a, lda, m, panels, c, ldc, scratch);
  };
}

// The vector and tile families over portable intrinsics: their arithmetic,
// edges and memory accesses (under ASan in CI) on any machine. The
// emulated AMX aborts wherever the hardware would fault.
TEST(Int8Gemm, EmulatedFamiliesMatchThePlainLoop) {
  struct Family {
    Isa isa;
    GemmKernel kernel;
  };
  const Family families[] = {
      {Isa::AvxVnni, emulatedFamily([](const uint8_t *a, int64_t lda, int64_t m,
                                       const gemm::Panels &b, int32_t *c,
                                       int64_t ldc, void *) {
         gemm::emulated::avxVnni(a, lda, m, b, c, ldc);
       })},
      {Isa::Avx512Vnni, emulatedFamily([](const uint8_t *a, int64_t lda,
                                          int64_t m, const gemm::Panels &b,
                                          int32_t *c, int64_t ldc, void *) {
         gemm::emulated::avx512Vnni(a, lda, m, b, c, ldc);
       })},
      {Isa::Amx, emulatedFamily(gemm::emulated::amx)}};
  unsigned seed = 1000;
  for (const Family &f : families)
    for (const Shape &s : kShapes) {
      checkFamily(f.isa, s, 0, 0, seed++, f.kernel);
      checkFamily(f.isa, s, 5, 3, seed++, f.kernel);
    }
}

/// Channels [16, n) only, as an int8 conv's channel block asks: B from its
/// second panel on, C exactly the block's width.
void checkPanelRange(Isa isa, Shape s, unsigned seed,
                     void (*kernel)(const uint8_t *, int64_t, int64_t,
                                    const gemm::Panels &, int32_t *, int64_t,
                                    void *)) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> a(s.m * s.k);
  std::vector<int8_t> b(s.n * s.k);
  fill(rng, a, b);
  PackedInt8Weights packed(isa, b.data(), s.n, s.k, s.k);
  int64_t width = s.n - 16;
  gemm::Panels panels{packed.getPanel(1),
                      int64_t(packed.getPanelBytes()),
                      packed.getNumPanels() - 1,
                      packed.getNumGroups(),
                      width,
                      s.k};
  std::vector<int32_t> c(s.m * width);
  GemmScratch scratch(packed, s.m);
  kernel(a.data(), s.k, s.m, panels, c.data(), width, scratch.get());
  for (int64_t m = 0; m < s.m; ++m)
    for (int64_t n = 16; n < s.n; ++n) {
      int32_t want = 0;
      for (int64_t k = 0; k < s.k; ++k)
        want += int32_t(a[m * s.k + k]) * b[n * s.k + k];
      ASSERT_EQ(c[m * width + n - 16], want)
          << getIsaName(isa).str() << " m=" << s.m << " n=" << s.n
          << " k=" << s.k << " at (" << m << ", " << n << ")";
    }
}

TEST(Int8Gemm, EmulatedFamiliesRunAPanelRangeAndEachOthersPanels) {
  auto avx512 = [](const uint8_t *a, int64_t lda, int64_t m,
                   const gemm::Panels &b, int32_t *c, int64_t ldc, void *) {
    gemm::emulated::avx512Vnni(a, lda, m, b, c, ldc);
  };
  unsigned seed = 2000;
  for (Shape s : {Shape{33, 50, 130}, Shape{5, 33, 9}, Shape{48, 64, 576}}) {
    checkPanelRange(Isa::Amx, s, seed++, gemm::emulated::amx);
    checkPanelRange(Isa::Avx512Vnni, s, seed++, avx512);
    // What gemmU8S8 runs for gemms too small for tiles: the avx512vnni
    // kernel on panels packed for amx (padded to whole tiles).
    checkPanelRange(Isa::Amx, s, seed++, avx512);
  }
}

// Tile state is per thread: two threads at once each configure their own.
TEST(Int8Gemm, EmulatedAmxOnTwoThreadsAtOnce) {
  auto amx = emulatedFamily(gemm::emulated::amx);
  std::thread other([&] {
    for (unsigned seed = 0; seed < 20; ++seed)
      checkFamily(Isa::Amx, {40, 48, 200}, 0, 0, 3000 + seed, amx);
  });
  for (unsigned seed = 0; seed < 20; ++seed)
    checkFamily(Isa::Amx, {33, 17, 70}, 5, 3, 4000 + seed, amx);
  other.join();
}

TEST(Int8Gemm, EmulatedAmxFaultsWhereTheHardwareWould) {
  EXPECT_DEATH(_tile_zero(0), "before LDTILECFG");
  alignas(64) uint8_t config[64] = {};
  config[0] = 1;
  config[16] = 64; // tile 0: 64 bytes a row
  config[48] = 17; // and 17 rows
  EXPECT_DEATH(_tile_loadconfig(config), "more than 16 rows");
}
#endif

TEST(Int8Gemm, ExtremesAccumulateWithoutSaturating) {
  // 255 * -128 over k = 4096: -133,693,440, far past any 16-bit sum.
  for (Isa isa : getSupportedIsas()) {
    int64_t m = 4, n = 20, k = 4096;
    std::vector<uint8_t> a(m * k, 255);
    std::vector<int8_t> b(n * k, -128);
    PackedInt8Weights packed(isa, b.data(), n, k, k);
    std::vector<int32_t> c(m * n);
    GemmScratch scratch(packed, m);
    gemmU8S8(a.data(), k, m, packed, c.data(), n, scratch.get());
    for (int32_t x : c)
      ASSERT_EQ(x, 255 * -128 * 4096) << getIsaName(isa).str();
  }
}

// Packing is layout only (no instruction of the family runs), so every
// family's layout round-trips here: plan files store weights unpacked. 33
// channels fill both halves of an avx2 panel and start a third panel; k = 9
// ends in a partial group.
TEST(Int8Gemm, PackedWeightsUnpackToTheOriginal) {
  const int64_t n = 33, k = 9, ldb = 11;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> value(-128, 127);
  std::vector<int8_t> b(n * ldb);
  for (int8_t &v : b)
    v = int8_t(value(rng));
  for (Isa isa :
       {Isa::Scalar, Isa::Avx2, Isa::AvxVnni, Isa::Avx512Vnni, Isa::Amx}) {
    PackedInt8Weights packed(isa, b.data(), n, k, ldb);
    std::vector<int8_t> back(n * k, 0);
    packed.unpack(back.data(), k);
    for (int64_t c = 0; c < n; ++c)
      for (int64_t i = 0; i < k; ++i)
        ASSERT_EQ(back[c * k + i], b[c * ldb + i])
            << getIsaName(isa).str() << " channel " << c << " k " << i;
  }
}

TEST(CpuFeatures, QoptIsaForcesAFamilyOrSaysWhyNot) {
  ::setenv("QOPT_ISA", "scalar", 1);
  auto isa = selectIsa();
  ASSERT_TRUE(bool(isa)) << llvm::toString(isa.takeError());
  EXPECT_EQ(*isa, Isa::Scalar);
  ::setenv("QOPT_ISA", "sse9", 1);
  auto bad = selectIsa();
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "unknown instruction set 'sse9' (expected scalar, avx2, avxvnni, "
            "avx512vnni or amx)");
  ::unsetenv("QOPT_ISA");
  auto best = selectIsa();
  ASSERT_TRUE(bool(best));
  EXPECT_EQ(*best, getSupportedIsas().back());
  EXPECT_TRUE(getHostCpuFeatures().supports(Isa::Scalar));
}

} // namespace

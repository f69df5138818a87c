//===- TypesTest.cpp - Type uniquing and printing -------------------------===//

#include "qopt/IR/Types.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Support/FloatFormat.h"

#include "gtest/gtest.h"

using namespace qopt;

TEST(TypesTest, ElementTypesAreUniqued) {
  Context ctx;
  EXPECT_EQ(ctx.getElementType(ElementKind::F32),
            ctx.getElementType(ElementKind::F32));
  EXPECT_NE(ctx.getElementType(ElementKind::F32),
            ctx.getElementType(ElementKind::F16));
}

TEST(TypesTest, QuantTypesAreUniquedByParameters) {
  Context ctx;
  auto *a =
      ctx.getPerTensorQuantType(ElementKind::U8, ElementKind::F32, 0.05f, 128);
  auto *b =
      ctx.getPerTensorQuantType(ElementKind::U8, ElementKind::F32, 0.05f, 128);
  auto *c =
      ctx.getPerTensorQuantType(ElementKind::U8, ElementKind::F32, 0.05f, 127);
  auto *d =
      ctx.getPerTensorQuantType(ElementKind::I8, ElementKind::F32, 0.05f, 128);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  auto *axis0 = ctx.getQuantType(ElementKind::I8, ElementKind::F32, 0,
                                 {0.5f, 0.25f}, {0, 0});
  auto *axis1 = ctx.getQuantType(ElementKind::I8, ElementKind::F32, 1,
                                 {0.5f, 0.25f}, {0, 0});
  EXPECT_NE(axis0, axis1);
  EXPECT_TRUE(axis0->isPerAxis());
  EXPECT_EQ(axis0->getNumChannels(), 2u);
}

TEST(TypesTest, TensorTypesAreUniquedByShapeAndElement) {
  Context ctx;
  const Type *f32 = ctx.getElementType(ElementKind::F32);
  auto *t1 = ctx.getTensorType(llvm::ArrayRef<int64_t>{1, 3}, f32);
  auto *t2 = ctx.getTensorType(llvm::ArrayRef<int64_t>{1, 3}, f32);
  auto *t3 = ctx.getTensorType(llvm::ArrayRef<int64_t>{3, 1}, f32);
  EXPECT_EQ(t1, t2);
  EXPECT_NE(t1, t3);
  auto *sym = ctx.getTensorType({Dim::symbolic("N"), Dim::fixed(3)}, f32);
  auto *dyn = ctx.getTensorType({Dim::dynamic(), Dim::fixed(3)}, f32);
  EXPECT_NE(sym, dyn);
  EXPECT_NE(ctx.getUnrankedTensorType(f32), t1);
  EXPECT_EQ(t1->getNumElements(), 3);
  EXPECT_FALSE(sym->getNumElements().has_value());
}

TEST(TypesTest, PrintsMlirQuantSyntax) {
  Context ctx;
  EXPECT_EQ(typeToString(ctx.getPerTensorQuantType(ElementKind::I8,
                                                   ElementKind::F32, 0.02f, 0)),
            "!quant.uniform<i8:f32, 0.02>");
  EXPECT_EQ(typeToString(ctx.getPerTensorQuantType(
                ElementKind::U8, ElementKind::F32, 0.0078125f, 128)),
            "!quant.uniform<u8:f32, 0.0078125:128>");
  EXPECT_EQ(typeToString(ctx.getQuantType(ElementKind::I8, ElementKind::F32, 0,
                                          {0.021f, 0.017f}, {0, 3})),
            "!quant.uniform<i8:f32:0, {0.021,0.017:3}>");
  auto *t =
      ctx.getTensorType({Dim::symbolic("N"), Dim::fixed(3), Dim::dynamic()},
                        ctx.getElementType(ElementKind::BF16));
  EXPECT_EQ(typeToString(t), "tensor<\"N\"x3x?xbf16>");
  EXPECT_EQ(typeToString(ctx.getUnknownTensorType()), "tensor<*x?>");
}

TEST(TypesTest, ParseTypeRoundTrips) {
  Context ctx;
  for (const char *text :
       {"tensor<1x3x224x224x!quant.uniform<u8:f32, 0.0078125:128>>",
        "tensor<4x3x3x3x!quant.uniform<i8:f32:0, {0.021,0.017,0.034,0.009}>>",
        "tensor<\"batch\"x?xf16>", "tensor<*xi64>", "tensor<f32>",
        "!quant.uniform<u16:bf16, 0.5:32767>"}) {
    auto t = parseType(text, ctx);
    ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
    EXPECT_EQ(typeToString(*t), text);
  }
}

// 4-bit storage and block-wise parameters round trip through the text
// form; a block's parameters are found from an element's coordinates.
TEST(TypesTest, FourBitAndBlockwiseTypes) {
  Context ctx;
  auto t = parseType("tensor<2x6x!quant.uniform<i4:f32:{1:4}, {0.5,0.25:1,"
                     "0.125,1:-2}>>",
                     ctx);
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(typeToString(*t), "tensor<2x6x!quant.uniform<i4:f32:{1:4}, "
                              "{0.5,0.25:1,0.125,1:-2}>>");
  const QuantType *q = llvm::cast<TensorType>(*t)->getQuantType();
  ASSERT_TRUE(q && q->isBlocked() && q->isPerAxis());
  EXPECT_EQ(q->getBlockSize(), 4);
  EXPECT_EQ(getIntegerRange(ElementKind::I4),
            std::make_pair(int64_t(-8), int64_t(7)));
  EXPECT_EQ(getIntegerRange(ElementKind::U4),
            std::make_pair(int64_t(0), int64_t(15)));
  // Elements (r, c) of [2, 6]: block (r, c / 4) of the [2, 2] scales.
  quant::ChannelIndexer blockOf({2, 6}, q);
  std::vector<int64_t> want = {0, 0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3};
  for (int64_t i = 0; i < 12; ++i)
    EXPECT_EQ(blockOf(i), want[i]) << "element " << i;
  // Along axis 0 of [5, 3] in blocks of 2: blocks (r / 2, c) of [3, 3].
  const QuantType *rows = ctx.getQuantType(ElementKind::U4, ElementKind::F32, 0,
                                           std::vector<float>(9, 1.0f),
                                           std::vector<int64_t>(9, 8), 2);
  quant::ChannelIndexer rowBlockOf({5, 3}, rows);
  for (int64_t i = 0; i < 15; ++i)
    EXPECT_EQ(rowBlockOf(i), (i / 3) / 2 * 3 + i % 3) << "element " << i;
  EXPECT_FALSE(bool(quant::checkQuantTypeFits(rows, {5, 3})));
  llvm::Error misfit = quant::checkQuantTypeFits(rows, {6, 4});
  ASSERT_TRUE(bool(misfit));
  llvm::consumeError(std::move(misfit));
  auto bad = parseType("!quant.uniform<i4:f32:{1:0}, {0.5}>", ctx);
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("block size"),
            std::string::npos);
}

TEST(TypesTest, ShortestFloatForms) {
  EXPECT_EQ(formatFloat(0.02f), "0.02");
  EXPECT_EQ(formatFloat(1.0f, true), "1.0");
  EXPECT_EQ(formatFloat(1e-5f), "1e-05");
  EXPECT_EQ(formatFloat(-std::numeric_limits<float>::infinity()), "-inf");
  // Every float32 scale prints to text that parses back to the same bits.
  for (uint32_t bits = 0x3A000000; bits < 0x3F800000; bits += 0x00012345) {
    float f;
    std::memcpy(&f, &bits, 4);
    auto back = parseFloat(formatFloat(f));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(std::memcmp(&f, &*back, 4), 0) << formatFloat(f);
  }
}

TEST(TypesTest, HalfConversionsRoundTripEveryFiniteValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00)
      continue; // inf/nan
    float f = halfToFloat(static_cast<uint16_t>(h));
    EXPECT_EQ(floatToHalf(f), h);
  }
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00); // rounds to infinity
  EXPECT_EQ(floatToBFloat16(bfloat16ToFloat(0x3F80)), 0x3F80);
}

TEST(TypesTest, CheckQuantTypeFindsBadParameters) {
  Context ctx;
  auto reason = [&](const QuantType *q, const TensorType *t = nullptr) {
    return checkQuantType(q, t);
  };
  EXPECT_EQ(reason(ctx.getPerTensorQuantType(ElementKind::U8, ElementKind::F32,
                                             0.5f, 3)),
            "");
  EXPECT_EQ(reason(ctx.getPerTensorQuantType(ElementKind::U8, ElementKind::F32,
                                             0.0f, 3)),
            "scale must be finite and > 0, got 0");
  EXPECT_EQ(reason(ctx.getPerTensorQuantType(ElementKind::U8, ElementKind::F32,
                                             -1.0f, 3)),
            "scale must be finite and > 0, got -1");
  EXPECT_EQ(reason(ctx.getPerTensorQuantType(ElementKind::U8, ElementKind::F32,
                                             0.5f, 300)),
            "zero point 300 is outside the range of u8 [0, 255]");
  auto *perAxis = ctx.getQuantType(ElementKind::I8, ElementKind::F32, 1,
                                   {0.5f, 0.25f, 0.125f}, {0, 0, 0});
  auto *t = ctx.getTensorType(llvm::ArrayRef<int64_t>{2, 4}, perAxis);
  EXPECT_EQ(reason(perAxis, t),
            "per-axis quantization has 3 scales but axis 1 has size 4");
  auto *t1 = ctx.getTensorType(llvm::ArrayRef<int64_t>{2}, perAxis);
  EXPECT_EQ(reason(perAxis, t1),
            "quantization axis 1 is out of range for rank 1");
}

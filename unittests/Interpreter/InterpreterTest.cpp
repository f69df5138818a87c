//===- InterpreterTest.cpp - Reference interpreter ------------------------===//

#include "qopt/Interpreter/Interpreter.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/ToolSupport/Compare.h"

#include "gtest/gtest.h"

using namespace qopt;
using namespace qopt::interp;

namespace {
std::unique_ptr<Model> parse(Context &ctx, llvm::StringRef text) {
  auto m = parseModel(text, "test.qir", ctx);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return nullptr;
  }
  return std::move(*m);
}

Tensor floats(Shape shape, std::vector<float> values) {
  Tensor t(ElementKind::F32, std::move(shape));
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}
} // namespace

TEST(InterpreterTest, QuantizeRoundsHalfToEvenAndSaturates) {
  Context ctx;
  auto m = parse(
      ctx,
      R"(graph @g(%x: tensor<6xf32>) -> (tensor<6x!quant.uniform<u8:f32, 2.0:128>>) {
  %q = q.quantize(%x) : tensor<6x!quant.uniform<u8:f32, 2.0:128>>
  return %q
})");
  ASSERT_TRUE(m);
  auto interp = Interpreter::create(*m);
  ASSERT_TRUE(bool(interp));
  auto out = (*interp)->run({{"x", floats({6}, {0, 2, 3, 1000, -254, -1000})}});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  // 3/2 = 1.5 rounds to 2; saturation at both ends (ONNX test data).
  std::vector<int64_t> want = {128, 129, 130, 255, 1, 0};
  EXPECT_EQ((*out)[0].toInts(), want);
  EXPECT_EQ((*out)[0].kind(), ElementKind::U8);
}

TEST(InterpreterTest, PerAxisDequantize) {
  Context ctx;
  auto m = parse(
      ctx,
      R"(graph @g(%x: tensor<2x3x!quant.uniform<i8:f32:1, {0.5,1.0,2.0:1}>>) -> (tensor<2x3xf32>) {
  %y = q.dequantize(%x) : tensor<2x3xf32>
  return %y
})");
  ASSERT_TRUE(m);
  Tensor x(ElementKind::I8, {2, 3});
  for (int i = 0; i < 6; ++i)
    x.setInt(i, i - 2);
  auto interp = Interpreter::create(*m);
  ASSERT_TRUE(bool(interp));
  auto out = (*interp)->run({{"x", x}});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  // (q - zp[c]) * s[c] for q = -2..3.
  std::vector<double> want = {-1.0, -1.0, -2.0, 0.5, 2.0, 4.0};
  EXPECT_EQ((*out)[0].toDoubles(), want);
}

TEST(InterpreterTest, UnsupportedOpIsReportedBeforeRunning) {
  Context ctx;
  auto m = parse(ctx, R"(graph @g(%x: tensor<2xf32>) -> (tensor<2xf32>) {
  %y = "com.example.Mystery"(%x) : tensor<2xf32> loc("m")
  return %y
})");
  ASSERT_TRUE(m);
  auto interp = Interpreter::create(*m);
  ASSERT_FALSE(bool(interp));
  EXPECT_EQ(llvm::toString(interp.takeError()),
            "node 'm' (com.example.Mystery): the reference interpreter "
            "cannot run op 'com.example.Mystery'");
}

TEST(InterpreterTest, CompareModelsSeesIdenticalAndDifferentGraphs) {
  Context ctx;
  const char *base = R"(graph @g(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %q = q.quantize(%x) : tensor<4x8x!quant.uniform<i8:f32, 0.01>>
  %y = q.dequantize(%q) : tensor<4x8xf32>
  return %y
})";
  const char *coarser = R"(graph @g(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %q = q.quantize(%x) : tensor<4x8x!quant.uniform<i8:f32, 0.02>>
  %y = q.dequantize(%q) : tensor<4x8xf32>
  return %y
})";
  auto a = parse(ctx, base), b = parse(ctx, base), c = parse(ctx, coarser);
  ASSERT_TRUE(a && b && c);
  auto same = compareModels(*a, *b);
  ASSERT_TRUE(bool(same)) << llvm::toString(same.takeError());
  EXPECT_TRUE(same->allIdentical());
  auto diff = compareModels(*a, *c);
  ASSERT_TRUE(bool(diff)) << llvm::toString(diff.takeError());
  EXPECT_FALSE(diff->allIdentical());
  // Quantization error of the coarser grid: at most half its step.
  EXPECT_GT(diff->outputs[0].maxAbsDiff, 0.0);
  EXPECT_LE(diff->outputs[0].maxAbsDiff, 0.01 + 1e-6);
  EXPECT_GT(diff->outputs[0].cosine, 0.99);
}

// The kernels and the dense-constant functions that passes fold with are one
// implementation: their results agree byte for byte, f16 rounding included.
TEST(InterpreterTest, QuantKernelsMatchTheDenseQuantMath) {
  Context ctx;
  auto m = parse(
      ctx,
      R"(graph @g(%x: tensor<2x3xf16>, %w: tensor<2x3x!quant.uniform<i8:f16:1, {0.1,0.2,0.3:2}>>) -> (tensor<2x3x!quant.uniform<u8:f16:0, {0.02,0.05:128}>>, tensor<2x3xf16>, tensor<2x3x!quant.uniform<i16:f16, 0.01:3>>) {
  %q = q.quantize(%x) : tensor<2x3x!quant.uniform<u8:f16:0, {0.02,0.05:128}>>
  %d = q.dequantize(%w) : tensor<2x3xf16>
  %r = q.requantize(%w) : tensor<2x3x!quant.uniform<i16:f16, 0.01:3>>
  return %q, %d, %r
})");
  ASSERT_TRUE(m);
  DenseElementsRef x = quant::makeDense(ElementKind::F16, {2, 3},
                                        {0.3, -1.7, 2.55, 100, -0.01, 6.4});
  DenseElementsRef w =
      quant::makeDenseInt(ElementKind::I8, {2, 3}, {-128, 5, 127, 77, 0, -3});
  auto interp = Interpreter::create(*m);
  ASSERT_TRUE(bool(interp)) << llvm::toString(interp.takeError());
  auto out = (*interp)->run(
      {{"x", Tensor::fromDense(*x)}, {"w", Tensor::fromDense(*w)}});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  const Graph &g = m->getGraph();
  auto quantTypeOf = [&](unsigned i) {
    return g.getOutputs()[i]->getType()->getQuantType();
  };
  const QuantType *wq = g.getInputs()[1]->getType()->getQuantType();
  auto q = quant::quantizeDense(*x, quantTypeOf(0));
  auto d = quant::dequantizeDense(*w, wq, ElementKind::F16);
  auto r = quant::requantizeDense(*w, wq, quantTypeOf(2));
  ASSERT_TRUE(q && d && r);
  auto bytes = [](const Tensor &t) {
    return std::string(t.bytes(), t.byteSize());
  };
  EXPECT_EQ(bytes((*out)[0]), (*q)->getRawBytes());
  EXPECT_EQ(bytes((*out)[1]), (*d)->getRawBytes());
  EXPECT_EQ(bytes((*out)[2]), (*r)->getRawBytes());
  // Not trivially equal: values saturate and differ per channel.
  EXPECT_EQ((*q)->getAsInt(3), 255);
  EXPECT_NE((*r)->getAsInt(0), (*r)->getAsInt(2));
}

//===- ParserTest.cpp - .qir parsing and printing -------------------------===//

#include "qopt/IR/AsmParser.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/Verifier.h"

#include "gtest/gtest.h"

using namespace qopt;

namespace {

std::string print(const Model &m, PrintOptions opts = {}) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printModel(m, os, opts);
  return os.str();
}

std::unique_ptr<Model> parseOrFail(Context &ctx, llvm::StringRef text) {
  auto m = parseModel(text, "test.qir", ctx);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return nullptr;
  }
  return std::move(*m);
}

std::string parseError(Context &ctx, llvm::StringRef text) {
  auto m = parseModel(text, "test.qir", ctx);
  if (m) {
    ADD_FAILURE() << "expected a parse error";
    return {};
  }
  return llvm::toString(m.takeError());
}

const char *kConvText = R"(model {ir_version = 8, opset_import = ["ai.onnx:13"]}

!q0 = !quant.uniform<i8:f32:0, {0.021,0.017}>

graph @main(%x: tensor<1x3x8x8x!quant.uniform<u8:f32, 0.05:128>>) -> (tensor<1x2x8x8xf32>) {
  %w = onnx.Constant() {value = dense_resource<w>} : tensor<2x3x1x1x!q0>
  %xf = q.dequantize(%x) : tensor<1x3x8x8xf32> loc("dq_x")
  %wf = q.dequantize(%w) : tensor<2x3x1x1xf32> loc("dq_w")
  %y = onnx.Conv(%xf, %wf, _) {kernel_shape = [1, 1], "odd name" = "a\"b"} : tensor<1x2x8x8xf32> loc("conv")
  return %y
}
{-#
  resources: {
    "w": "0x0102030405FA"
  }
#-}
)";

} // namespace

TEST(ParserTest, ParsesGraphStructure) {
  Context ctx;
  auto m = parseOrFail(ctx, kConvText);
  ASSERT_TRUE(m);
  Graph &g = m->getGraph();
  EXPECT_EQ(g.getName(), "main");
  ASSERT_EQ(g.getNumInputs(), 1u);
  EXPECT_TRUE(g.getInput(0)->getType()->isQuantized());
  ASSERT_EQ(g.getNumNodes(), 4u);
  const Node &conv = g.getNodes().back();
  EXPECT_EQ(conv.getOp(), "onnx.Conv");
  EXPECT_EQ(conv.getOpType(), "Conv");
  EXPECT_EQ(conv.getName(), "conv");
  ASSERT_EQ(conv.getNumOperands(), 3u);
  EXPECT_EQ(conv.getOperand(2), nullptr);
  EXPECT_EQ(conv.getAttr("kernel_shape")->getInts(),
            (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(*conv.getAttr("odd name")->getIf<std::string>(), "a\"b");
  const Node &w = g.getNodes().front();
  const DenseElements &d = **w.getAttr("value")->getIf<DenseElementsRef>();
  EXPECT_EQ(d.getKind(), ElementKind::I8);
  EXPECT_EQ(d.getNumElements(), 6);
  EXPECT_EQ(d.getAsInt(5), -6);
  // Uses are linked.
  EXPECT_EQ(g.getInput(0)->getUses().size(), 1u);
  EXPECT_TRUE(conv.getResult()->isGraphOutput());
  EXPECT_FALSE(bool(verifyModel(*m)));
}

TEST(ParserTest, PrintParsePrintIsAFixpoint) {
  Context ctx;
  auto m = parseOrFail(ctx, kConvText);
  ASSERT_TRUE(m);
  PrintOptions opts;
  opts.inlineElementsLimit = 4; // the 6-element weight stays a resource
  std::string once = print(*m, opts);
  EXPECT_EQ(once, kConvText);
  Context ctx2;
  auto again = parseOrFail(ctx2, once);
  ASSERT_TRUE(again);
  EXPECT_EQ(print(*again, opts), once);
}

TEST(ParserTest, InlineLimitMovesConstantsIntoText) {
  Context ctx;
  auto m = parseOrFail(ctx, kConvText);
  ASSERT_TRUE(m);
  PrintOptions opts;
  opts.inlineElementsLimit = 6;
  std::string text = print(*m, opts);
  EXPECT_NE(text.find("dense<[1, 2, 3, 4, 5, -6]>"), std::string::npos);
  EXPECT_EQ(text.find("resources"), std::string::npos);
}

TEST(ParserTest, ErrorsAreLocatedWithCaret) {
  Context ctx;
  std::string err = parseError(ctx, "graph @g(%x: tensor<2xf32>) -> "
                                    "(tensor<2xf32>) {\n"
                                    "  %y = onnx.Relu(%nope) : tensor<2xf32>\n"
                                    "  return %y\n}\n");
  EXPECT_EQ(err, "test.qir:2:18: error: use of undefined value %nope\n"
                 "  %y = onnx.Relu(%nope) : tensor<2xf32>\n"
                 "                 ^");
}

TEST(ParserTest, RejectsRedefinitionAndBadDense) {
  Context ctx;
  std::string err =
      parseError(ctx, "graph @g(%x: tensor<2xf32>) -> (tensor<2xf32>) {\n"
                      "  %x = onnx.Relu(%x) : tensor<2xf32>\n  return %x\n}\n");
  EXPECT_NE(err.find("2:3: error: redefinition of value %x"), std::string::npos)
      << err;
  err = parseError(ctx, "graph @g() -> (tensor<3xi8>) {\n"
                        "  %c = onnx.Constant() {value = dense<[1, 2]>} : "
                        "tensor<3xi8>\n  return %c\n}\n");
  EXPECT_NE(err.find("dense literal has 2 elements but tensor<3xi8> needs 3"),
            std::string::npos)
      << err;
  err = parseError(ctx, "graph @g() -> (tensor<1xi8>) {\n"
                        "  %c = onnx.Constant() {value = dense<[300]>} : "
                        "tensor<1xi8>\n  return %c\n}\n");
  EXPECT_NE(err.find("invalid i8 element '300'"), std::string::npos) << err;
}

TEST(ParserTest, FloatAttributesKeepTheirKind) {
  Context ctx;
  auto m = parseOrFail(ctx, "graph @g(%x: tensor<2xf32>) -> (tensor<2xf32>) {\n"
                            "  %y = onnx.LeakyRelu(%x) {alpha = 1.0, n = 1, "
                            "e = floats[], f = [0.5, 2.0]} : tensor<2xf32>\n"
                            "  return %y\n}\n");
  ASSERT_TRUE(m);
  const Node &n = m->getGraph().getNodes().front();
  EXPECT_TRUE(n.getAttr("alpha")->isFloat());
  EXPECT_TRUE(n.getAttr("n")->isInt());
  EXPECT_TRUE(n.getAttr("e")->getIf<EmptyList>());
  EXPECT_EQ(n.getAttr("e")->getIf<EmptyList>()->kind, EmptyList::Floats);
  ASSERT_TRUE(n.getAttr("f")->getIf<std::vector<float>>());
  EXPECT_NE(
      print(*m).find("{alpha = 1.0, n = 1, e = floats[], f = [0.5, 2.0]}"),
      std::string::npos);
}

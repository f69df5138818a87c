//===- ConstantFoldingTest.cpp - Fold hooks against the interpreter -------===//
//
// Each case is a graph whose constant part the op table's fold hooks fold.
// The reference interpreter, which runs the ONNX ops themselves, is the
// oracle: the folded graph must give the same bits, and the ops expected to
// fold must be gone (or, for the cases a hook must decline, still there).
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/ConstantFolding.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/IR/Verifier.h"
#include "qopt/ToolSupport/Compare.h"

#include "gtest/gtest.h"

using namespace qopt;

namespace {

struct FoldCase {
  const char *name;
  const char *body;     // the graph's text
  unsigned foldedNodes; // how many nodes fold
};

std::unique_ptr<Model> parse(Context &ctx, llvm::StringRef text) {
  auto m = parseModel(text, "test.qir", ctx);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return nullptr;
  }
  return std::move(*m);
}

std::string printModelToString(const Model &m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  printModel(m, os);
  return os.str();
}

unsigned countComputeNodes(const Graph &g) {
  unsigned n = 0;
  for (const Node &node : g.getNodes())
    n += !node.isa(ops::Constant) || !getConstantData(node.getResult());
  return n;
}

void expectFoldsExactly(const FoldCase &c, FoldOptions options = {}) {
  SCOPED_TRACE(c.name);
  Context ctx;
  auto before = parse(ctx, c.body);
  auto after = parse(ctx, c.body);
  ASSERT_TRUE(before && after);
  unsigned nodesBefore = countComputeNodes(after->getGraph());
  auto folded = foldConstants(after->getGraph(), options);
  ASSERT_TRUE(bool(folded)) << llvm::toString(folded.takeError());
  EXPECT_EQ(*folded, c.foldedNodes);
  EXPECT_EQ(countComputeNodes(after->getGraph()), nodesBefore - c.foldedNodes);
  if (auto err = verifyModel(*after))
    FAIL() << llvm::toString(std::move(err)) << "\n"
           << printModelToString(*after);
  auto report = compareModels(*before, *after);
  ASSERT_TRUE(bool(report)) << llvm::toString(report.takeError());
  for (const OutputComparison &o : report->outputs)
    EXPECT_TRUE(o.identical && !o.shapeOrTypeDiffers)
        << o.name << " differs after folding:\n"
        << printModelToString(*after);
}

const FoldCase kFoldCases[] = {
    {"shape arithmetic into a Reshape",
     R"(graph @g(%x: tensor<2x3x4xf32>) -> (tensor<?x?xf32>) {
  %s = onnx.Shape(%x) : tensor<3xi64>
  %i = onnx.Constant() {value = dense<-2>} : tensor<i64>
  %g = onnx.Gather(%s, %i) {axis = 0} : tensor<i64>
  %ax = onnx.Constant() {value = dense<[0]>} : tensor<1xi64>
  %u = onnx.Unsqueeze(%g, %ax) : tensor<1xi64>
  %m = onnx.Constant() {value = dense<[-1]>} : tensor<1xi64>
  %c = onnx.Concat(%m, %u) {axis = 0} : tensor<2xi64>
  %r = onnx.Reshape(%x, %c) : tensor<?x?xf32>
  return %r
})",
     4},
    {"channel split: ends from Shape, Add, Div, Mul; strided and reversed "
     "Slices",
     R"(graph @g(%x: tensor<1x6x2x2xf32>) -> (tensor<?x?x?x?xf32>, tensor<2x3xi64>) {
  %s = onnx.Shape(%x) : tensor<4xi64>
  %one = onnx.Constant() {value = dense<[1]>} : tensor<1xi64>
  %c = onnx.Gather(%s, %one) {axis = 0} : tensor<1xi64>
  %two = onnx.Constant() {value = dense<[2]>} : tensor<1xi64>
  %h = onnx.Div(%c, %two) : tensor<1xi64>
  %h2 = onnx.Mul(%h, %one) : tensor<1xi64>
  %e = onnx.Add(%h2, %h) : tensor<1xi64>
  %zero = onnx.Constant() {value = dense<[0]>} : tensor<1xi64>
  %y = onnx.Slice(%x, %h, %e, %one) : tensor<?x?x?x?xf32>
  %d = onnx.Constant() {value = dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]>} : tensor<2x5xi64>
  %st = onnx.Constant() {value = dense<[-1]>} : tensor<1xi64>
  %en = onnx.Constant() {value = dense<[-100]>} : tensor<1xi64>
  %stp = onnx.Constant() {value = dense<[-2]>} : tensor<1xi64>
  %r = onnx.Slice(%d, %st, %en, %one, %stp) : tensor<2x3xi64>
  return %y, %r
})",
     6},
    {"class token: ConstantOfShape, Equal, Where, Expand",
     R"(graph @g(%x: tensor<2x4x8xf32>) -> (tensor<?x?x?xf32>) {
  %tok = onnx.Constant() {value = dense<[0.5, -1.25, 3.0, 7.5, 0.0, 2.0, -3.5, 1.0]>} : tensor<1x1x8xf32>
  %s = onnx.Shape(%x) {end = 1} : tensor<1xi64>
  %rest = onnx.Constant() {value = dense<[-1, -1]>} : tensor<2xi64>
  %shape = onnx.Concat(%s, %rest) {axis = 0} : tensor<3xi64>
  %three = onnx.Constant() {value = dense<[3]>} : tensor<1xi64>
  %ones = onnx.ConstantOfShape(%three) {value = dense<[1]> : tensor<1xi64>} : tensor<3xi64>
  %m1 = onnx.Constant() {value = dense<-1>} : tensor<i64>
  %neg = onnx.Mul(%ones, %m1) : tensor<3xi64>
  %eq = onnx.Equal(%shape, %neg) : tensor<3xbool>
  %w = onnx.Where(%eq, %ones, %shape) : tensor<3xi64>
  %e = onnx.Expand(%tok, %w) : tensor<?x?x?xf32>
  %c = onnx.Concat(%e, %x) {axis = 1} : tensor<?x?x?xf32>
  return %c
})",
     7},
    {"integer and float arithmetic with broadcasting",
     R"(graph @g() -> (tensor<2x3xi64>, tensor<2x3xf32>, tensor<2x3xi32>) {
  %a = onnx.Constant() {value = dense<[-7, 9]>} : tensor<2x1xi64>
  %b = onnx.Constant() {value = dense<[2, -4, 3]>} : tensor<3xi64>
  %q = onnx.Div(%a, %b) : tensor<2x3xi64>
  %f = onnx.Constant() {value = dense<[0.1, 3.0]>} : tensor<2x1xf32>
  %g = onnx.Constant() {value = dense<[0.3, 7.0, -0.0]>} : tensor<3xf32>
  %fd = onnx.Div(%f, %g) : tensor<2x3xf32>
  %fs = onnx.Sub(%fd, %f) : tensor<2x3xf32>
  %i = onnx.Constant() {value = dense<[1, -2, 3, 4, 5, -6]>} : tensor<2x3xi32>
  %j = onnx.Constant() {value = dense<[2, 2, 2, -3, 0, 1]>} : tensor<2x3xi32>
  %mx = onnx.Max(%i, %j) : tensor<2x3xi32>
  %mn = onnx.Min(%mx, %i) : tensor<2x3xi32>
  %ng = onnx.Neg(%mn) : tensor<2x3xi32>
  %ab = onnx.Abs(%ng) : tensor<2x3xi32>
  return %q, %fs, %ab
})",
     7},
    {"casts",
     R"(graph @g() -> (tensor<4xi32>, tensor<4xf32>, tensor<4xbool>, tensor<4xu8>, tensor<4xf32>) {
  %f = onnx.Constant() {value = dense<[-2.75, 2.5, 0.0, 1e9]>} : tensor<4xf32>
  %i = onnx.Cast(%f) {to = 6} : tensor<4xi32>
  %l = onnx.Constant() {value = dense<[16777217, -3, 0, 9007199254740992]>} : tensor<4xi64>
  %lf = onnx.Cast(%l) {to = 1} : tensor<4xf32>
  %b = onnx.Cast(%f) {to = 9} : tensor<4xbool>
  %s = onnx.Constant() {value = dense<[0, 7, 255, 128]>} : tensor<4xi32>
  %u = onnx.Cast(%s) {to = 2} : tensor<4xu8>
  %d = onnx.Constant() {value = dense<[0.1, 1e-40, 3.4e38, -2.5]>} : tensor<4xf64>
  %df = onnx.Cast(%d) {to = 1} : tensor<4xf32>
  return %i, %lf, %b, %u, %df
})",
     5},
    {"data movement: Transpose, Squeeze, Flatten, Tile, Identity chain",
     R"(graph @g(%x: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<1x6xi8>, tensor<2x6xi64>) {
  %c = onnx.Constant() {value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]>} : tensor<2x3xf32>
  %i1 = onnx.Identity(%c) : tensor<2x3xf32>
  %i2 = onnx.Identity(%i1) : tensor<2x3xf32>
  %t = onnx.Transpose(%i2) {perm = [1, 0]} : tensor<3x2xf32>
  %y = onnx.Add(%x, %t) : tensor<3x2xf32>
  %b = onnx.Constant() {value = dense<[1, -2, 3, 4, -5, 6]>} : tensor<2x1x3xi8>
  %ax = onnx.Constant() {value = dense<[1]>} : tensor<1xi64>
  %s = onnx.Squeeze(%b, %ax) : tensor<2x3xi8>
  %fl = onnx.Flatten(%s) {axis = 0} : tensor<1x6xi8>
  %r = onnx.Constant() {value = dense<[5, 6]>} : tensor<1x2xi64>
  %rep = onnx.Constant() {value = dense<[2, 3]>} : tensor<2xi64>
  %tl = onnx.Tile(%r, %rep) : tensor<2x6xi64>
  return %y, %fl, %tl
})",
     6},
    {"Range, ReduceProd, comparisons and logic, Constant value_ints",
     R"(graph @g() -> (tensor<3xi64>, tensor<2xi64>, tensor<3xbool>, tensor<3xi64>) {
  %s = onnx.Constant() {value = dense<10>} : tensor<i64>
  %l = onnx.Constant() {value = dense<1>} : tensor<i64>
  %d = onnx.Constant() {value = dense<-3>} : tensor<i64>
  %r = onnx.Range(%s, %l, %d) : tensor<3xi64>
  %m = onnx.Constant() {value = dense<[2, 3, 4, 5, -1, 2]>} : tensor<2x3xi64>
  %ax = onnx.Constant() {value = dense<[1]>} : tensor<1xi64>
  %p = onnx.ReduceProd(%m, %ax) {keepdims = 0} : tensor<2xi64>
  %a = onnx.Constant() {value = dense<[1.0, -2.0, 3.0]>} : tensor<3xf32>
  %b = onnx.Constant() {value = dense<[1.0, 2.0, -3.0]>} : tensor<3xf32>
  %lt = onnx.Less(%a, %b) : tensor<3xbool>
  %ge = onnx.GreaterOrEqual(%a, %b) : tensor<3xbool>
  %n = onnx.Not(%lt) : tensor<3xbool>
  %x = onnx.Xor(%n, %ge) : tensor<3xbool>
  %v = onnx.Constant() {value_ints = [4, -5, 6]} : tensor<3xi64>
  return %r, %p, %x, %v
})",
     7},
};

} // namespace

TEST(ConstantFoldingTest, FoldedGraphsGiveTheInterpretersBits) {
  for (const FoldCase &c : kFoldCases)
    expectFoldsExactly(c);
}

TEST(ConstantFoldingTest, ShapeArithmeticMakesTheReshapeStatic) {
  Context ctx;
  auto m = parse(ctx, kFoldCases[0].body);
  ASSERT_TRUE(m);
  ASSERT_TRUE(bool(foldConstants(m->getGraph())));
  const Value *out = m->getGraph().getOutput(0);
  EXPECT_EQ(typeToString(out->getType()), "tensor<8x3xf32>");
  // The folded shape keeps the name of the value it replaces.
  const Node *reshape = out->getDefiningNode();
  ASSERT_TRUE(reshape && reshape->isa("onnx.Reshape"));
  EXPECT_EQ(reshape->getOperand(1)->getName(), "c");
  EXPECT_EQ(getConstantInts(reshape->getOperand(1)),
            (std::vector<int64_t>{-1, 3}));
}

// What a hook must not fold: the runtime's error cases (a division by zero,
// an index out of range), casts ONNX leaves undefined, results past the
// cap, and initializers a user may override.
TEST(ConstantFoldingTest, DeclinesWhatItCannotComputeExactly) {
  const FoldCase declined[] = {
      {"integer division by zero",
       R"(graph @g() -> (tensor<2xi64>) {
  %a = onnx.Constant() {value = dense<[4, 5]>} : tensor<2xi64>
  %b = onnx.Constant() {value = dense<[2, 0]>} : tensor<2xi64>
  %q = onnx.Div(%a, %b) : tensor<2xi64>
  return %q
})",
       0},
      {"float to int out of range",
       R"(graph @g() -> (tensor<2xi32>) {
  %f = onnx.Constant() {value = dense<[1.0, 3e9]>} : tensor<2xf32>
  %i = onnx.Cast(%f) {to = 6} : tensor<2xi32>
  return %i
})",
       0},
      {"integer overflow",
       R"(graph @g() -> (tensor<1xi32>) {
  %a = onnx.Constant() {value = dense<[2147483647]>} : tensor<1xi32>
  %s = onnx.Add(%a, %a) : tensor<1xi32>
  return %s
})",
       0},
  };
  for (const FoldCase &c : declined) {
    SCOPED_TRACE(c.name);
    Context ctx;
    auto m = parse(ctx, c.body);
    ASSERT_TRUE(m);
    auto folded = foldConstants(m->getGraph());
    ASSERT_TRUE(bool(folded)) << llvm::toString(folded.takeError());
    EXPECT_EQ(*folded, 0u);
  }
  // Gather out of range: the interpreter's error, not a folded value.
  {
    Context ctx;
    auto m = parse(ctx, R"(graph @g() -> (tensor<1xi64>) {
  %d = onnx.Constant() {value = dense<[1, 2, 3]>} : tensor<3xi64>
  %i = onnx.Constant() {value = dense<[3]>} : tensor<1xi64>
  %g = onnx.Gather(%d, %i) {axis = 0} : tensor<1xi64>
  return %g
})");
    ASSERT_TRUE(m);
    auto folded = foldConstants(m->getGraph());
    ASSERT_TRUE(bool(folded));
    EXPECT_EQ(*folded, 0u);
  }
}

TEST(ConstantFoldingTest, RespectsTheCapAndOverridableInitializers) {
  const char *text = R"(graph @g(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>) {
  %c = onnx.Constant() {value = dense<[1.0, 2.0, 3.0, 4.0]>} : tensor<4xf32>
  %s = onnx.Constant() {value = dense<[2, 4]>} : tensor<2xi64>
  %e = onnx.Expand(%c, %s) : tensor<2x4xf32>
  %y = onnx.Add(%x, %e) : tensor<2x4xf32>
  return %y
})";
  {
    Context ctx;
    auto m = parse(ctx, text);
    ASSERT_TRUE(m);
    FoldOptions small;
    small.maxElements = 7;
    auto folded = foldConstants(m->getGraph(), small);
    ASSERT_TRUE(bool(folded));
    EXPECT_EQ(*folded, 0u);
    FoldOptions enough;
    enough.maxElements = 8;
    folded = foldConstants(m->getGraph(), enough);
    ASSERT_TRUE(bool(folded));
    EXPECT_EQ(*folded, 1u);
  }
  {
    Context ctx;
    auto m = parse(ctx, text);
    ASSERT_TRUE(m);
    m->getGraph().getInitializerInputs().push_back("c");
    auto folded = foldConstants(m->getGraph());
    ASSERT_TRUE(bool(folded));
    EXPECT_EQ(*folded, 0u);
  }
}

// Nodes a verifier would reject are not the folder's to compute: a Slice
// without its starts and ends, a Concat and a Tile whose constant operand
// holds other data than its type says. Folding them read past the data or
// divided by zero; now they stay, for the verifier to name.
TEST(ConstantFoldingTest, LeavesMalformedNodesToTheVerifier) {
  Context ctx;
  Graph g(ctx);
  auto f32 = [&](llvm::ArrayRef<int64_t> dims) {
    return ctx.getTensorType(dims, ctx.getElementType(ElementKind::F32));
  };
  auto i64 = [&](llvm::ArrayRef<int64_t> dims) {
    return ctx.getTensorType(dims, ctx.getElementType(ElementKind::I64));
  };
  auto constant = [&](const TensorType *type, DenseElementsRef data) {
    return g
        .createNode(ops::Constant, {}, {{type, ""}},
                    {{"value", Attribute(std::move(data))}})
        ->getResult();
  };
  // A payload of 1x2 declared 3x2, and one of 0 elements declared 2.
  Value *wrong = constant(f32({3, 2}), quant::makeDenseF32({1, 2}, {1, 2}));
  Value *empty = constant(f32({2}), quant::makeDenseF32({0}, {}));
  Value *data = constant(f32({4}), quant::makeDenseF32({4}, {1, 2, 3, 4}));
  Value *reps =
      constant(i64({1}), quant::makeDenseInt(ElementKind::I64, {1}, {2}));
  Node *concat =
      g.createNode("onnx.Concat", {wrong, wrong}, {{f32({3, 4}), "c"}},
                   {{"axis", Attribute(int64_t(1))}});
  Node *tile = g.createNode("onnx.Tile", {empty, reps}, {{f32({4}), "t"}});
  Node *slice = g.createNode("onnx.Slice", {data}, {{f32({4}), "s"}});
  for (Node *n : {concat, tile, slice})
    EXPECT_FALSE(foldNode(*n).has_value()) << n->describe();
}

// An initializer that is also a graph input may be overridden with another
// shape: Shape of it stays, and the initializer stays in the graph.
TEST(ConstantFoldingTest, KeepsShapeOfAnOverridableInitializer) {
  Context ctx;
  auto m = parse(ctx, R"(graph @g() -> (tensor<2xi64>) {
  %w = onnx.Constant() {value = dense<[1.0, 2.0, 3.0, 4.0]>} : tensor<2x2xf32>
  %s = onnx.Shape(%w) : tensor<2xi64>
  return %s
})");
  ASSERT_TRUE(m);
  m->getGraph().getInitializerInputs().push_back("w");
  auto folded = foldConstants(m->getGraph());
  ASSERT_TRUE(bool(folded));
  EXPECT_EQ(*folded, 0u);
  EXPECT_TRUE(m->getGraph().lookupValue("w"));
}

// A weight's Q/DQ is what passes work on: it folds only when the caller
// asks (the plan builder, for weights a float step reads). Then a float
// weight's fake quantization (Q, DQ) and the Transpose after it fold with
// the interpreter's bits: per-axis, a zero point, saturation at both ends
// and ties rounded to even.
TEST(ConstantFoldingTest, FoldsWeightQdqOnlyWhenAsked) {
  const char *text = R"(graph @g(%x: tensor<2x3xf32>) -> (tensor<2x2xf32>) {
  %w = onnx.Constant() {value = dense<[0.25, -1.0, 100.0, 0.75, -100.0, 0.125]>} : tensor<2x3xf32>
  %q = q.quantize(%w) : tensor<2x3x!quant.uniform<i8:f32:0, {0.5:3,0.25:-2}>>
  %d = q.dequantize(%q) : tensor<2x3xf32>
  %t = onnx.Transpose(%d) {perm = [1, 0]} : tensor<3x2xf32>
  %y = onnx.MatMul(%x, %t) : tensor<2x2xf32>
  return %y
})";
  {
    Context ctx;
    auto m = parse(ctx, text);
    ASSERT_TRUE(m);
    auto folded = foldConstants(m->getGraph());
    ASSERT_TRUE(bool(folded));
    EXPECT_EQ(*folded, 0u);
  }
  FoldOptions qdq;
  qdq.foldQdq = true;
  expectFoldsExactly({"weight Q/DQ for a float MatMul", text, 3}, qdq);
}

//===- ElementwiseKernelsTest.cpp - Reference kernels: elementwise ops ----===//

#include "qopt/IR/Graph.h"
#include "qopt/Interpreter/Kernel.h"
#include "qopt/Support/FloatFormat.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace qopt;
using namespace qopt::interp;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Tensor make(ElementKind kind, Shape shape, std::vector<double> values) {
  Tensor t(kind, std::move(shape));
  EXPECT_EQ(t.numElements(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i)
    t.setDouble(i, values[i]);
  return t;
}

Tensor makeInts(ElementKind kind, Shape shape, std::vector<int64_t> values) {
  Tensor t(kind, std::move(shape));
  EXPECT_EQ(t.numElements(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i)
    t.setInt(i, values[i]);
  return t;
}

Tensor makeStrings(Shape shape, std::vector<std::string> values) {
  Tensor t(ElementKind::String, std::move(shape));
  t.strings() = std::move(values);
  return t;
}

/// Runs `op` as a one-node graph on `inputs` (null = absent optional input)
/// and returns its first output.
llvm::Expected<Tensor> run(llvm::StringRef op,
                           std::vector<const Tensor *> inputs,
                           std::vector<NamedAttribute> attrs = {},
                           int64_t opset = 13) {
  Context ctx;
  Graph g(ctx);
  const TensorType *unknown = ctx.getUnknownTensorType();
  std::vector<Value *> operands;
  for (size_t i = 0; i < inputs.size(); ++i)
    operands.push_back(inputs[i] ? g.addInput(unknown, "in" + std::to_string(i))
                                 : nullptr);
  Node *n = g.createNode(op, operands, {{unknown, "y"}}, std::move(attrs));
  KernelFn fn = KernelRegistry::get().lookup(op);
  if (!fn)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "no kernel for " + op.str());
  KernelOp kop = KernelOp::fromNode(*n);
  KernelContext kc(kop, inputs, opset);
  if (llvm::Error e = fn(kc))
    return e;
  return std::move(kc.outputs[0]);
}

/// Runs and expects success.
Tensor runOk(llvm::StringRef op, std::vector<const Tensor *> inputs,
             std::vector<NamedAttribute> attrs = {}, int64_t opset = 13) {
  auto r = run(op, std::move(inputs), std::move(attrs), opset);
  if (!r) {
    ADD_FAILURE() << op.str() << ": " << llvm::toString(r.takeError());
    return Tensor();
  }
  return std::move(*r);
}

/// Runs and expects an error; returns its message.
std::string runErr(llvm::StringRef op, std::vector<const Tensor *> inputs,
                   std::vector<NamedAttribute> attrs = {}, int64_t opset = 13) {
  auto r = run(op, std::move(inputs), std::move(attrs), opset);
  if (r) {
    ADD_FAILURE() << op.str() << " unexpectedly succeeded";
    return "";
  }
  return llvm::toString(r.takeError());
}

/// Element-wise equality that treats NaN == NaN.
void expectValues(const Tensor &t, std::vector<double> want) {
  ASSERT_EQ(t.numElements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    double got = t.getDouble(i);
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got)) << "element " << i << " is " << got;
    else
      EXPECT_EQ(got, want[i]) << "element " << i;
  }
}

void expectNear(const Tensor &t, std::vector<double> want, double tol = 1e-6) {
  ASSERT_EQ(t.numElements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(t.getDouble(i), want[i], tol) << "element " << i;
}

void expectInts(const Tensor &t, std::vector<int64_t> want) {
  ASSERT_EQ(t.numElements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(t.getInt(i), want[i]) << "element " << i;
}

NamedAttribute attr(std::string name, Attribute v) {
  return NamedAttribute{std::move(name), std::move(v)};
}

} // namespace

TEST(ElementwiseKernelsTest, RegistryHasKernels) {
  const KernelRegistry &r = KernelRegistry::get();
  for (const char *op :
       {"onnx.Add", "onnx.Clip", "onnx.Cast", "onnx.ReduceMean", "onnx.ArgMax",
        "onnx.Where", "onnx.Gelu", "onnx.BitShift"})
    EXPECT_NE(r.lookup(op), nullptr) << op;
}

TEST(ElementwiseKernelsTest, AddBroadcasts) {
  Tensor a = make(ElementKind::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make(ElementKind::F32, {3}, {10, 20, 30});
  Tensor y = runOk("onnx.Add", {&a, &b});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.kind(), ElementKind::F32);
  expectValues(y, {11, 22, 33, 14, 25, 36});

  // Both sides broadcast: [2,1] x [1,3] -> [2,3].
  Tensor c = make(ElementKind::F32, {2, 1}, {1, 2});
  Tensor d = make(ElementKind::F32, {1, 3}, {10, 20, 30});
  Tensor z = runOk("onnx.Sub", {&c, &d});
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  expectValues(z, {-9, -19, -29, -8, -18, -28});

  // Scalar with a rank-3 tensor.
  Tensor s = make(ElementKind::F32, {}, {2});
  Tensor e = make(ElementKind::F32, {1, 2, 1}, {3, 4});
  Tensor m = runOk("onnx.Mul", {&e, &s});
  EXPECT_EQ(m.shape(), (Shape{1, 2, 1}));
  expectValues(m, {6, 8});
}

TEST(ElementwiseKernelsTest, BadInputsAreErrors) {
  Tensor a = make(ElementKind::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make(ElementKind::F32, {2}, {1, 2});
  EXPECT_NE(runErr("onnx.Add", {&a, &b}).find("do not broadcast"),
            std::string::npos);
  Tensor i = makeInts(ElementKind::I32, {3}, {1, 2, 3});
  EXPECT_NE(runErr("onnx.Add", {&a, &i}).find("differ"), std::string::npos);
  runErr("onnx.Add", {&a, nullptr});
  runErr("onnx.Sqrt", {&i});
  Tensor s = makeStrings({1}, {"x"});
  runErr("onnx.Add", {&s, &s});
  runErr("onnx.Cast", {&a}, {attr("to", int64_t(24))}); // FLOAT8E8M0
  runErr("onnx.Cast", {&a},
         {attr("to", int64_t(17)), attr("saturate", int64_t(0))}, 19);
  runErr("onnx.Cast", {&a});
  runErr("onnx.Gelu", {&a}, {attr("approximate", "erf")}, 20);
  runErr("onnx.BitShift", {&i, &i}, {attr("direction", "LEFT")});
}

TEST(ElementwiseKernelsTest, IntegerDivisionTruncatesTowardZero) {
  Tensor a = makeInts(ElementKind::I32, {6}, {7, -7, 7, -7, 5, 0});
  Tensor b = makeInts(ElementKind::I32, {6}, {2, 2, -2, -2, 0, 3});
  Tensor y = runOk("onnx.Div", {&a, &b});
  EXPECT_EQ(y.kind(), ElementKind::I32);
  // Division by zero yields 0 instead of trapping.
  expectInts(y, {3, -3, -3, 3, 0, 0});

  Tensor big =
      makeInts(ElementKind::I64, {1}, {std::numeric_limits<int64_t>::min()});
  Tensor minus1 = makeInts(ElementKind::I64, {1}, {-1});
  expectInts(runOk("onnx.Div", {&big, &minus1}),
             {std::numeric_limits<int64_t>::min()});

  Tensor u = makeInts(ElementKind::U64, {1}, {-2}); // 2^64 - 2
  Tensor two = makeInts(ElementKind::U64, {1}, {2});
  Tensor q = runOk("onnx.Div", {&u, &two});
  EXPECT_EQ(static_cast<uint64_t>(q.getInt(0)), (~uint64_t(0) - 1) / 2);
}

TEST(ElementwiseKernelsTest, IntegerArithmeticWraps) {
  Tensor a = makeInts(ElementKind::I8, {2}, {127, -128});
  Tensor b = makeInts(ElementKind::I8, {2}, {1, 1});
  expectInts(runOk("onnx.Add", {&a, &b}), {-128, -127});
  expectInts(runOk("onnx.Abs", {&a}), {127, -128});
  Tensor u = makeInts(ElementKind::U8, {2}, {0, 200});
  Tensor v = makeInts(ElementKind::U8, {2}, {1, 100});
  expectInts(runOk("onnx.Sub", {&u, &v}), {255, 100});
  expectInts(runOk("onnx.Mul", {&u, &v}), {0, (200 * 100) & 0xFF});
}

TEST(ElementwiseKernelsTest, ModFollowsDivisorOrDividendSign) {
  Tensor a = makeInts(ElementKind::I32, {4}, {-4, 7, 5, -7});
  Tensor b = makeInts(ElementKind::I32, {4}, {3, -3, 0, -3});
  expectInts(runOk("onnx.Mod", {&a, &b}), {2, -2, 0, -1});
  expectInts(runOk("onnx.Mod", {&a, &b}, {attr("fmod", int64_t(1))}),
             {-1, 1, 0, -1});
  Tensor f = make(ElementKind::F32, {2}, {-4.5, 7});
  Tensor g = make(ElementKind::F32, {2}, {2, -3});
  expectValues(runOk("onnx.Mod", {&f, &g}, {attr("fmod", int64_t(1))}),
               {-0.5, 1});
}

TEST(ElementwiseKernelsTest, PowMixedTypes) {
  Tensor a = makeInts(ElementKind::I32, {3}, {2, -3, 5});
  Tensor b = makeInts(ElementKind::I64, {3}, {10, 3, -1});
  Tensor y = runOk("onnx.Pow", {&a, &b});
  EXPECT_EQ(y.kind(), ElementKind::I32);
  expectInts(y, {1024, -27, 0});
  Tensor f = make(ElementKind::F32, {3}, {2.5, 3.5, 4});
  Tensor yi = runOk("onnx.Pow", {&a, &f}); // int base, float exponent
  EXPECT_EQ(yi.kind(), ElementKind::I32);
  expectInts(yi, {static_cast<int64_t>(std::pow(2.0, 2.5)), 0, 625});
  Tensor x = make(ElementKind::F32, {2}, {2, 9});
  Tensor e = makeInts(ElementKind::I64, {1}, {2});
  expectValues(runOk("onnx.Pow", {&x, &e}), {4, 81});
}

TEST(ElementwiseKernelsTest, ClipAttributesBeforeOpset11) {
  Tensor x = make(ElementKind::F32, {5}, {-3, -1, 0, 1, 3});
  Tensor y = runOk("onnx.Clip", {&x}, {attr("min", -1.5f), attr("max", 2.0f)},
                   /*opset=*/6);
  expectValues(y, {-1.5, -1, 0, 1, 2});
  // Defaults are the float range: infinities clamp to +-FLT_MAX.
  Tensor inf = make(ElementKind::F32, {2}, {-kInf, kInf});
  expectValues(
      runOk("onnx.Clip", {&inf}, {}, 6),
      {-std::numeric_limits<float>::max(), std::numeric_limits<float>::max()});
  // Opset 11 ignores attributes: no bounds means identity.
  expectValues(runOk("onnx.Clip", {&x}, {attr("min", -1.5f)}, 11),
               {-3, -1, 0, 1, 3});
}

TEST(ElementwiseKernelsTest, ClipInputsFromOpset11) {
  Tensor x = make(ElementKind::F32, {5}, {-3, -1, 0, kNaN, 3});
  Tensor lo = make(ElementKind::F32, {}, {-2});
  Tensor hi = make(ElementKind::F32, {}, {2});
  expectValues(runOk("onnx.Clip", {&x, &lo, &hi}, {}, 11),
               {-2, -1, 0, kNaN, 2});
  // Only max (min absent).
  expectValues(runOk("onnx.Clip", {&x, nullptr, &hi}, {}, 13),
               {-3, -1, 0, kNaN, 2});
  // min > max: everything becomes max.
  expectValues(runOk("onnx.Clip", {&x, &hi, &lo}, {}, 13),
               {-2, -2, -2, kNaN, -2});
  // Integer types from opset 12.
  Tensor xi = makeInts(ElementKind::I8, {4}, {-128, -5, 5, 127});
  Tensor loi = makeInts(ElementKind::I8, {}, {-10});
  Tensor hii = makeInts(ElementKind::I8, {}, {3});
  expectInts(runOk("onnx.Clip", {&xi, &loi, &hii}, {}, 13), {-10, -5, 3, 3});
  expectInts(runOk("onnx.Clip", {&xi, &loi}, {}, 13), {-10, -5, 5, 127});
  Tensor u = makeInts(ElementKind::U64, {2}, {1, -1});
  Tensor uhi = makeInts(ElementKind::U64, {}, {7});
  expectInts(runOk("onnx.Clip", {&u, nullptr, &uhi}, {}, 13), {1, 7});
  // Bounds must match the input type and be scalars.
  runErr("onnx.Clip", {&x, &loi}, {}, 13);
  Tensor two = make(ElementKind::F32, {2}, {0, 1});
  runErr("onnx.Clip", {&x, &two}, {}, 13);
}

TEST(ElementwiseKernelsTest, NaNPropagates) {
  Tensor a = make(ElementKind::F32, {3}, {kNaN, 1, 2});
  Tensor b = make(ElementKind::F32, {3}, {0, kNaN, 1});
  expectValues(runOk("onnx.Max", {&a, &b}), {kNaN, kNaN, 2});
  expectValues(runOk("onnx.Min", {&a, &b}), {kNaN, kNaN, 1});
  expectValues(runOk("onnx.Relu", {&a}), {kNaN, 1, 2});
  Tensor eq = runOk("onnx.Equal", {&a, &a});
  EXPECT_EQ(eq.kind(), ElementKind::Bool);
  expectInts(eq, {0, 1, 1});
}

TEST(ElementwiseKernelsTest, VariadicBroadcast) {
  Tensor a = make(ElementKind::F32, {2, 1}, {1, 2});
  Tensor b = make(ElementKind::F32, {3}, {10, 20, 30});
  Tensor c = make(ElementKind::F32, {}, {100});
  Tensor s = runOk("onnx.Sum", {&a, &b, &c});
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  expectValues(s, {111, 121, 131, 112, 122, 132});
  expectValues(runOk("onnx.Mean", {&a, &b}), {5.5, 10.5, 15.5, 6, 11, 16});
  Tensor i = makeInts(ElementKind::U64, {2}, {-1, 3});
  Tensor j = makeInts(ElementKind::U64, {2}, {5, 2});
  expectInts(runOk("onnx.Max", {&i, &j}), {-1, 3}); // unsigned compare
  expectInts(runOk("onnx.Min", {&i, &j}), {5, 2});
}

TEST(ElementwiseKernelsTest, WhereBroadcastsThreeWays) {
  Tensor c = makeInts(ElementKind::Bool, {2, 1}, {1, 0});
  Tensor x = make(ElementKind::F32, {3}, {1, 2, 3});
  Tensor y = make(ElementKind::F32, {1, 1}, {-1});
  Tensor r = runOk("onnx.Where", {&c, &x, &y});
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  expectValues(r, {1, 2, 3, -1, -1, -1});
  Tensor sx = makeStrings({2}, {"a", "b"});
  Tensor sy = makeStrings({2}, {"c", "d"});
  Tensor c2 = makeInts(ElementKind::Bool, {2}, {0, 1});
  Tensor rs = runOk("onnx.Where", {&c2, &sx, &sy});
  EXPECT_EQ(rs.strings(), (std::vector<std::string>{"c", "b"}));
  runErr("onnx.Where", {&x, &x, &y}); // non-bool condition
}

TEST(ElementwiseKernelsTest, ComparisonsAndLogic) {
  Tensor a = makeStrings({3}, {"x", "y", "z"});
  Tensor b = makeStrings({1}, {"y"});
  expectInts(runOk("onnx.Equal", {&a, &b}), {0, 1, 0});
  Tensor i = makeInts(ElementKind::I32, {3}, {1, 2, 3});
  Tensor j = makeInts(ElementKind::I32, {}, {2});
  expectInts(runOk("onnx.Greater", {&i, &j}), {0, 0, 1});
  expectInts(runOk("onnx.LessOrEqual", {&i, &j}), {1, 1, 0});
  Tensor p = makeInts(ElementKind::Bool, {4}, {0, 0, 1, 1});
  Tensor q = makeInts(ElementKind::Bool, {4}, {0, 1, 0, 1});
  expectInts(runOk("onnx.Xor", {&p, &q}), {0, 1, 1, 0});
  expectInts(runOk("onnx.And", {&p, &q}), {0, 0, 0, 1});
  expectInts(runOk("onnx.Not", {&p}), {1, 1, 0, 0});
  runErr("onnx.Greater", {&a, &b});
}

TEST(ElementwiseKernelsTest, RoundHalfToEven) {
  Tensor x =
      make(ElementKind::F32, {8}, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, -2.6});
  expectValues(runOk("onnx.Round", {&x}), {0, 2, 2, -0, -2, -2, 2, -3});
}

TEST(ElementwiseKernelsTest, ReduceAxesAttributeAndKeepdims) {
  // [2,3]: {{1,2,3},{4,5,6}}
  Tensor x = make(ElementKind::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y = runOk("onnx.ReduceMean", {&x},
                   {attr("axes", std::vector<int64_t>{1})}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 1}));
  expectValues(y, {2, 5});
  y = runOk(
      "onnx.ReduceMean", {&x},
      {attr("axes", std::vector<int64_t>{-2}), attr("keepdims", int64_t(0))},
      13);
  EXPECT_EQ(y.shape(), (Shape{3}));
  expectValues(y, {2.5, 3.5, 4.5});
  // No axes: reduce everything.
  y = runOk("onnx.ReduceMax", {&x}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{1, 1}));
  expectValues(y, {6});
  y = runOk("onnx.ReduceSum", {&x}, {attr("keepdims", int64_t(0))}, 13);
  EXPECT_EQ(y.shape(), Shape{});
  expectValues(y, {21});
  EXPECT_NE(runErr("onnx.ReduceSum", {&x},
                   {attr("axes", std::vector<int64_t>{2})}, 11)
                .find("out of range"),
            std::string::npos);
  EXPECT_NE(runErr("onnx.ReduceMax", {&x},
                   {attr("axes", std::vector<int64_t>{1, -1})}, 13)
                .find("repeated"),
            std::string::npos);
}

TEST(ElementwiseKernelsTest, ReduceAxesInputAndNoop) {
  Tensor x = make(ElementKind::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor axes = makeInts(ElementKind::I64, {1}, {0});
  Tensor none = makeInts(ElementKind::I64, {0}, {});
  // ReduceSum takes axes as an input from opset 13, the others from 18.
  Tensor y = runOk("onnx.ReduceSum", {&x, &axes}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{1, 3}));
  expectValues(y, {5, 7, 9});
  y = runOk("onnx.ReduceMax", {&x, &axes}, {attr("keepdims", int64_t(0))}, 18);
  EXPECT_EQ(y.shape(), (Shape{3}));
  expectValues(y, {4, 5, 6});
  // Empty axes: reduce all, unless noop_with_empty_axes.
  y = runOk("onnx.ReduceMean", {&x, &none}, {}, 18);
  EXPECT_EQ(y.shape(), (Shape{1, 1}));
  expectValues(y, {3.5});
  y = runOk("onnx.ReduceMean", {&x, nullptr},
            {attr("noop_with_empty_axes", int64_t(1))}, 18);
  EXPECT_TRUE(y.identicalTo(x));
  y = runOk("onnx.ReduceSum", {&x, &none},
            {attr("noop_with_empty_axes", int64_t(1))}, 13);
  EXPECT_TRUE(y.identicalTo(x));
}

TEST(ElementwiseKernelsTest, ReduceVariantsAndEdgeCases) {
  Tensor x = make(ElementKind::F32, {2, 2}, {1, -2, 3, -4});
  auto ax1 = attr("axes", std::vector<int64_t>{1});
  expectValues(runOk("onnx.ReduceL1", {&x}, {ax1}), {3, 7});
  expectValues(runOk("onnx.ReduceSumSquare", {&x}, {ax1}), {5, 25});
  expectValues(runOk("onnx.ReduceProd", {&x}, {ax1}), {-2, -12});
  expectValues(runOk("onnx.ReduceMin", {&x}, {ax1}), {-2, -4});
  Tensor l2 = runOk("onnx.ReduceL2", {&x}, {ax1});
  EXPECT_FLOAT_EQ(l2.getDouble(0), std::sqrt(5.0f));
  Tensor lse = runOk("onnx.ReduceLogSumExp", {&x}, {ax1});
  EXPECT_NEAR(lse.getDouble(1), std::log(std::exp(3.0) + std::exp(-4.0)), 1e-6);
  // Large values do not overflow.
  Tensor big = make(ElementKind::F64, {2}, {1000, 1000});
  EXPECT_NEAR(runOk("onnx.ReduceLogSumExp", {&big}).getDouble(0),
              1000 + std::log(2.0), 1e-9);
  // NaN propagates through ReduceMax.
  Tensor n = make(ElementKind::F32, {3}, {1, kNaN, 3});
  expectValues(runOk("onnx.ReduceMax", {&n}), {kNaN});
  // Empty reduction: identities of each op.
  Tensor e = make(ElementKind::F32, {2, 0}, {});
  expectValues(runOk("onnx.ReduceMax", {&e}, {ax1}), {-kInf, -kInf});
  expectValues(runOk("onnx.ReduceSum", {&e}, {ax1}, 11), {0, 0});
  expectValues(runOk("onnx.ReduceProd", {&e}, {ax1}), {1, 1});
  Tensor ei = makeInts(ElementKind::I32, {0}, {});
  expectInts(runOk("onnx.ReduceMax", {&ei}),
             {std::numeric_limits<int32_t>::min()});
  // Integer mean truncates.
  Tensor i = makeInts(ElementKind::I32, {3}, {1, 2, 2});
  expectInts(runOk("onnx.ReduceMean", {&i}), {1});
  // Rank-0 input, no axes.
  Tensor s = make(ElementKind::F32, {}, {4});
  Tensor rs = runOk("onnx.ReduceSum", {&s}, {}, 11);
  EXPECT_EQ(rs.shape(), Shape{});
  expectValues(rs, {4});
}

TEST(ElementwiseKernelsTest, CastFloatToIntTruncates) {
  Tensor x = make(ElementKind::F32, {6}, {2.7, -2.7, 0.5, -0.5, 1e10, kNaN});
  auto to = [](int64_t t) { return attr("to", t); };
  Tensor y = runOk("onnx.Cast", {&x}, {to(6)});
  EXPECT_EQ(y.kind(), ElementKind::I32);
  expectInts(y, {2, -2, 0, 0, std::numeric_limits<int32_t>::max(), 0});
  Tensor b = runOk("onnx.Cast", {&x}, {to(9)});
  EXPECT_EQ(b.kind(), ElementKind::Bool);
  expectInts(b, {1, 1, 1, 1, 1, 1});
  // Integer to narrower integer wraps.
  Tensor i = makeInts(ElementKind::I32, {3}, {300, -1, 255});
  expectInts(runOk("onnx.Cast", {&i}, {to(2)}), {44, 255, 255});
  // Large int64 to float rounds once.
  Tensor l = makeInts(ElementKind::I64, {1}, {(int64_t(1) << 60) + 1});
  Tensor lf = runOk("onnx.Cast", {&l}, {to(1)});
  EXPECT_EQ(lf.data<float>()[0], static_cast<float>(int64_t(1) << 60));
}

TEST(ElementwiseKernelsTest, CastRoundsOnceToHalfAndBFloat16) {
  // 1 + 2^-11 + 2^-40 is just above the halfway point between two halves;
  // rounding through float first would hit the tie and round down to 1.
  double v = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  Tensor x = make(ElementKind::F64, {1}, {v});
  Tensor h = runOk("onnx.Cast", {&x}, {attr("to", int64_t(10))});
  EXPECT_EQ(h.kind(), ElementKind::F16);
  EXPECT_EQ(h.getDouble(0), 1.0 + std::ldexp(1.0, -10));
  // float -> bfloat16 rounds to nearest even (0x3ef5eeb0 -> 0x3ef6).
  uint32_t bits = 0x3ef5eeb0;
  float f;
  std::memcpy(&f, &bits, 4);
  Tensor xf = make(ElementKind::F32, {1}, {f});
  Tensor bf = runOk("onnx.Cast", {&xf}, {attr("to", int64_t(16))});
  EXPECT_EQ(bf.kind(), ElementKind::BF16);
  EXPECT_EQ(bf.data<uint16_t>()[0], 0x3ef6);
}

TEST(ElementwiseKernelsTest, CastStrings) {
  Tensor x = make(ElementKind::F32, {8},
                  {0.1, 1, -2.5, 1e-5, 1e16, 123456, kNaN, -kInf});
  Tensor s = runOk("onnx.Cast", {&x}, {attr("to", int64_t(8))});
  EXPECT_EQ(s.strings(),
            (std::vector<std::string>{"0.1", "1.0", "-2.5", "1e-05", "1e+16",
                                      "123456.0", "nan", "-inf"}));
  Tensor i = makeInts(ElementKind::I64, {2}, {-7, 42});
  EXPECT_EQ(runOk("onnx.Cast", {&i}, {attr("to", int64_t(8))}).strings(),
            (std::vector<std::string>{"-7", "42"}));
  Tensor t =
      makeStrings({6}, {"0.47892547", "1e-5", "NaN", "+INF", "-INF", " 3 "});
  Tensor f = runOk("onnx.Cast", {&t}, {attr("to", int64_t(1))});
  expectValues(f, {0.47892547f, 1e-5f, kNaN, kInf, -kInf, 3});
  Tensor n = makeStrings({2}, {"100.5", "-7"});
  expectInts(runOk("onnx.Cast", {&n}, {attr("to", int64_t(7))}), {100, -7});
  Tensor bad = makeStrings({1}, {"abc"});
  runErr("onnx.Cast", {&bad}, {attr("to", int64_t(1))});
}

TEST(ElementwiseKernelsTest, ArgMaxSelectLastIndex) {
  // [2,3]: {{1,3,3},{2,2,1}}
  Tensor x = make(ElementKind::F32, {2, 3}, {1, 3, 3, 2, 2, 1});
  Tensor y = runOk("onnx.ArgMax", {&x}, {attr("axis", int64_t(1))});
  EXPECT_EQ(y.kind(), ElementKind::I64);
  EXPECT_EQ(y.shape(), (Shape{2, 1}));
  expectInts(y, {1, 0});
  y = runOk("onnx.ArgMax", {&x},
            {attr("axis", int64_t(-1)), attr("select_last_index", int64_t(1)),
             attr("keepdims", int64_t(0))});
  EXPECT_EQ(y.shape(), (Shape{2}));
  expectInts(y, {2, 1});
  y = runOk("onnx.ArgMin", {&x}, {attr("select_last_index", int64_t(1))});
  EXPECT_EQ(y.shape(), (Shape{1, 3}));
  expectInts(y, {0, 1, 1});
  // NaN wins, first NaN (last with select_last_index).
  Tensor n = make(ElementKind::F32, {4}, {1, kNaN, 5, kNaN});
  expectInts(runOk("onnx.ArgMax", {&n}), {1});
  expectInts(
      runOk("onnx.ArgMin", {&n}, {attr("select_last_index", int64_t(1))}), {3});
  runErr("onnx.ArgMax", {&x}, {attr("axis", int64_t(2))});
}

TEST(ElementwiseKernelsTest, ActivationsAndPRelu) {
  Tensor x = make(ElementKind::F32, {4}, {-2, -0.5, 0, 3});
  Tensor y = runOk("onnx.LeakyRelu", {&x});
  expectValues(y, {-0.02f, -0.005f, 0, 3});
  expectNear(runOk("onnx.HardSigmoid", {&x}), {0.1, 0.4, 0.5, 1});
  expectNear(runOk("onnx.HardSwish", {&x}),
             {-2 * (1.0 / 6), -0.5 * (0.5 - 0.5 / 6), 0, 3});
  expectValues(runOk("onnx.ThresholdedRelu", {&x}), {0, 0, 0, 3});
  Tensor g = runOk("onnx.Gelu", {&x}, {attr("approximate", "tanh")}, 20);
  EXPECT_NEAR(g.getDouble(3), 2.99636, 1e-5);
  Tensor one = make(ElementKind::F64, {2}, {1, -1});
  expectNear(runOk("onnx.Gelu", {&one}, {}, 20),
             {0.8413447460685429, -0.15865525393145707}, 1e-12);
  expectNear(runOk("onnx.Mish", {&one}),
             {0.8650983882673103, -0.30340146137410895}, 1e-12);
  // PRelu: slope [2,1] broadcasts to x [2,2], not the other way round.
  Tensor xp = make(ElementKind::F32, {2, 2}, {-1, 1, -2, 2});
  Tensor slope = make(ElementKind::F32, {2, 1}, {0.5, 3});
  expectValues(runOk("onnx.PRelu", {&xp, &slope}), {-0.5, 1, -6, 2});
  Tensor wide = make(ElementKind::F32, {2, 2, 1}, {1, 1, 1, 1});
  runErr("onnx.PRelu", {&xp, &wide});
}

TEST(ElementwiseKernelsTest, BitShiftAndIsInf) {
  Tensor a = makeInts(ElementKind::U8, {3}, {16, 4, 1});
  Tensor b = makeInts(ElementKind::U8, {3}, {1, 6, 9});
  expectInts(runOk("onnx.BitShift", {&a, &b}, {attr("direction", "LEFT")}),
             {32, 0, 0});
  expectInts(runOk("onnx.BitShift", {&a, &b}, {attr("direction", "RIGHT")}),
             {8, 0, 0});
  Tensor x = make(ElementKind::F32, {3}, {-kInf, 1, kInf});
  expectInts(runOk("onnx.IsInf", {&x}, {attr("detect_positive", int64_t(0))}),
             {1, 0, 0});
}

// The QOperator kernels count their parameters' values before reading them:
// a plan file's float steps reach them without the IR's verifier (which
// rejects these graphs), so each is an error here, not a read past the end.
TEST(QuantKernelsTest, ParameterCountsAreChecked) {
  Tensor x = makeInts(ElementKind::U8, {1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor none(ElementKind::F32, {0});
  Tensor one = make(ElementKind::F32, {}, {0.1});
  Tensor zeroU8 = makeInts(ElementKind::U8, {}, {0});
  Tensor zeroI8 = makeInts(ElementKind::I8, {}, {0});
  Tensor w = makeInts(ElementKind::I8, {1, 1, 1, 1}, {1});
  auto failsWith = [](llvm::Expected<Tensor> r, llvm::StringRef text) {
    if (r) {
      ADD_FAILURE() << "expected an error with '" << text.str() << "'";
      return;
    }
    std::string msg = llvm::toString(r.takeError());
    EXPECT_NE(msg.find(text.str()), std::string::npos) << msg;
  };
  // QLinearConv: x_scale, then y_scale without values.
  failsWith(run("onnx.QLinearConv",
                {&x, &none, &zeroU8, &w, &one, &zeroI8, &one, &zeroU8}),
            "must have one value each");
  failsWith(run("onnx.QLinearConv",
                {&x, &one, &zeroU8, &w, &one, &zeroI8, &none, &zeroU8}),
            "must have one value each");
  // QLinearMatMul: 3 b_scale values for 2 columns, and for a 1-D b.
  Tensor a = makeInts(ElementKind::U8, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = makeInts(ElementKind::I8, {3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor b1 = makeInts(ElementKind::I8, {3}, {1, 2, 3});
  Tensor three = make(ElementKind::F32, {3}, {0.1, 0.2, 0.3});
  failsWith(run("onnx.QLinearMatMul",
                {&a, &one, &zeroU8, &b, &three, &zeroI8, &one, &zeroU8}),
            "b_scale must be a scalar or one per column of b");
  // A 1-D b is one column: 2 scales (a's row count) do not fit it either.
  Tensor two = make(ElementKind::F32, {2}, {0.1, 0.2});
  failsWith(run("onnx.QLinearMatMul",
                {&a, &one, &zeroU8, &b1, &two, &zeroI8, &one, &zeroU8}),
            "b_scale must be a scalar or one per column of b");
  // QGemm: per-column b_scale of 2 and a C of 3 values.
  Tensor bg = makeInts(ElementKind::I8, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor twoZeros = makeInts(ElementKind::I8, {2}, {0, 0});
  Tensor c = makeInts(ElementKind::I32, {3}, {5, 6, 7});
  failsWith(run("com.microsoft.QGemm",
                {&a, &one, &zeroU8, &bg, &two, &twoZeros, &c},
                {{"transB", Attribute(int64_t(1))}}),
            "does not broadcast to 2 columns");
}

//===- ShapeKernelsTest.cpp - Reference kernels: Shape ops ----------------===//

#include "qopt/IR/Graph.h"
#include "qopt/Interpreter/Kernel.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>

using namespace qopt;
using namespace qopt::interp;

namespace {

Tensor floats(Shape shape, std::vector<float> v) {
  Tensor t(ElementKind::F32, std::move(shape));
  EXPECT_EQ(static_cast<size_t>(t.numElements()), v.size());
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

Tensor ints(Shape shape, std::vector<int64_t> v) {
  Tensor t(ElementKind::I64, std::move(shape));
  EXPECT_EQ(static_cast<size_t>(t.numElements()), v.size());
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

Tensor ints1D(std::vector<int64_t> v) {
  int64_t n = v.size();
  return ints({n}, std::move(v));
}

/// 0, 1, 2, ... as floats.
Tensor iota(Shape shape) {
  Tensor t(ElementKind::F32, std::move(shape));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<float>()[i] = static_cast<float>(i);
  return t;
}

/// Runs one kernel on a one-node graph. Null inputs are absent operands.
struct KernelRun {
  Context ctx;
  Graph g{ctx};

  llvm::Expected<std::vector<Tensor>>
  operator()(llvm::StringRef op, std::vector<const Tensor *> inputs,
             std::vector<NamedAttribute> attrs = {}, int64_t opset = 13,
             unsigned numResults = 1) {
    std::vector<Value *> operands;
    for (size_t i = 0; i < inputs.size(); ++i)
      operands.push_back(inputs[i] ? g.addInput(ctx.getUnknownTensorType(),
                                                g.makeUniqueName("x"))
                                   : nullptr);
    std::vector<ResultSpec> results;
    for (unsigned i = 0; i < numResults; ++i)
      results.push_back({ctx.getUnknownTensorType(), g.makeUniqueName("y")});
    Node *n = g.createNode(op, operands, results, std::move(attrs));
    KernelFn fn = KernelRegistry::get().lookup(op);
    EXPECT_NE(fn, nullptr) << op.str();
    if (!fn)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "no kernel");
    KernelOp kop = KernelOp::fromNode(*n);
    KernelContext kctx(kop, inputs, opset);
    if (auto err = fn(kctx))
      return err;
    return std::move(kctx.outputs);
  }
};

std::vector<float> values(const Tensor &t) {
  std::vector<float> v;
  for (int64_t i = 0; i < t.numElements(); ++i)
    v.push_back(static_cast<float>(t.getDouble(i)));
  return v;
}

void expectNear(const Tensor &t, Shape shape, std::vector<float> expected) {
  EXPECT_EQ(t.shape(), shape);
  std::vector<float> got = values(t);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], 1e-5) << "element " << i;
}

/// Runs and expects success with one result.
Tensor runOk(llvm::StringRef op, std::vector<const Tensor *> inputs,
             std::vector<NamedAttribute> attrs = {}, int64_t opset = 13) {
  KernelRun run;
  auto out = run(op, std::move(inputs), std::move(attrs), opset);
  if (!out) {
    ADD_FAILURE() << llvm::toString(out.takeError());
    return Tensor();
  }
  return std::move((*out)[0]);
}

std::string runError(llvm::StringRef op, std::vector<const Tensor *> inputs,
                     std::vector<NamedAttribute> attrs = {},
                     int64_t opset = 13) {
  KernelRun run;
  auto out = run(op, std::move(inputs), std::move(attrs), opset);
  if (out) {
    ADD_FAILURE() << "expected an error from " << op.str();
    return "";
  }
  return llvm::toString(out.takeError());
}

} // namespace

TEST(ShapeKernelsTest, RegistryHasKernels) {
  const KernelRegistry &r = KernelRegistry::get();
  for (const char *op : {"onnx.Concat",
                         "onnx.Split",
                         "onnx.Slice",
                         "onnx.Reshape",
                         "onnx.Flatten",
                         "onnx.Transpose",
                         "onnx.Squeeze",
                         "onnx.Unsqueeze",
                         "onnx.Gather",
                         "onnx.Expand",
                         "onnx.Tile",
                         "onnx.Shape",
                         "onnx.Constant",
                         "onnx.ConstantOfShape",
                         "onnx.Identity",
                         "onnx.Pad",
                         "onnx.Resize",
                         "onnx.Range",
                         "onnx.Size",
                         "onnx.DepthToSpace",
                         "onnx.SpaceToDepth",
                         "onnx.GatherElements",
                         "onnx.ScatterElements",
                         "onnx.Trilu",
                         "onnx.OneHot",
                         "onnx.NonZero",
                         "onnx.CumSum",
                         "onnx.ReverseSequence",
                         "onnx.EyeLike"})
    EXPECT_NE(r.lookup(op), nullptr) << op;
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

TEST(ShapeKernelsTest, SliceNegativeStepReverses) {
  Tensor x = iota({2, 5});
  Tensor starts = ints1D({-1}), ends = ints1D({INT64_MIN}), axes = ints1D({1}),
         steps = ints1D({-1});
  Tensor y = runOk("onnx.Slice", {&x, &starts, &ends, &axes, &steps});
  expectNear(y, {2, 5}, {4, 3, 2, 1, 0, 9, 8, 7, 6, 5});
}

TEST(ShapeKernelsTest, SliceNegativeStepTwoClampsHugeStart) {
  Tensor x = iota({6});
  // start 100 clamps to 5 for a negative step; end -100 clamps to -1.
  Tensor starts = ints1D({100}), ends = ints1D({-100}), axes = ints1D({0}),
         steps = ints1D({-2});
  Tensor y = runOk("onnx.Slice", {&x, &starts, &ends, &axes, &steps});
  expectNear(y, {3}, {5, 3, 1});
  // Stops before `end` (exclusive) going backwards.
  Tensor starts2 = ints1D({4}), ends2 = ints1D({1});
  Tensor y2 = runOk("onnx.Slice", {&x, &starts2, &ends2, &axes, &steps});
  expectNear(y2, {2}, {4, 2});
}

TEST(ShapeKernelsTest, SliceClampsAndDefaults) {
  Tensor x = iota({3, 4});
  // INT64_MAX end, negative start, no axes/steps: all of dim 0 from -2.
  Tensor starts = ints1D({-2, 1}), ends = ints1D({INT64_MAX, 1000});
  Tensor y = runOk("onnx.Slice", {&x, &starts, &ends});
  expectNear(y, {2, 3}, {5, 6, 7, 9, 10, 11});
  // Start past the end: empty.
  Tensor s2 = ints1D({10}), e2 = ints1D({20}), a2 = ints1D({-1});
  Tensor y2 = runOk("onnx.Slice", {&x, &s2, &e2, &a2});
  EXPECT_EQ(y2.shape(), (Shape{3, 0}));
  // Empty when start >= end with a positive step.
  Tensor s3 = ints1D({3}), e3 = ints1D({1}), a3 = ints1D({1});
  EXPECT_EQ(runOk("onnx.Slice", {&x, &s3, &e3, &a3}).shape(), (Shape{3, 0}));
}

TEST(ShapeKernelsTest, SliceOpset1UsesAttributes) {
  Tensor x = iota({3, 4});
  Tensor y = runOk("onnx.Slice", {&x},
                   {{"starts", std::vector<int64_t>{1}},
                    {"ends", std::vector<int64_t>{-1}},
                    {"axes", std::vector<int64_t>{1}}},
                   /*opset=*/9);
  expectNear(y, {3, 2}, {1, 2, 5, 6, 9, 10});
}

TEST(ShapeKernelsTest, SliceErrors) {
  Tensor x = iota({3, 4});
  Tensor s = ints1D({0}), e = ints1D({1}), a = ints1D({2}), st0 = ints1D({0});
  EXPECT_NE(runError("onnx.Slice", {&x, &s, &e, &a}).find("out of range"),
            std::string::npos);
  Tensor a0 = ints1D({0});
  EXPECT_NE(runError("onnx.Slice", {&x, &s, &e, &a0, &st0}).find("step"),
            std::string::npos);
  Tensor a00 = ints1D({0, 0}), s2 = ints1D({0, 0}), e2 = ints1D({1, 1});
  EXPECT_NE(runError("onnx.Slice", {&x, &s2, &e2, &a00}).find("repeated"),
            std::string::npos);
}

TEST(ShapeKernelsTest, SliceStrings) {
  Tensor x(ElementKind::String, {4});
  x.strings() = {"a", "b", "c", "d"};
  Tensor s = ints1D({-1}), e = ints1D({-5}), a = ints1D({0}), st = ints1D({-2});
  Tensor y = runOk("onnx.Slice", {&x, &s, &e, &a, &st});
  EXPECT_EQ(y.strings(), (std::vector<std::string>{"d", "b"}));
}

//===----------------------------------------------------------------------===//
// Reshape, Split, Concat, Unsqueeze
//===----------------------------------------------------------------------===//

TEST(ShapeKernelsTest, ReshapeZeroCopiesAndMinusOneInfers) {
  Tensor x = iota({2, 3, 4});
  Tensor shape = ints1D({0, -1});
  Tensor y = runOk("onnx.Reshape", {&x, &shape});
  EXPECT_EQ(y.shape(), (Shape{2, 12}));
  EXPECT_EQ(values(y), values(x));
  Tensor shape2 = ints1D({-1, 0, 2});
  EXPECT_EQ(runOk("onnx.Reshape", {&x, &shape2}).shape(), (Shape{4, 3, 2}));
}

TEST(ShapeKernelsTest, ReshapeAllowZero) {
  Tensor x(ElementKind::F32, {0, 3});
  Tensor shape = ints1D({3, 0});
  // allowzero=1: 0 is a real zero-sized dimension.
  Tensor y =
      runOk("onnx.Reshape", {&x, &shape}, {{"allowzero", int64_t(1)}}, 14);
  EXPECT_EQ(y.shape(), (Shape{3, 0}));
  // allowzero=0: 0 copies input dim 1 (3), so 3x3 != 0 elements.
  runError("onnx.Reshape", {&x, &shape}, {}, 14);
  // Before opset 14 the attribute does not exist.
  runError("onnx.Reshape", {&x, &shape}, {{"allowzero", int64_t(1)}}, 13);
  // 0 and -1 together with allowzero=1 is invalid.
  Tensor both = ints1D({0, -1});
  runError("onnx.Reshape", {&x, &both}, {{"allowzero", int64_t(1)}}, 14);
}

TEST(ShapeKernelsTest, ReshapeErrors) {
  Tensor x = iota({2, 3});
  Tensor twoMinus = ints1D({-1, -1}), bad = ints1D({4, -1}),
         neg = ints1D({-2, 3}), zeroPastRank = ints1D({1, 1, 0, 6});
  runError("onnx.Reshape", {&x, &twoMinus});
  runError("onnx.Reshape", {&x, &bad});
  runError("onnx.Reshape", {&x, &neg});
  runError("onnx.Reshape", {&x, &zeroPastRank});
}

TEST(ShapeKernelsTest, SplitUnevenNumOutputs) {
  Tensor x = iota({7});
  KernelRun run;
  auto out = run("onnx.Split", {&x}, {{"num_outputs", int64_t(3)}}, 18, 3);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  expectNear((*out)[0], {3}, {0, 1, 2});
  expectNear((*out)[1], {3}, {3, 4, 5});
  expectNear((*out)[2], {1}, {6});
}

TEST(ShapeKernelsTest, SplitSizesInputAndAttribute) {
  Tensor x = iota({2, 5});
  Tensor split = ints1D({2, 3});
  KernelRun run;
  auto out = run("onnx.Split", {&x, &split}, {{"axis", int64_t(-1)}}, 13, 2);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  expectNear((*out)[0], {2, 2}, {0, 1, 5, 6});
  expectNear((*out)[1], {2, 3}, {2, 3, 4, 7, 8, 9});

  KernelRun run11;
  auto out11 = run11(
      "onnx.Split", {&x},
      {{"axis", int64_t(1)}, {"split", std::vector<int64_t>{4, 1}}}, 11, 2);
  ASSERT_TRUE(bool(out11)) << llvm::toString(out11.takeError());
  expectNear((*out11)[1], {2, 1}, {4, 9});

  // Sizes must add up to the dimension.
  Tensor badSplit = ints1D({2, 2});
  KernelRun runBad;
  auto bad =
      runBad("onnx.Split", {&x, &badSplit}, {{"axis", int64_t(1)}}, 13, 2);
  EXPECT_FALSE(bool(bad));
  llvm::consumeError(bad.takeError());
}

TEST(ShapeKernelsTest, ConcatNegativeAxisAndStrings) {
  Tensor a = iota({2, 1}), b = iota({2, 2});
  Tensor y = runOk("onnx.Concat", {&a, &b}, {{"axis", int64_t(-1)}});
  expectNear(y, {2, 3}, {0, 0, 1, 1, 2, 3});
  Tensor s1(ElementKind::String, {1}), s2(ElementKind::String, {2});
  s1.strings() = {"x"};
  s2.strings() = {"y", "z"};
  Tensor ys = runOk("onnx.Concat", {&s1, &s2}, {{"axis", int64_t(0)}});
  EXPECT_EQ(ys.strings(), (std::vector<std::string>{"x", "y", "z"}));
  runError("onnx.Concat", {&a, &b}, {{"axis", int64_t(0)}});
}

TEST(ShapeKernelsTest, UnsqueezeNegativeAxesAreOutputRelative) {
  Tensor x = iota({3, 4});
  Tensor axes = ints1D({-1, 0});
  EXPECT_EQ(runOk("onnx.Unsqueeze", {&x, &axes}).shape(), (Shape{1, 3, 4, 1}));
  Tensor y =
      runOk("onnx.Unsqueeze", {&x}, {{"axes", std::vector<int64_t>{1}}}, 11);
  EXPECT_EQ(y.shape(), (Shape{3, 1, 4}));
  Tensor sq = ints1D({1});
  runError("onnx.Squeeze", {&x, &sq});
}

TEST(ShapeKernelsTest, TransposeAndGather) {
  Tensor x = iota({2, 3});
  expectNear(runOk("onnx.Transpose", {&x}), {3, 2}, {0, 3, 1, 4, 2, 5});
  Tensor idx = ints({2}, {-1, 0});
  expectNear(runOk("onnx.Gather", {&x, &idx}, {{"axis", int64_t(1)}}), {2, 2},
             {2, 0, 5, 3});
  Tensor bad = ints({1}, {3});
  runError("onnx.Gather", {&x, &bad}, {{"axis", int64_t(1)}});
}

TEST(ShapeKernelsTest, ExpandIsBidirectional) {
  Tensor x = iota({3, 1});
  Tensor shape = ints1D({2, 1, 2});
  expectNear(runOk("onnx.Expand", {&x, &shape}), {2, 3, 2},
             {0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2});
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

TEST(ShapeKernelsTest, PadConstantWithValue) {
  Tensor x = floats({2}, {1, 2});
  Tensor pads = ints1D({1, 2});
  Tensor value = floats({}, {9});
  expectNear(runOk("onnx.Pad", {&x, &pads, &value}), {5}, {9, 1, 2, 9, 9});
  // Opset 2: attributes.
  expectNear(runOk("onnx.Pad", {&x},
                   {{"pads", std::vector<int64_t>{2, 0}}, {"value", 7.0f}}, 2),
             {4}, {7, 7, 1, 2});
}

TEST(ShapeKernelsTest, PadReflect) {
  Tensor x = floats({3}, {1, 2, 3});
  Tensor pads = ints1D({2, 2});
  expectNear(runOk("onnx.Pad", {&x, &pads}, {{"mode", "reflect"}}), {7},
             {3, 2, 1, 2, 3, 2, 1});
  // Pads larger than the dimension reflect repeatedly (numpy semantics).
  Tensor big = ints1D({5, 0});
  expectNear(runOk("onnx.Pad", {&x, &big}, {{"mode", "reflect"}}), {8},
             {2, 1, 2, 3, 2, 1, 2, 3});
}

TEST(ShapeKernelsTest, PadEdge2D) {
  Tensor x = floats({2, 2}, {1, 2, 3, 4});
  Tensor pads = ints1D({1, 0, 0, 2});
  expectNear(runOk("onnx.Pad", {&x, &pads}, {{"mode", "edge"}}), {3, 4},
             {1, 2, 2, 2, 1, 2, 2, 2, 3, 4, 4, 4});
}

TEST(ShapeKernelsTest, PadNegativeCrops) {
  Tensor x = iota({2, 4});
  Tensor pads = ints1D({0, -1, 1, -2});
  expectNear(runOk("onnx.Pad", {&x, &pads}), {3, 1}, {1, 5, 0});
  // Crop then pad in edge mode: the edge is the cropped edge.
  Tensor x1 = floats({4}, {1, 2, 3, 4});
  Tensor p1 = ints1D({-1, 2});
  expectNear(runOk("onnx.Pad", {&x1, &p1}, {{"mode", "edge"}}), {5},
             {2, 3, 4, 4, 4});
  // Cropping more than the dimension is an error.
  Tensor p2 = ints1D({-3, -2});
  runError("onnx.Pad", {&x1, &p2});
}

TEST(ShapeKernelsTest, PadAxesAndWrap) {
  Tensor x = iota({2, 3});
  Tensor pads = ints1D({1, 2});
  Tensor axes = ints1D({-1});
  expectNear(
      runOk("onnx.Pad", {&x, &pads, nullptr, &axes}, {{"mode", "wrap"}}, 19),
      {2, 6}, {2, 0, 1, 2, 0, 1, 5, 3, 4, 5, 3, 4});
  // wrap needs opset 19.
  runError("onnx.Pad", {&x, &pads, nullptr, &axes}, {{"mode", "wrap"}}, 18);
}

TEST(ShapeKernelsTest, PadStrings) {
  Tensor x(ElementKind::String, {2});
  x.strings() = {"a", "b"};
  Tensor pads = ints1D({1, 1});
  Tensor y = runOk("onnx.Pad", {&x, &pads}, {{"mode", "edge"}});
  EXPECT_EQ(y.strings(), (std::vector<std::string>{"a", "a", "b", "b"}));
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

namespace {
Tensor resize(const Tensor &x, const Tensor *scales, const Tensor *sizes,
              std::vector<NamedAttribute> attrs, int64_t opset = 13,
              const Tensor *roi = nullptr) {
  return runOk("onnx.Resize", {&x, roi, scales, sizes}, std::move(attrs),
               opset);
}
} // namespace

TEST(ShapeKernelsTest, ResizeNearestModes) {
  Tensor x = floats({1, 4}, {10, 20, 30, 40});
  Tensor sizes = ints1D({1, 3});
  // scale 0.75, half_pixel: x_orig = (o + 0.5) / 0.75 - 0.5
  //   = 0.1667, 1.5, 2.8333.
  expectNear(resize(x, nullptr, &sizes, {{"mode", "nearest"}}), {1, 3},
             {10, 20, 40});
  expectNear(
      resize(x, nullptr, &sizes,
             {{"mode", "nearest"}, {"nearest_mode", "round_prefer_ceil"}}),
      {1, 3}, {10, 30, 40});
  expectNear(resize(x, nullptr, &sizes,
                    {{"mode", "nearest"}, {"nearest_mode", "floor"}}),
             {1, 3}, {10, 20, 30});
  expectNear(resize(x, nullptr, &sizes,
                    {{"mode", "nearest"}, {"nearest_mode", "ceil"}}),
             {1, 3}, {20, 30, 40});
}

TEST(ShapeKernelsTest, ResizeNearestUpsampleAsymmetric) {
  Tensor x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor scales = floats({4}, {1, 1, 2, 3});
  expectNear(resize(x, &scales, nullptr,
                    {{"mode", "nearest"},
                     {"coordinate_transformation_mode", "asymmetric"},
                     {"nearest_mode", "floor"}}),
             {1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                            3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  // Opset 10: asymmetric with floor when upsampling.
  Tensor y10 = runOk("onnx.Resize", {&x, &scales}, {{"mode", "nearest"}}, 10);
  EXPECT_EQ(values(y10),
            values(resize(x, &scales, nullptr,
                          {{"mode", "nearest"},
                           {"coordinate_transformation_mode", "asymmetric"},
                           {"nearest_mode", "floor"}})));
}

TEST(ShapeKernelsTest, ResizeLinearHalfPixel) {
  Tensor x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor scales = floats({4}, {1, 1, 2, 2});
  // ONNX test_resize_upsample_scales_linear.
  expectNear(resize(x, &scales, nullptr, {{"mode", "linear"}}), {1, 1, 4, 4},
             {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3,
              3.25, 3.75, 4});
}

TEST(ShapeKernelsTest, ResizeLinearAlignCorners) {
  Tensor x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor scales = floats({4}, {1, 1, 2, 2});
  // ONNX test_resize_upsample_scales_linear_align_corners.
  expectNear(resize(x, &scales, nullptr,
                    {{"mode", "linear"},
                     {"coordinate_transformation_mode", "align_corners"}}),
             {1, 1, 4, 4},
             {1, 1.333333, 1.666667, 2, 1.666667, 2, 2.333333, 2.666667,
              2.333333, 2.666667, 3, 3.333333, 3, 3.333333, 3.666667, 4});
  // Downsampling uses the fractional output width (scale * input width), as
  // the ONNX reference: test_resize_downsample_scales_linear_align_corners.
  Tensor x2 = floats({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor s2 = floats({4}, {1, 1, 0.6f, 0.6f});
  expectNear(resize(x2, &s2, nullptr,
                    {{"mode", "linear"},
                     {"coordinate_transformation_mode", "align_corners"}}),
             {1, 1, 1, 2}, {1, 3.142857});
}

TEST(ShapeKernelsTest, ResizeTfCropAndResizeExtrapolates) {
  Tensor x = iota({1, 4});
  Tensor roi = floats({4}, {0, -0.5f, 1, 1.5f});
  Tensor sizes = ints1D({1, 3});
  // x_orig = -1.5, 1.5, 4.5 along axis 1: ends fall outside [0, 3].
  expectNear(resize(x, nullptr, &sizes,
                    {{"mode", "linear"},
                     {"coordinate_transformation_mode", "tf_crop_and_resize"},
                     {"extrapolation_value", 10.0f}},
                    13, &roi),
             {1, 3}, {10, 1.5, 10});
}

TEST(ShapeKernelsTest, ResizeAxesAndAspectRatio) {
  Tensor x = iota({1, 2, 4});
  Tensor sizes = ints1D({4, 4});
  // not_larger: scale = min(4/2, 4/4) = 1 on axes (1, 2): unchanged.
  Tensor y = resize(x, nullptr, &sizes,
                    {{"mode", "nearest"},
                     {"axes", std::vector<int64_t>{1, 2}},
                     {"keep_aspect_ratio_policy", "not_larger"}},
                    18);
  EXPECT_EQ(y.shape(), (Shape{1, 2, 4}));
  EXPECT_EQ(values(y), values(x));
  Tensor y2 = resize(x, nullptr, &sizes,
                     {{"mode", "nearest"},
                      {"axes", std::vector<int64_t>{1, 2}},
                      {"keep_aspect_ratio_policy", "not_smaller"}},
                     18);
  EXPECT_EQ(y2.shape(), (Shape{1, 4, 8}));
}

TEST(ShapeKernelsTest, ResizeErrors) {
  Tensor x = iota({1, 4});
  Tensor scales = floats({2}, {1, 2});
  Tensor sizes = ints1D({1, 8});
  runError("onnx.Resize", {&x, nullptr, &scales, &sizes});
  runError("onnx.Resize", {&x, nullptr, nullptr, nullptr});
  runError("onnx.Resize", {&x, nullptr, &scales}, {{"antialias", int64_t(1)}},
           18);
  Tensor zero = floats({2}, {1, 0});
  runError("onnx.Resize", {&x, nullptr, &zero});
  Tensor s3 = floats({3}, {1, 1, 1});
  runError("onnx.Resize", {&x, nullptr, &s3});
}

//===----------------------------------------------------------------------===//
// Small ops
//===----------------------------------------------------------------------===//

TEST(ShapeKernelsTest, ShapeStartEnd) {
  Tensor x = iota({2, 3, 4});
  Tensor y = runOk("onnx.Shape", {&x},
                   {{"start", int64_t(-2)}, {"end", int64_t(100)}}, 15);
  EXPECT_EQ(y.toInts(), (std::vector<int64_t>{3, 4}));
}

TEST(ShapeKernelsTest, ConstantOfShapeAndConstant) {
  Tensor shape = ints1D({2, 2});
  auto d = std::make_shared<DenseElements>(
      ElementKind::I32, std::vector<int64_t>{1}, std::string("\x05\0\0\0", 4));
  Tensor y =
      runOk("onnx.ConstantOfShape", {&shape}, {{"value", DenseElementsRef(d)}});
  EXPECT_EQ(y.kind(), ElementKind::I32);
  EXPECT_EQ(y.toInts(), (std::vector<int64_t>{5, 5, 5, 5}));
  Tensor c =
      runOk("onnx.Constant", {}, {{"value_ints", std::vector<int64_t>{1, 2}}});
  EXPECT_EQ(c.kind(), ElementKind::I64);
  EXPECT_EQ(c.toInts(), (std::vector<int64_t>{1, 2}));
}

TEST(ShapeKernelsTest, RangeAndCumSum) {
  Tensor s = ints({}, {10}), l = ints({}, {4}), d = ints({}, {-3});
  EXPECT_EQ(runOk("onnx.Range", {&s, &l, &d}).toInts(),
            (std::vector<int64_t>{10, 7}));
  Tensor x = floats({4}, {1, 2, 3, 4});
  Tensor axis = ints({}, {0});
  expectNear(runOk("onnx.CumSum", {&x, &axis},
                   {{"exclusive", int64_t(1)}, {"reverse", int64_t(1)}}),
             {4}, {9, 7, 4, 0});
}

TEST(ShapeKernelsTest, DepthToSpaceRoundTrip) {
  Tensor x = iota({1, 8, 2, 3});
  for (const char *mode : {"DCR", "CRD"}) {
    Tensor y = runOk("onnx.DepthToSpace", {&x},
                     {{"blocksize", int64_t(2)}, {"mode", mode}});
    EXPECT_EQ(y.shape(), (Shape{1, 2, 4, 6}));
    if (std::string(mode) == "DCR") {
      Tensor back =
          runOk("onnx.SpaceToDepth", {&y}, {{"blocksize", int64_t(2)}});
      EXPECT_EQ(values(back), values(x));
    }
  }
}

TEST(ShapeKernelsTest, GatherNDAndScatterND) {
  Tensor data = iota({2, 2, 2});
  Tensor idx = ints({2, 1}, {1, 0});
  // batch_dims=1: batch b picks data[b][idx[b]].
  expectNear(
      runOk("onnx.GatherND", {&data, &idx}, {{"batch_dims", int64_t(1)}}),
      {2, 2}, {2, 3, 4, 5});
  Tensor idx2 = ints({2, 3}, {0, 1, 1, 1, 0, -2});
  expectNear(runOk("onnx.GatherND", {&data, &idx2}), {2}, {3, 4});

  Tensor x = floats({4}, {1, 2, 3, 4});
  Tensor sidx = ints({2, 1}, {1, 1});
  Tensor upd = floats({2}, {10, 20});
  expectNear(
      runOk("onnx.ScatterND", {&x, &sidx, &upd}, {{"reduction", "add"}}, 16),
      {4}, {1, 32, 3, 4});
  // Reductions do not exist before opset 16.
  runError("onnx.ScatterND", {&x, &sidx, &upd}, {{"reduction", "add"}}, 13);
  Tensor bad = ints({1, 1}, {4});
  Tensor upd1 = floats({1}, {0});
  runError("onnx.ScatterND", {&x, &bad, &upd1});
}

TEST(ShapeKernelsTest, UpsampleOpset7Attribute) {
  Tensor x = floats({1, 2}, {1, 2});
  expectNear(
      runOk("onnx.Upsample", {&x}, {{"scales", std::vector<float>{1, 2}}}, 7),
      {1, 4}, {1, 1, 2, 2});
  expectNear(runOk("onnx.Upsample", {&x},
                   {{"scales", std::vector<float>{1, 2}}, {"mode", "linear"}},
                   7),
             {1, 4}, {1, 1.5, 2, 2});
}

TEST(ShapeKernelsTest, OneHotSkipsOutOfRange) {
  Tensor idx = ints1D({0, -1, 3, 7});
  Tensor depth = floats({}, {3.7f});
  Tensor vals = floats({2}, {0, 1});
  expectNear(runOk("onnx.OneHot", {&idx, &depth, &vals}), {4, 3},
             {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0});
}

TEST(ShapeKernelsTest, EmptyTensorsWithHugeDims) {
  // Zero elements, but dimensions far too large for per-coordinate tables.
  Tensor x(ElementKind::F32, {0, int64_t(1) << 40});
  EXPECT_EQ(runOk("onnx.Transpose", {&x}).shape(),
            (Shape{int64_t(1) << 40, 0}));
  Tensor s = ints1D({1}), e = ints1D({INT64_MAX}), a = ints1D({1});
  EXPECT_EQ(runOk("onnx.Slice", {&x, &s, &e, &a}).shape(),
            (Shape{0, (int64_t(1) << 40) - 1}));
  Tensor pads = ints1D({0, 1, 0, 1});
  EXPECT_EQ(runOk("onnx.Pad", {&x, &pads}, {{"mode", "constant"}}).shape(),
            (Shape{0, (int64_t(1) << 40) + 2}));
  Tensor y = runOk("onnx.Concat", {&x, &x}, {{"axis", int64_t(0)}});
  EXPECT_EQ(y.shape(), (Shape{0, int64_t(1) << 40}));
  Tensor idx = ints1D({0});
  runError("onnx.Gather", {&x, &idx});
  Tensor e2(ElementKind::F32, {int64_t(1) << 40, 0});
  EXPECT_EQ(runOk("onnx.EyeLike", {&e2}).shape(), e2.shape());
}

TEST(ShapeKernelsTest, ResizeHalfPixelSymmetric) {
  // ONNX test_resize_{down,up}sample_scales_linear_half_pixel_symmetric
  // (opset 19; not in the installed conformance data).
  Tensor x = floats({1, 1, 1, 4}, {1, 2, 3, 4});
  Tensor s = floats({4}, {1, 1, 1, 0.6f});
  expectNear(
      resize(x, &s, nullptr,
             {{"mode", "linear"},
              {"coordinate_transformation_mode", "half_pixel_symmetric"}},
             19),
      {1, 1, 1, 2}, {1.6666666f, 3.3333333f});
  Tensor x2 = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor s2 = floats({4}, {1, 1, 2.3f, 2.94f});
  Tensor y =
      resize(x2, &s2, nullptr,
             {{"mode", "linear"},
              {"coordinate_transformation_mode", "half_pixel_symmetric"}},
             19);
  ASSERT_EQ(y.shape(), (Shape{1, 1, 4, 5}));
  std::vector<float> v = values(y);
  EXPECT_NEAR(v[0], 1.0f, 1e-5);
  EXPECT_NEAR(v[1], 1.15986395f, 1e-5);
  EXPECT_NEAR(v[5], 1.56521738f, 1e-5);
  EXPECT_NEAR(v[6], 1.72508133f, 1e-5);
}

// Gemm with transB sums each output over k in order, four columns at a
// time: the bits are those of one in-order double sum per output (the same
// as B stored untransposed), with A's zero terms left out as the kernel
// leaves them. Terms of 2^60 that cancel around small ones make another
// order give other bits (checked below, so the test can fail).
TEST(NNKernelsTest, GemmTransBSumsEachOutputInOrder) {
  const int64_t m = 3, k = 36, n = 6; // a block of 4 columns and 2 more
  Tensor a(ElementKind::F32, {m, k}), b(ElementKind::F32, {n, k}),
      bt(ElementKind::F32, {k, n});
  // Zero terms (left out) and, where B holds its big terms, 1.
  for (int64_t i = 0; i < m * k; ++i) {
    int64_t p = i % k;
    a.data<float>()[i] = p % 3 == 0   ? 1.0f
                         : p % 5 == 1 ? 0.0f
                                      : float(1 + i % 7);
  }
  for (int64_t j = 0; j < n; ++j)
    for (int64_t p = 0; p < k; ++p) {
      double big = std::ldexp(1.0, 60) * (p % 2 ? -1 : 1);
      float v = float(p % 3 == 0 ? big : 1.0 / (1 + j + p));
      b.data<float>()[j * k + p] = v;
      bt.data<float>()[p * n + j] = v;
    }
  Tensor y = runOk("onnx.Gemm", {&a, &b}, {{"transB", Attribute(int64_t(1))}});
  Tensor yt = runOk("onnx.Gemm", {&a, &bt});
  ASSERT_EQ(y.shape(), (Shape{m, n}));
  int orderMatters = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0, reversed = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        if (a.data<float>()[i * k + p] != 0.0f)
          sum += double(a.data<float>()[i * k + p]) *
                 double(b.data<float>()[j * k + p]);
        int64_t q = k - 1 - p;
        if (a.data<float>()[i * k + q] != 0.0f)
          reversed += double(a.data<float>()[i * k + q]) *
                      double(b.data<float>()[j * k + q]);
      }
      float want = float(sum), other = float(reversed);
      orderMatters += std::memcmp(&want, &other, 4) != 0;
      EXPECT_EQ(std::memcmp(&y.data<float>()[i * n + j], &want, 4), 0)
          << "y[" << i << "][" << j << "]";
      EXPECT_EQ(std::memcmp(&yt.data<float>()[i * n + j], &want, 4), 0)
          << "untransposed y[" << i << "][" << j << "]";
    }
  EXPECT_GT(orderMatters, 0) << "no output depends on the order of its sum";
}

//===- PlanBuilderTest.cpp - Arena placement and runs of built plans ------===//

#include "qopt/CodeGen/PlanBuilder.h"
#include "PlanTestSupport.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/Graph.h"
#include "qopt/Interpreter/Interpreter.h"
#include "qopt/Plan/Steps.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

namespace {

// Two branches that meet again, so values of different lifetimes overlap.
const char *kBranches = R"(
graph @g(%x: tensor<1x8x6x6xf32>) -> (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) {
  %a = onnx.Tanh(%x) : tensor<1x8x6x6xf32>
  %b = onnx.Relu(%a) : tensor<1x8x6x6xf32>
  %c = onnx.Sigmoid(%a) : tensor<1x8x6x6xf32>
  %d = onnx.Add(%b, %c) : tensor<1x8x6x6xf32>
  %e = onnx.Neg(%d) : tensor<1x8x6x6xf32>
  %f = onnx.Abs(%e) : tensor<1x8x6x6xf32>
  %g = onnx.Mul(%f, %x) : tensor<1x8x6x6xf32>
  return %g, %b
}
)";

TEST(PlanBuilder, ArenaPlacesLiveTensorsApart) {
  auto b = build(kBranches);
  const Plan &plan = *b->plan;
  // Lifetimes by step: from the writer to the last reader (inputs from the
  // start, outputs to the end).
  size_t n = plan.tensors.size(), steps = plan.steps.size();
  std::vector<size_t> first(n, SIZE_MAX), last(n, 0);
  for (int id : plan.inputs)
    first[id] = 0;
  for (size_t s = 0; s < steps; ++s) {
    for (int id : plan.steps[s]->outputs)
      first[id] = std::min(first[id], s);
    for (int id : plan.steps[s]->inputs)
      last[id] = std::max(last[id], s);
  }
  for (int id : plan.outputs)
    last[id] = steps;
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const PlanTensor &t = plan.tensors[i];
    ASSERT_EQ(t.arenaOffset % 64, 0);
    EXPECT_LE(t.arenaOffset + t.byteSize(), plan.arenaBytes);
    total += (t.byteSize() + 63) / 64 * 64;
    for (size_t j = 0; j < i; ++j) {
      const PlanTensor &u = plan.tensors[j];
      bool together = first[i] <= std::max(last[j], first[j]) &&
                      first[j] <= std::max(last[i], first[i]);
      bool apart = t.arenaOffset + int64_t(t.byteSize()) <= u.arenaOffset ||
                   u.arenaOffset + int64_t(u.byteSize()) <= t.arenaOffset;
      EXPECT_TRUE(!together || apart)
          << "'" << t.name << "' and '" << u.name << "' share bytes";
    }
  }
  // Dead values gave their bytes to later ones.
  EXPECT_LT(plan.arenaBytes, total);
}

TEST(PlanBuilder, RunMatchesInterpreter) {
  auto b = build(kBranches);
  auto inputs = makeRandomInputs(b->model->getGraph(), 7);
  ASSERT_TRUE(bool(inputs));
  expectMatchesInterpreter(*b, *inputs);
}

// Int8 and float tensors that stay NHWC between conv steps: max pooling
// s8 as stored (+128), q.add of an s8 and a u8 operand onto s8 with Relu,
// channel Concat/Split of f32 and s8, q.quantize of the NCHW input straight
// into NHWC and of NHWC f32 (their s8 results stored +128; the f32 ones
// that a Split or Concat writes quantized by the copy, %cat kept for its
// other readers, %s1 not), q.dequantize tables. Every scale is a power of two
// and every product exact, so the conv steps equal the reference too and the
// whole plan must match it bit for bit.
const char *kDataSteps = R"(
!x = !quant.uniform<i8:f32, 0.5>
!w = !quant.uniform<i8:f32, 0.015625>
!y = !quant.uniform<i8:f32, 0.25:3>
!u = !quant.uniform<u8:f32, 0.125:100>
graph @g(%x: tensor<1x4x6x6xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>, tensor<1x8x3x3xf32>, tensor<1x8x3x3xf32>, tensor<1x8x3x3xf32>) {
  %w = onnx.Constant() {value = dense<[3, -5, 7, 1, -2, 4, 6, -8, 9, 2, -3, 5, -7, 8, 1, -1]>} : tensor<4x4x1x1x!w>
  %qx = q.quantize(%x) : tensor<1x4x6x6x!x>
  %c = q.conv(%qx, %w) {kernel_shape = [1, 1]} : tensor<1x4x6x6x!y>
  %p, _ = onnx.MaxPool(%c) {kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]} : tensor<1x4x3x3x!y>, tensor<1x4x3x3xi64>
  %c2 = q.conv(%qx, %w) {kernel_shape = [1, 1], strides = [2, 2]} : tensor<1x4x3x3x!u>
  %a = q.add(%p, %c2) {activation = "relu"} : tensor<1x4x3x3x!y>
  %f = q.conv(%qx, %w) {kernel_shape = [1, 1], strides = [2, 2]} : tensor<1x4x3x3xf32>
  %cat = onnx.Concat(%f, %f) {axis = 1} : tensor<1x8x3x3xf32>
  %s0, %s1 = onnx.Split(%cat) {axis = 1} : tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>
  %qs = q.quantize(%s1) : tensor<1x4x3x3x!y>
  %icat = onnx.Concat(%qs, %p) {axis = 1} : tensor<1x8x3x3x!y>
  %da = q.dequantize(%a) : tensor<1x4x3x3xf32>
  %dqs = q.dequantize(%qs) : tensor<1x4x3x3xf32>
  %dcat = q.dequantize(%icat) : tensor<1x8x3x3xf32>
  %qcat = q.quantize(%cat) : tensor<1x8x3x3x!u>
  %dqcat = q.dequantize(%qcat) : tensor<1x8x3x3xf32>
  return %da, %dqs, %s0, %cat, %dcat, %dqcat
}
)";

TEST(PlanBuilder, DataStepsKeepNhwcAndMatchInterpreter) {
  auto b = build(kDataSteps);
  const Plan &plan = *b->plan;
  std::map<std::string, int> kinds;
  for (const auto &step : plan.steps)
    ++kinds[(step->getKindName() + " " + step->op).str()];
  EXPECT_EQ(kinds["int8 conv q.conv"], 2);
  // The add reads %c2 alone, as its second operand: its pair table.
  EXPECT_EQ(kinds["int8 conv q.conv+q.add"], 1);
  // Whose table is the add's arithmetic (s8 stored + 128, relu, %c2 the
  // add's second operand), computed in the epilogue.
  for (const auto &step : plan.steps)
    if (const auto *conv = llvm::dyn_cast<ConvStep>(step.get()))
      if (step->op == "q.conv+q.add") {
        EXPECT_TRUE(conv->getConv().getEpilogue().pairArithmetic);
        EXPECT_EQ(conv->getConv().hasPairInEpilogue(), plan.isa != Isa::Scalar);
      }
  EXPECT_EQ(kinds["max pool onnx.MaxPool"], 1);
  EXPECT_EQ(kinds["table q.add"], 0);
  EXPECT_EQ(kinds["channel copy onnx.Concat"], 1);
  EXPECT_EQ(kinds["channel copy onnx.Concat+q.quantize"], 1);
  EXPECT_EQ(kinds["channel copy onnx.Split+q.quantize"], 1);
  // The graph input's (NCHW f32 into NHWC s8); %qs and %qcat are the
  // copies'.
  EXPECT_EQ(kinds["quantize q.quantize"], 1);
  for (const auto &step : plan.steps)
    if (step->op == "onnx.Concat+q.quantize" ||
        step->op == "onnx.Split+q.quantize") {
      // %cat, returned and split, stays; %s1 goes.
      std::set<std::string> names;
      for (int id : step->outputs)
        names.insert(plan.tensors[id].name);
      std::set<std::string> want = {"cat", "qcat"};
      if (step->op == "onnx.Split+q.quantize")
        want = {"s0", "qs"};
      EXPECT_EQ(names, want) << step->op;
    }
  EXPECT_EQ(kinds["table q.dequantize"], 4);
  // One reformat out per returned value, none in.
  EXPECT_EQ(kinds["reformat "], 6);

  auto inputs = makeRandomInputs(b->model->getGraph(), 11);
  ASSERT_TRUE(bool(inputs));
  expectMatchesInterpreter(*b, *inputs);
}

// The NHWC max pool keeps the reference's rules for NaN (a NaN first in
// its window stays, a later one does not) and for windows with no value
// inside the input (-inf); an elementwise op on an NHWC operand whose
// result has no NHWC layout (i64) stays in ONNX layout.
const char *kPoolEdges = R"(
!x = !quant.uniform<i8:f32, 0.5>
!w = !quant.uniform<i8:f32, 0.015625>
graph @g(%x: tensor<1x2x3x3xf32>, %q: tensor<1x4x2x2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x5x5xf32>, tensor<1x4x2x2xi64>) {
  %w = onnx.Constant() {value = dense<[3, -5, 7, 1, -2, 4, 6, -8, 9, 2, -3, 5, -7, 8, 1, -1]>} : tensor<4x4x1x1x!w>
  %a, _ = onnx.MaxPool(%x) {kernel_shape = [2, 2], pads = [1, 1, 1, 1]} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>
  %b, _ = onnx.MaxPool(%x) {kernel_shape = [1, 1], pads = [1, 1, 1, 1]} : tensor<1x2x5x5xf32>, tensor<1x2x5x5xi64>
  %qq = q.quantize(%q) : tensor<1x4x2x2x!x>
  %f = q.conv(%qq, %w) {kernel_shape = [1, 1]} : tensor<1x4x2x2xf32>
  %i = onnx.Cast(%f) {to = 7} : tensor<1x4x2x2xi64>
  return %a, %b, %i
}
)";

TEST(PlanBuilder, MaxPoolNaNAndEmptyWindowsAsTheReference) {
  auto b = build(kPoolEdges);
  ASSERT_TRUE(b->plan);
  auto inputs = makeRandomInputs(b->model->getGraph(), 5);
  ASSERT_TRUE(bool(inputs));
  Tensor &x = (*inputs)["x"];
  x.setDouble(0, std::nan(""));                             // first in a window
  x.setDouble(4, std::nan(""));                             // later in windows
  x.setDouble(9, -std::numeric_limits<double>::infinity()); // channel 1
  expectMatchesInterpreter(*b, *inputs);
  auto got = b->plan->run(*inputs);
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  // The corners of %b lie in the padding only.
  EXPECT_EQ((*got)[1].getDouble(0), -std::numeric_limits<double>::infinity());
}

// Reshape, Flatten, Squeeze, Unsqueeze and Identity keep their elements
// order in ONNX layout, and a Concat of tensors that live there (along the
// last axis, and along the first) copies rows: every one of them is a copy
// step, none a float step, and the bytes are the interpreter's, with the
// NHWC result of a conv flattened by its reformat to NCHW (written as the
// Flatten's result, no copy).
const char *kCopies = R"(
!x = !quant.uniform<i8:f32, 0.5>
!w = !quant.uniform<i8:f32, 0.015625>
graph @g(%x: tensor<1x4x3x2xf32>, %y: tensor<1x4x6xf32>) -> (tensor<1x4x12xf32>, tensor<1x48xf32>, tensor<2x4x6xf32>, tensor<1x24xf32>) {
  %w = onnx.Constant() {value = dense<[3, -5, 7, 1, -2, 4, 6, -8, 9, 2, -3, 5, -7, 8, 1, -1]>} : tensor<4x4x1x1x!w>
  %s = onnx.Constant() {value = dense<[1, 4, 6]>} : tensor<3xi64>
  %a = onnx.Constant() {value = dense<[0]>} : tensor<1xi64>
  %r = onnx.Reshape(%x, %s) : tensor<1x4x6xf32>
  %c = onnx.Concat(%r, %y) {axis = 2} : tensor<1x4x12xf32>
  %f = onnx.Flatten(%c) {axis = 1} : tensor<1x48xf32>
  %q = onnx.Squeeze(%f, %a) : tensor<48xf32>
  %u = onnx.Unsqueeze(%q, %a) : tensor<1x48xf32>
  %i = onnx.Identity(%u) : tensor<1x48xf32>
  %c0 = onnx.Concat(%y, %r) {axis = 0} : tensor<2x4x6xf32>
  %qx = q.quantize(%x) : tensor<1x4x3x2x!x>
  %conv = q.conv(%qx, %w) {kernel_shape = [1, 1]} : tensor<1x4x3x2xf32>
  %fc = onnx.Flatten(%conv) {axis = 1} : tensor<1x24xf32>
  return %c, %i, %c0, %fc
}
)";

TEST(PlanBuilder, ReshapesAndOnnxLayoutConcatsAreCopies) {
  auto b = build(kCopies);
  ASSERT_TRUE(b->plan);
  std::map<std::string, int> kinds;
  for (const auto &step : b->plan->steps)
    ++kinds[(step->getKindName() + " " + step->op).str()];
  for (const char *op : {"onnx.Reshape", "onnx.Flatten", "onnx.Squeeze",
                         "onnx.Unsqueeze", "onnx.Identity"})
    EXPECT_EQ(kinds[std::string("channel copy ") + op], 1) << op;
  EXPECT_TRUE(llvm::any_of(b->plan->steps, [&](const auto &step) {
    const auto *r = llvm::dyn_cast<ReformatStep>(step.get());
    return r && r->rowStride == 6 &&
           b->plan->tensors[r->outputs[0]].name == "fc";
  })) << "the conv's reformat writes %fc";
  EXPECT_EQ(kinds["channel copy onnx.Concat"], 2);
  for (const auto &step : b->plan->steps)
    EXPECT_NE(step->getKind(), PlanStep::Kind::Float) << step->getName().str();
  auto inputs = makeRandomInputs(b->model->getGraph(), 3);
  ASSERT_TRUE(bool(inputs));
  expectMatchesInterpreter(*b, *inputs);
}

// Max pooling over blocks of channels (16 floats, 64 bytes) and their
// tails: 20 float channels with NaN first in a window and later in one
// (channel 3, a block's), and 70 int8 channels, against the reference.
const char *kWidePools = R"(
!x = !quant.uniform<i8:f32, 0.05:3>
graph @g(%x: tensor<1x20x4x4xf32>, %y: tensor<1x70x5x5xf32>) -> (tensor<1x20x3x3xf32>, tensor<1x70x3x3xf32>) {
  %a, _ = onnx.MaxPool(%x) {kernel_shape = [2, 2], strides = [2, 2], pads = [1, 1, 1, 1]} : tensor<1x20x3x3xf32>, tensor<1x20x3x3xi64>
  %q = q.quantize(%y) : tensor<1x70x5x5x!x>
  %p, _ = onnx.MaxPool(%q) {kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]} : tensor<1x70x3x3x!x>, tensor<1x70x3x3xi64>
  %d = q.dequantize(%p) : tensor<1x70x3x3xf32>
  return %a, %d
}
)";

TEST(PlanBuilder, MaxPoolBlocksOfChannelsAsTheReference) {
  auto b = build(kWidePools);
  ASSERT_TRUE(b->plan);
  int pools = 0;
  for (const auto &step : b->plan->steps)
    pools += step->getKind() == PlanStep::Kind::Pool;
  EXPECT_EQ(pools, 2);
  auto inputs = makeRandomInputs(b->model->getGraph(), 9);
  ASSERT_TRUE(bool(inputs));
  Tensor &x = (*inputs)["x"];
  // NCHW: channel 3's pixel (1, 1) is first in output (1, 1)'s window
  // (rows and columns 1-2), its pixel (0, 2) second in output (0, 1)'s
  // (row 0, columns 1-2).
  x.setDouble(3 * 16 + 1 * 4 + 1, std::nan(""));
  x.setDouble(3 * 16 + 0 * 4 + 2, std::nan(""));
  x.setDouble(17 * 16 + 2 * 4 + 3, std::nan("")); // a tail channel
  expectMatchesInterpreter(*b, *inputs);
  auto got = b->plan->run(*inputs);
  ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
  EXPECT_TRUE(std::isnan((*got)[0].getDouble(3 * 9 + 1 * 3 + 1)));
  EXPECT_FALSE(std::isnan((*got)[0].getDouble(3 * 9 + 0 * 3 + 1)));
}

// q.concat of s8, u8 and s8 operands on three grids onto an s8 result: a
// channel copy through a requantize table for each of the first two (built
// by the reference kernel), a plain copy for the third (already on the
// result's grid), in NHWC with s8 stored + 128; the bytes equal the
// interpreter's. The random inputs reach past both ends of the result's
// range.
const char *kRequantizingConcat = R"(
!a = !quant.uniform<i8:f32, 0.5>
!b = !quant.uniform<u8:f32, 0.25:100>
!c = !quant.uniform<i8:f32, 0.375:-3>
graph @g(%x: tensor<1x4x5x5xf32>, %y: tensor<1x3x5x5xf32>, %z: tensor<1x2x5x5xf32>) -> (tensor<1x9x5x5xf32>) {
  %qx = q.quantize(%x) : tensor<1x4x5x5x!a>
  %qy = q.quantize(%y) : tensor<1x3x5x5x!b>
  %qz = q.quantize(%z) : tensor<1x2x5x5x!c>
  %cat = q.concat(%qx, %qy, %qz) {axis = 1} : tensor<1x9x5x5x!c>
  %d = q.dequantize(%cat) : tensor<1x9x5x5xf32>
  return %d
}
)";

TEST(PlanBuilder, RequantizingConcatIsAChannelCopyThroughTables) {
  auto b = build(kRequantizingConcat);
  ASSERT_TRUE(b->plan);
  const ChannelCopyStep *copy = nullptr;
  for (const auto &step : b->plan->steps) {
    EXPECT_NE(step->getKind(), PlanStep::Kind::Float) << step->getName().str();
    if (auto *c = llvm::dyn_cast<ChannelCopyStep>(step.get()))
      copy = c;
  }
  ASSERT_TRUE(copy);
  ASSERT_EQ(copy->getPieces().size(), 3u);
  EXPECT_EQ(copy->getPieces()[0].table.size(), 256u);
  EXPECT_EQ(copy->getPieces()[1].table.size(), 256u);
  EXPECT_TRUE(copy->getPieces()[2].table.empty());
  for (unsigned seed : {3u, 4u}) {
    auto inputs = makeRandomInputs(b->model->getGraph(), seed);
    ASSERT_TRUE(bool(inputs));
    for (const char *name : {"x", "y", "z"}) {
      Tensor &t = (*inputs)[name];
      for (int64_t i = 0; i < t.numElements(); ++i)
        t.setDouble(i, t.getDouble(i) * 80);
    }
    expectMatchesInterpreter(*b, *inputs);
  }
}

TEST(PlanBuilder, ReadAndWriteValueInNhwc) {
  // A value written in ONNX layout reads back the same through an NHWC
  // tensor, s8 stored as u8 + 128.
  Plan plan;
  PlanTensor t;
  t.name = "v";
  t.kind = ElementKind::I8;
  t.shape = {1, 3, 2, 2};
  t.layout = PlanLayout::Nhwc;
  t.arenaOffset = 0;
  plan.tensors.push_back(t);
  std::vector<char> arena(64);
  PlanRun run(plan, arena.data());
  Tensor v(ElementKind::I8, t.shape);
  for (int64_t i = 0; i < v.numElements(); ++i)
    v.setInt(i, i * 20 - 128);
  ASSERT_TRUE(run.writeValue(0, v));
  // NHWC: channel innermost; element (c=1, h=0, w=1) is NCHW index 5.
  EXPECT_EQ(static_cast<uint8_t>(arena[(0 * 2 + 1) * 3 + 1]),
            uint8_t(5 * 20 - 128 + 128));
  EXPECT_TRUE(run.readValue(0).identicalTo(v));
  Tensor wrong(ElementKind::U8, t.shape);
  EXPECT_FALSE(run.writeValue(0, wrong));
}

TEST(PlanBuilder, DynamicShapeIsAnError) {
  Context ctx;
  auto m = parseModel(R"(
graph @g(%x: tensor<"N"x4xf32>) -> (tensor<"N"x4xf32>) {
  %y = onnx.Tanh(%x) : tensor<"N"x4xf32>
  return %y
}
)",
                      "<test>", ctx);
  ASSERT_TRUE(bool(m));
  auto plan = buildPlan(**m, PlanBuildOptions{});
  ASSERT_FALSE(bool(plan));
  EXPECT_EQ(llvm::toString(plan.takeError()),
            "graph input: value 'x' has no static shape "
            "(tensor<\"N\"x4xf32>); the CPU plan needs every shape");
}

} // namespace

namespace {

// A separately quantized SiLU (sigmoid table, then mul of x and it) and a
// dequantize after it: the three tables become one, of 4-byte results.
// Another sigmoid whose result is also returned keeps its own step, and so
// does the mul after it.
const char *kTableChains = R"(
!x = !quant.uniform<i8:f32, 0.05:-3>
!s = !quant.uniform<u8:f32, 0.00390625>
!y = !quant.uniform<i8:f32, 0.04:2>
graph @g(%x: tensor<1x4x5x5xf32>) -> (tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5x!s>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>) {
  %qx = q.quantize(%x) : tensor<1x4x5x5x!x>
  %s = q.activation(%qx) {activation = "sigmoid"} : tensor<1x4x5x5x!s>
  %m = q.mul(%qx, %s) : tensor<1x4x5x5x!y>
  %d = q.dequantize(%m) : tensor<1x4x5x5xf32>
  %s2 = q.activation(%qx) {activation = "sigmoid"} : tensor<1x4x5x5x!s>
  %m2 = q.mul(%s2, %qx) : tensor<1x4x5x5x!y>
  %d2 = q.dequantize(%m2) : tensor<1x4x5x5xf32>
  %s3 = q.activation(%qx) {activation = "sigmoid"} : tensor<1x4x5x5x!s>
  %m3 = q.mul(%s3, %qx) : tensor<1x4x5x5x!y>
  %d3 = q.dequantize(%m3) : tensor<1x4x5x5xf32>
  %t = q.activation(%qx) {activation = "tanh"} : tensor<1x4x5x5x!s>
  %r = q.requantize(%t) : tensor<1x4x5x5x!y>
  %d4 = q.dequantize(%r) : tensor<1x4x5x5xf32>
  return %d, %d2, %s2, %d3, %d4
}
)";

TEST(PlanBuilder, TableChainsBecomeOneTable) {
  auto b = build(kTableChains);
  std::vector<std::string> tables;
  for (const auto &step : b->plan->steps)
    if (const auto *t = llvm::dyn_cast<TableStep>(step.get()))
      tables.push_back(step->op + "/" + std::to_string(t->getResultBytes()));
  // The first chain is one table to f32. In the second, %s2 is returned, so
  // its sigmoid stays, and the mul reads two tensors: composing the
  // dequantize into it would take 65,536 entries, so both stay.
  // The third has the sigmoid as the mul's first operand; the fourth is a
  // chain of one-operand tables.
  EXPECT_EQ(tables, (std::vector<std::string>{
                        "q.activation+q.mul+q.dequantize/4", "q.activation/1",
                        "q.mul/1", "q.dequantize/4",
                        "q.activation+q.mul+q.dequantize/4",
                        "q.activation+q.requantize+q.dequantize/4"}));
  auto inputs = makeRandomInputs(b->model->getGraph(), 3);
  ASSERT_TRUE(bool(inputs));
  expectMatchesInterpreter(*b, *inputs);
}

// Conv results read by one table step alone, and ones that are not: the
// same conv four times over the same input.
const char *kConvTables = R"(
!x = !quant.uniform<i8:f32, 0.05>
!w = !quant.uniform<i8:f32, 0.02>
!y = !quant.uniform<i8:f32, 0.1:3>
!s = !quant.uniform<u8:f32, 0.004>
graph @g(%x: tensor<1x4x5x5xf32>) -> (tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5x!y>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>) {
  %w = onnx.Constant() {value = dense<[3, -5, 7, 1, -2, 4, 6, -8, 9, 2, -3, 5, -7, 8, 1, -1]>} : tensor<4x4x1x1x!w>
  %qx = q.quantize(%x) : tensor<1x4x5x5x!x> loc("qx")
  %c1 = q.conv(%qx, %w) {kernel_shape = [1, 1]} : tensor<1x4x5x5x!y> loc("alone")
  %s1 = q.activation(%c1) {activation = "sigmoid"} : tensor<1x4x5x5x!s> loc("sig1")
  %a1 = q.add(%s1, %s1) : tensor<1x4x5x5x!y> loc("add1")
  %d1 = q.dequantize(%a1) : tensor<1x4x5x5xf32> loc("dq1")
  %c2 = q.conv(%qx, %w) {kernel_shape = [1, 1]} : tensor<1x4x5x5x!y> loc("shared")
  %s2 = q.activation(%c2) {activation = "sigmoid"} : tensor<1x4x5x5x!s> loc("sig2")
  %a2 = q.add(%s2, %s2) : tensor<1x4x5x5x!y> loc("add2")
  %d2 = q.dequantize(%a2) : tensor<1x4x5x5xf32> loc("dq2")
  %e2 = q.dequantize(%c2) : tensor<1x4x5x5xf32> loc("dq2b")
  %c3 = q.conv(%qx, %w) {kernel_shape = [1, 1]} : tensor<1x4x5x5x!y> loc("returned")
  %s3 = q.activation(%c3) {activation = "sigmoid"} : tensor<1x4x5x5x!s> loc("sig3")
  %a3 = q.add(%s3, %s3) : tensor<1x4x5x5x!y> loc("add3")
  %d3 = q.dequantize(%a3) : tensor<1x4x5x5xf32> loc("dq3")
  %f4 = q.conv(%qx, %w) {kernel_shape = [1, 1]} : tensor<1x4x5x5xf32> loc("float")
  return %d1, %d2, %d3, %c3, %f4, %e2
}
)";

TEST(PlanBuilder, TablesReadingAConvAloneBecomeItsOutputTable) {
  // sig1 reads conv 'alone' alone: fused. Conv 'shared' feeds a dequantize
  // too, and conv 'returned' is a graph output: their sigmoids stay table
  // steps. A float conv has no stored bytes to look up.
  auto b = build(kConvTables);
  std::vector<std::string> steps;
  for (const auto &step : b->plan->steps)
    if (step->getKind() == PlanStep::Kind::Conv ||
        step->getKind() == PlanStep::Kind::Table)
      steps.push_back(step->getName().str());
  EXPECT_EQ(steps,
            (std::vector<std::string>{"alone+sig1", "add1", "dq1", "shared",
                                      "sig2", "add2", "dq2", "dq2b", "returned",
                                      "sig3", "add3", "dq3", "float"}));
  // The fused path gives the unfused paths' bytes, at 1 and 2 threads.
  auto inputs = makeRandomInputs(b->model->getGraph(), 3);
  ASSERT_TRUE(bool(inputs));
  for (unsigned threads : {1u, 2u}) {
    auto got = b->plan->run(*inputs, PlanRunOptions{threads});
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    EXPECT_TRUE((*got)[0].identicalTo((*got)[1])) << threads << " threads";
    EXPECT_TRUE((*got)[0].identicalTo((*got)[2])) << threads << " threads";
  }
}

// Two-operand tables reading a conv's result alone: the add with the conv
// first, with it second, after a sigmoid the conv already took (the two
// tables composed), and after a grouped conv of more channels than a panel.
// Each has a twin whose conv result is also returned, so its tables stay
// steps.
const char *kConvPairTables = R"(
!x = !quant.uniform<i8:f32, 0.05>
!w = !quant.uniform<i8:f32, 0.02>
!y = !quant.uniform<i8:f32, 0.1:3>
!o = !quant.uniform<u8:f32, 0.03:120>
!s = !quant.uniform<u8:f32, 0.004>
graph @g(%x: tensor<1x4x5x5xf32>, %x2: tensor<1x4x5x5xf32>, %x3: tensor<1x32x5x5xf32>) -> (tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x32x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x32x5x5xf32>, tensor<1x4x5x5x!y>, tensor<1x4x5x5x!y>, tensor<1x4x5x5x!y>, tensor<1x32x5x5x!y>) {
  %w = onnx.Constant() {value = dense<[3, -5, 7, 1, -2, 4, 6, -8, 9, 2, -3, 5, -7, 8, 1, -1]>} : tensor<4x4x1x1x!w>
  %wd = onnx.Constant() {value = dense<[-45, 115, -89, -26, 39, -115, -109, 83, 10, -103, -34, 22, -113, 105, 2, -73, -118, -105, -16, -20, -110, -66, -104, 14, -19, -112, 84, 17, -96, 115, -70, 34, 33, 22, 115, -112, 20, 22, -26, -115, 122, -71, -116, 15, 92, -93, -53, -20, -91, 11, -97, 19, -49, 16, 81, 47, -81, -101, 21, 19, 36, -79, -32, -103, 13, 55, -111, 17, -112, 31, -75, 0, 47, 9, -18, 71, -47, -8, 22, 109, -11, -35, -51, -64, 76, -81, 51, 72, -65, -107, 20, -51, 7, -1, 97, -40, 59, -13, -54, 28, 123, -109, -97, 4, -20, -85, 66, -40, -89, 111, -2, -20, -117, 119, 44, -108, 68, 15, 19, 75, 97, 82, -47, -40, 50, -38, 25, 0, 21, 77, -11, -110, 88, -104, 114, -58, -6, 51, 43, -111, -112, 60, 52, -48, 38, 20, 127, 47, 83, -13, -55, 56, -29, 100, 44, -39, -122, 113, -9, -37, -84, 29, -98, -1, -112, -72, 69, -54, -94, 62, -64, -26, -27, 107, 96, 0, -107, -85, -13, -25, 13, -56, 99, -92, 82, -17, 94, 13, -56, 53, -21, 125, -36, 47, 99, -30, 118, -68, -89, -106, -82, -89, -68, 41, -68, -124, -3, 85, 23, -81, -60, -55, -126, -90, -20, 9, -33, 29, 17, -46, 116, -95, 49, 92, 4, 116, 31, 40, 46, 62, -114, -11, 103, 95, 72, 116, 96, 47, 77, 16, -27, -26, -25, -27, -101, -4, 35, -25, -112, -79, -110, 125, -74, -15, -86, -99, -40, 26, -114, -101, -127, 18, -89, 10, -102, 115, -34, 30, -121, -109, 96, -74, 30, -31, -89, 35, -63, 117, -39, 27, -34, -6, -96, -98, 90, -3, 127, 123]>} : tensor<32x1x3x3x!w>
  %qx = q.quantize(%x) : tensor<1x4x5x5x!x> loc("qx")
  %o = q.quantize(%x2) : tensor<1x4x5x5x!o> loc("qo")
  %o3 = q.quantize(%x3) : tensor<1x32x5x5x!o> loc("qo3")
  %c1 = q.conv(%qx, %w) {kernel_shape = [1, 1]} : tensor<1x4x5x5x!y> loc("first")
  %a1 = q.add(%c1, %o) {activation = "relu"} : tensor<1x4x5x5x!y> loc("add1")
  %d1 = q.dequantize(%a1) : tensor<1x4x5x5xf32> loc("dq1")
  %c2 = q.conv(%qx, %w) {kernel_shape = [1, 1]} : tensor<1x4x5x5x!y> loc("second")
  %a2 = q.mul(%o, %c2) : tensor<1x4x5x5x!y> loc("mul2")
  %d2 = q.dequantize(%a2) : tensor<1x4x5x5xf32> loc("dq2")
  %c3 = q.conv(%qx, %w) {kernel_shape = [1, 1]} : tensor<1x4x5x5x!y> loc("sigmoid")
  %s3 = q.activation(%c3) {activation = "sigmoid"} : tensor<1x4x5x5x!s> loc("sig3")
  %a3 = q.add(%s3, %o) : tensor<1x4x5x5x!y> loc("add3")
  %d3 = q.dequantize(%a3) : tensor<1x4x5x5xf32> loc("dq3")
  %c4 = q.conv(%qx, %wd) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], group = 4} : tensor<1x32x5x5x!y> loc("grouped")
  %a4 = q.add(%c4, %o3) : tensor<1x32x5x5x!y> loc("add4")
  %d4 = q.dequantize(%a4) : tensor<1x32x5x5xf32> loc("dq4")
  %t1 = q.conv(%qx, %w) {kernel_shape = [1, 1]} : tensor<1x4x5x5x!y> loc("twin1")
  %b1 = q.add(%t1, %o) {activation = "relu"} : tensor<1x4x5x5x!y> loc("twin_add1")
  %e1 = q.dequantize(%b1) : tensor<1x4x5x5xf32> loc("twin_dq1")
  %t2 = q.conv(%qx, %w) {kernel_shape = [1, 1]} : tensor<1x4x5x5x!y> loc("twin2")
  %b2 = q.mul(%o, %t2) : tensor<1x4x5x5x!y> loc("twin_mul2")
  %e2 = q.dequantize(%b2) : tensor<1x4x5x5xf32> loc("twin_dq2")
  %t3 = q.conv(%qx, %w) {kernel_shape = [1, 1]} : tensor<1x4x5x5x!y> loc("twin3")
  %u3 = q.activation(%t3) {activation = "sigmoid"} : tensor<1x4x5x5x!s> loc("twin_sig3")
  %b3 = q.add(%u3, %o) : tensor<1x4x5x5x!y> loc("twin_add3")
  %e3 = q.dequantize(%b3) : tensor<1x4x5x5xf32> loc("twin_dq3")
  %t4 = q.conv(%qx, %wd) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], group = 4} : tensor<1x32x5x5x!y> loc("twin4")
  %b4 = q.add(%t4, %o3) : tensor<1x32x5x5x!y> loc("twin_add4")
  %e4 = q.dequantize(%b4) : tensor<1x32x5x5xf32> loc("twin_dq4")
  return %d1, %d2, %d3, %d4, %e1, %e2, %e3, %e4, %t1, %t2, %t3, %t4
}
)";

TEST(PlanBuilder, PairTablesReadingAConvAloneJoinIt) {
  auto b = build(kConvPairTables);
  std::vector<std::string> convs;
  for (const auto &step : b->plan->steps)
    if (step->getKind() == PlanStep::Kind::Conv)
      convs.push_back(step->op);
  EXPECT_EQ(convs, (std::vector<std::string>{"q.conv+q.add", "q.conv+q.mul",
                                             "q.conv+q.activation+q.add",
                                             "q.conv+q.add", "q.conv", "q.conv",
                                             "q.conv", "q.conv"}));
  // The fused convs give their twins' bytes, at 1 and 2 threads.
  auto inputs = makeRandomInputs(b->model->getGraph(), 5);
  ASSERT_TRUE(bool(inputs));
  for (unsigned threads : {1u, 2u}) {
    auto got = b->plan->run(*inputs, PlanRunOptions{threads});
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    for (int k = 0; k < 4; ++k)
      EXPECT_TRUE((*got)[k].identicalTo((*got)[k + 4]))
          << "output " << k << ", " << threads << " threads";
  }
}

} // namespace

namespace {

// Tensors of no elements have no bytes to point to: the plan copies
// nothing in, through its float step, or out (found by qopt-fuzz-PlanFile
// under UBSan: memcpy from a null pointer).
TEST(PlanBuilder, EmptyTensorsRun) {
  auto b = build(R"(
graph @g(%x: tensor<0x4xf32>) -> (tensor<0x4xf32>) {
  %y = onnx.Relu(%x) : tensor<0x4xf32>
  return %y
}
)");
  TensorMap inputs;
  inputs["x"] = Tensor(ElementKind::F32, {0, 4});
  EXPECT_EQ(inputs["x"].bytes(), nullptr);
  expectMatchesInterpreter(*b, inputs);
}

} // namespace

// Float Add/Sub/Mul/Div of two f32 tensors of the result's shape run on the
// arena without the kernel's copies, computing as the kernel does (in
// double, rounded once): NaN, infinities, signed zeros, subnormals and
// overflow give its bits. A broadcasting Add takes the kernel's path.
const char *kFloatArithmetic = R"(
graph @g(%a: tensor<2x3x4xf32>, %b: tensor<2x3x4xf32>, %c: tensor<3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %s = onnx.Add(%a, %b) : tensor<2x3x4xf32>
  %d = onnx.Sub(%a, %b) : tensor<2x3x4xf32>
  %m = onnx.Mul(%a, %b) : tensor<2x3x4xf32>
  %q = onnx.Div(%a, %b) : tensor<2x3x4xf32>
  %bc = onnx.Add(%a, %c) : tensor<2x3x4xf32>
  return %s, %d, %m, %q, %bc
}
)";

TEST(PlanBuilder, FloatArithmeticGivesTheKernelsBits) {
  auto b = build(kFloatArithmetic);
  ASSERT_TRUE(b->plan);
  auto inputs = makeRandomInputs(b->model->getGraph(), 11);
  ASSERT_TRUE(bool(inputs));
  const double inf = std::numeric_limits<double>::infinity();
  const double specials[] = {std::nan(""), inf,    -inf,   0.0,     -0.0,
                             1e-45,        -3e-39, 3.4e38, -3.4e38, 1.5};
  Tensor &a = (*inputs)["a"], &bb = (*inputs)["b"];
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 2; ++j) {
      a.setDouble(i * 2 + j, specials[i]);
      bb.setDouble(i * 2 + j, specials[(i + j * 3) % 10]);
    }
  expectMatchesInterpreter(*b, *inputs);
}

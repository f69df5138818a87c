//===- PlanRewritesTest.cpp - The plan builder's rewrites of its steps ----===//
//
// What the builder does to the steps once lowered: reformats written into
// the results they feed, copies reading from where their channels came,
// arithmetic in tiles, and runs that reuse their buffers. Each plan still
// gives the interpreter's bits.
//
//===----------------------------------------------------------------------===//

#include "PlanTestSupport.h"
#include "qopt/Plan/Steps.h"

#include "llvm/Support/Casting.h"

#include <limits>
#include <map>
#include <set>
#include <thread>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

namespace {

// A detection head's tail: NHWC f32 results concatenated along channels,
// taken to NCHW, reshaped to rows and concatenated along the last axis
// with a part in ONNX layout. The reformats write their rows into the
// Concat's result (%out), one per part of the channel Concat (rows 0-3
// and 4-7), so that neither the channel Concats nor the Reshapes' copies
// remain; the part from %e stays a piece of the Concat. %ra, a Reshape of a
// reformatted %a that the graph returns, takes its reformat's rows
// directly; %rb, returned besides, stays a piece.
const char *kDetectTail = R"(
!x = !quant.uniform<i8:f32, 0.5>
!w = !quant.uniform<i8:f32, 0.015625>
graph @g(%x: tensor<1x4x6x6xf32>, %e: tensor<1x8x5xf32>) -> (tensor<1x8x50xf32>, tensor<1x4x36xf32>, tensor<1x8x9xf32>) {
  %w = onnx.Constant() {value = dense<[3, -5, 7, 1, -2, 4, 6, -8, 9, 2, -3, 5, -7, 8, 1, -1]>} : tensor<4x4x1x1x!w>
  %s36 = onnx.Constant() {value = dense<[1, 8, 36]>} : tensor<3xi64>
  %s9 = onnx.Constant() {value = dense<[1, 8, 9]>} : tensor<3xi64>
  %sa = onnx.Constant() {value = dense<[1, 4, 36]>} : tensor<3xi64>
  %qx = q.quantize(%x) : tensor<1x4x6x6x!x>
  %a = q.conv(%qx, %w) {kernel_shape = [1, 1]} : tensor<1x4x6x6xf32>
  %a2 = q.conv(%qx, %w) {kernel_shape = [1, 1], activation = "relu"} : tensor<1x4x6x6xf32>
  %b = q.conv(%qx, %w) {kernel_shape = [1, 1], strides = [2, 2]} : tensor<1x4x3x3xf32>
  %b2 = q.conv(%qx, %w) {kernel_shape = [1, 1], strides = [2, 2], activation = "relu"} : tensor<1x4x3x3xf32>
  %ca = onnx.Concat(%a, %a2) {axis = 1} : tensor<1x8x6x6xf32>
  %cb = onnx.Concat(%b, %b2) {axis = 1} : tensor<1x8x3x3xf32>
  %rca = onnx.Reshape(%ca, %s36) : tensor<1x8x36xf32>
  %rb = onnx.Reshape(%cb, %s9) : tensor<1x8x9xf32>
  %out = onnx.Concat(%e, %rca, %rb) {axis = 2} : tensor<1x8x50xf32>
  %ra = onnx.Reshape(%a, %sa) : tensor<1x4x36xf32>
  return %out, %ra, %rb
}
)";

TEST(PlanBuilder, ReformatsWriteIntoTheConcatTheyFeed) {
  auto b = build(kDetectTail);
  const Plan &plan = *b->plan;
  std::map<std::string, int> placed; // result name -> reformats into it
  int reshapes = 0, channelConcats = 0, fromRow4 = 0;
  const ChannelCopyStep *outCopy = nullptr;
  for (const auto &step : plan.steps) {
    if (const auto *r = llvm::dyn_cast<ReformatStep>(step.get());
        r && r->rowStride) {
      placed[plan.tensors[r->outputs[0]].name] += int(1 + r->columnOffset);
      fromRow4 += r->firstRow == 4 && r->batchRows == 8;
    }
    if (step->op == "onnx.Reshape")
      ++reshapes;
    if (step->op == "onnx.Concat" &&
        plan.tensors[step->outputs[0]].layout == PlanLayout::Nhwc)
      ++channelConcats;
    if (auto *copy = llvm::dyn_cast<ChannelCopyStep>(step.get()))
      if (plan.tensors[copy->outputs[0]].name == "out")
        outCopy = copy;
  }
  // Two reformats each but %ra's, %rca's at column 5 of %out (%rb is
  // returned too); the second part's from row 4.
  EXPECT_EQ(placed["out"], 12);
  EXPECT_EQ(placed["ra"], 1);
  EXPECT_EQ(placed["rb"], 2);
  EXPECT_EQ(fromRow4, 2);
  EXPECT_EQ(reshapes, 0);
  EXPECT_EQ(channelConcats, 0);
  ASSERT_TRUE(outCopy);
  std::set<std::string> sources;
  for (const auto &p : outCopy->getPieces())
    sources.insert(plan.tensors[p.from].name);
  EXPECT_EQ(sources, (std::set<std::string>{"rb", "e"}));
  ASSERT_FALSE(verifyPlan(plan));
  auto inputs = makeRandomInputs(b->model->getGraph(), 5);
  ASSERT_TRUE(bool(inputs));
  expectMatchesInterpreter(*b, *inputs);
}

// A C2f block's data movement: a conv's f32 result split in halves, one
// half added to another conv's result, the halves and the sum concatenated
// and quantized. The Concat reads the halves from the conv's result: the
// Split writes only the half the Add reads (and, quantized, the half %qb
// the graph returns).
const char *kSplitConcat = R"(
!x = !quant.uniform<i8:f32, 0.5>
!w = !quant.uniform<i8:f32, 0.015625>
!y = !quant.uniform<u8:f32, 0.125:100>
graph @g(%x: tensor<1x4x5x7xf32>) -> (tensor<1x6x5x7xf32>, tensor<1x2x5x7xf32>) {
  %w = onnx.Constant() {value = dense<[3, -5, 7, 1, -2, 4, 6, -8, 9, 2, -3, 5, -7, 8, 1, -1]>} : tensor<4x4x1x1x!w>
  %w2 = onnx.Constant() {value = dense<[1, 2, -3, 4, 5, -6, 7, 8]>} : tensor<2x4x1x1x!w>
  %qx = q.quantize(%x) : tensor<1x4x5x7x!x>
  %c = q.conv(%qx, %w) {kernel_shape = [1, 1], activation = "silu"} : tensor<1x4x5x7xf32>
  %a, %b = onnx.Split(%c) {axis = 1} : tensor<1x2x5x7xf32>, tensor<1x2x5x7xf32>
  %d = q.conv(%qx, %w2) {kernel_shape = [1, 1]} : tensor<1x2x5x7xf32>
  %s = onnx.Add(%b, %d) : tensor<1x2x5x7xf32>
  %cat = onnx.Concat(%a, %b, %s) {axis = 1} : tensor<1x6x5x7xf32>
  %q = q.quantize(%cat) : tensor<1x6x5x7x!y>
  %dq = q.dequantize(%q) : tensor<1x6x5x7xf32>
  %qb = q.quantize(%b) : tensor<1x2x5x7x!y>
  %dqb = q.dequantize(%qb) : tensor<1x2x5x7xf32>
  return %dq, %dqb
}
)";

TEST(PlanBuilder, ConcatsReadSplitPartsFromTheirSource) {
  auto b = build(kSplitConcat);
  const Plan &plan = *b->plan;
  const PlanStep *split = nullptr, *concat = nullptr;
  for (const auto &step : plan.steps) {
    if (step->op == "onnx.Split+q.quantize")
      split = step.get();
    if (step->op == "onnx.Concat+q.quantize")
      concat = step.get();
  }
  ASSERT_TRUE(split && concat);
  auto names = [&](const std::vector<int> &ids) {
    std::set<std::string> out;
    for (int id : ids)
      out.insert(plan.tensors[id].name);
    return out;
  };
  EXPECT_EQ(names(split->outputs), (std::set<std::string>{"b", "qb"}));
  EXPECT_EQ(names(concat->inputs), (std::set<std::string>{"c", "s"}));
  auto inputs = makeRandomInputs(b->model->getGraph(), 17);
  ASSERT_TRUE(bool(inputs));
  expectMatchesInterpreter(*b, *inputs);
}

// Add, Sub, Mul and Div of same-shape f32 tensors run as the kernel's
// arithmetic in tiles of 16,384 elements (25,600 here: two tiles, the last
// short), threads sharing them, with the interpreter's bits.
const char *kArithmetic = R"(
graph @g(%x: tensor<1x4x80x80xf32>, %y: tensor<1x4x80x80xf32>) -> (tensor<1x4x80x80xf32>) {
  %a = onnx.Add(%x, %y) : tensor<1x4x80x80xf32>
  %s = onnx.Sub(%a, %x) : tensor<1x4x80x80xf32>
  %m = onnx.Mul(%s, %a) : tensor<1x4x80x80xf32>
  %d = onnx.Div(%m, %y) : tensor<1x4x80x80xf32>
  return %d
}
)";

TEST(PlanBuilder, SameShapeArithmeticRunsInTiles) {
  auto b = build(kArithmetic);
  const Plan &plan = *b->plan;
  ASSERT_EQ(plan.steps.size(), 4u);
  auto inputs = makeRandomInputs(b->model->getGraph(), 9);
  ASSERT_TRUE(bool(inputs));
  expectMatchesInterpreter(*b, *inputs);
  // Each tile on its own, last first, into an arena of NaNs: together they
  // write every element.
  std::vector<float> arena(plan.arenaBytes / sizeof(float) + 16,
                           std::numeric_limits<float>::quiet_NaN());
  PlanRun run(plan, reinterpret_cast<char *>(arena.data()));
  for (int id : plan.inputs)
    ASSERT_TRUE(run.writeValue(id, inputs->at(plan.tensors[id].name)));
  for (const auto &step : plan.steps) {
    ASSERT_EQ(step->getNumTiles(run), 2) << step->op;
    for (int64_t tile = 1; tile >= 0; --tile)
      ASSERT_FALSE(step->run(run, tile, tile + 1, nullptr));
  }
  auto interp = Interpreter::create(*b->model);
  ASSERT_TRUE(bool(interp));
  auto want = (*interp)->run(*inputs);
  ASSERT_TRUE(bool(want));
  EXPECT_TRUE(run.readValue(plan.outputs[0]).identicalTo((*want)[0]));
}

// Runs take the arena and scratch the last finished run left: what a run
// leaves in them does not reach the next one's results, whatever their
// inputs and thread counts, and runs at once on two threads each get
// their own.
TEST(PlanBuilder, RunsReuseTheirBuffersWithoutCarryingValues) {
  auto b = build(kSplitConcat);
  auto first = makeRandomInputs(b->model->getGraph(), 21);
  auto second = makeRandomInputs(b->model->getGraph(), 22);
  ASSERT_TRUE(first && second);
  auto expectSame = [](const std::vector<Tensor> &got,
                       const std::vector<Tensor> &want, const char *what) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(got[i].identicalTo(want[i])) << what << ", output " << i;
  };
  auto want = b->plan->run(*first, PlanRunOptions{1});
  auto other = b->plan->run(*second, PlanRunOptions{2});
  ASSERT_TRUE(want && other);
  EXPECT_FALSE((*want)[0].identicalTo((*other)[0])) << "the inputs differ";
  for (unsigned threads : {1u, 2u, 1u}) {
    auto again = b->plan->run(*first, PlanRunOptions{threads});
    ASSERT_TRUE(bool(again));
    expectSame(*again, *want, "after another run");
  }
  std::vector<Tensor> fromThread[2];
  std::thread runners[2];
  for (int t = 0; t < 2; ++t)
    runners[t] = std::thread([&, t] {
      for (int i = 0; i < 200; ++i) {
        auto got = b->plan->run(t ? *second : *first, PlanRunOptions{1});
        if (got)
          fromThread[t] = std::move(*got);
        else
          llvm::consumeError(got.takeError());
      }
    });
  for (std::thread &runner : runners)
    runner.join();
  expectSame(fromThread[0], *want, "on a thread of its own");
  expectSame(fromThread[1], *other, "on a thread of its own");
}

} // namespace

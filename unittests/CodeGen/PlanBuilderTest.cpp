//===- PlanBuilderTest.cpp - Arena placement and runs of built plans ------===//

#include "qopt/CodeGen/PlanBuilder.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/Graph.h"
#include "qopt/Runtime/Interpreter.h"

#include "gtest/gtest.h"

using namespace qopt;
using namespace qopt::rt;

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

struct Built {
  Context ctx;
  std::unique_ptr<Model> model;
  std::unique_ptr<Plan> plan;
};

std::unique_ptr<Built> build(const char *text) {
  auto b = std::make_unique<Built>();
  auto m = parseModel(text, "<test>", b->ctx);
  EXPECT_TRUE(bool(m)) << llvm::toString(m.takeError());
  b->model = std::move(*m);
  auto plan = buildPlan(*b->model, PlanBuildOptions{});
  EXPECT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  b->plan = std::move(*plan);
  return b;
}

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
  auto interp = Interpreter::create(*b->model);
  ASSERT_TRUE(bool(interp));
  auto want = (*interp)->run(*inputs);
  ASSERT_TRUE(bool(want));
  for (unsigned threads : {1u, 2u}) {
    auto got = b->plan->run(*inputs, PlanRunOptions{threads});
    ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < got->size(); ++i)
      EXPECT_TRUE((*got)[i].identicalTo((*want)[i])) << "output " << i;
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

//===- PlanFileTest.cpp - .qplan round trips, damage, and the verifier ----===//

#include "qopt/Plan/PlanFile.h"
#include "qopt/CodeGen/PlanBuilder.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/Graph.h"
#include "qopt/Interpreter/Interpreter.h"
#include "qopt/Plan/Steps.h"

#include "llvm/Support/Casting.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/xxhash.h"

#include "gtest/gtest.h"

#include <limits>
#include <random>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

namespace {

// Every kind of step: quantize (NCHW into NHWC), a 3x3 conv with bias, a
// residual and SiLU, a strided 1x1 conv (u8 weights with zero points), a
// conv with a sigmoid table fused as its output table, a q.mul by a
// per-channel operand (a broadcast table), max pool, a q.add table,
// channel Concat/Split (one part quantized by the Split), a requantizing
// q.concat of 3-D tensors (rows in ONNX layout), a q.matmul (u8 weights, an
// int8 gemm step), a nearest Resize, dequantize tables, reformats (one
// written into a Reshape's result), and float
// steps with attributes (Transpose's perm, Softmax's axis) and a constant
// operand.
const char *kEveryStep = R"(
!x = !quant.uniform<i8:f32, 0.5>
!w = !quant.uniform<i8:f32:0, {0.015625,0.03125,0.0078125,0.015625}>
!y = !quant.uniform<i8:f32, 0.25:3>
!u = !quant.uniform<u8:f32, 0.125:100>
!b = !quant.uniform<i32:f32:0, {0.0078125,0.015625,0.00390625,0.0078125}>
!wu = !quant.uniform<u8:f32:0, {0.015625:120,0.03125:131,0.0078125:128,0.015625:255}>
!wm = !quant.uniform<u8:f32, 0.03:100>
graph @g(%x: tensor<1x4x6x6xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x8x3x3xf32>, tensor<1x6x6x4xf32>, tensor<1x4x3x3xf32>, tensor<1x24x12xf32>, tensor<1x4x6x6xf32>, tensor<1x24x4xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x4x3x3xf32>, tensor<1x4x9xf32>) {
  %w = onnx.Constant() {value = dense<[3, -5, 7, 1, -2, 4, 6, -8, 9, 2, -3, 5, -7, 8, 1, -1]>} : tensor<4x4x1x1x!w>
  %w3 = onnx.Constant() {value = dense<[1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 15, -16, 17, -18, 19, -20, 21, -22, 23, -24, 25, -26, 27, -28, 29, -30, 31, -32, 33, -34, 35, -36, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -11, -12, -13, -14, -15, -16, -17, -18, -19, -20, -21, -22, -23, -24, -25, -26, -27, -28, -29, -30, -31, -32, -33, -34, -35, -36, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62, 64, 66, 68, 70, 72]>} : tensor<4x4x3x3x!w>
  %wu = onnx.Constant() {value = dense<[0, 255, 120, 7, 131, 9, 200, 64, 128, 1, 250, 3, 255, 254, 0, 17]>} : tensor<4x4x1x1x!wu>
  %wm = onnx.Constant() {value = dense<[0, 255, 120, 7, 131, 9, 200, 64, 128, 1, 250, 3, 255, 254, 0, 17, 99, 100, 101, 33, 180, 2, 77, 160]>} : tensor<6x4x!wm>
  %bias = onnx.Constant() {value = dense<[5, -7, 9, -11]>} : tensor<4x!b>
  %k = onnx.Constant() {value = dense<[2.0, 0.5, -1.0, 4.0]>} : tensor<1x4x1x1xf32>
  %rows = onnx.Constant() {value = dense<[1, 24, 6]>} : tensor<3xi64>
  %two = onnx.Constant() {value = dense<[1.0, 1.0, 2.0, 2.0]>} : tensor<4xf32>
  %r9 = onnx.Constant() {value = dense<[1, 4, 9]>} : tensor<3xi64>
  %qx = q.quantize(%x) : tensor<1x4x6x6x!x>
  %c = q.conv(%qx, %w) {kernel_shape = [1, 1]} : tensor<1x4x6x6x!y>
  %r = q.conv(%qx, %w3, %bias, %c) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], activation = "silu"} : tensor<1x4x6x6x!y>
  %p, _ = onnx.MaxPool(%r) {kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]} : tensor<1x4x3x3x!y>, tensor<1x4x3x3xi64>
  %c2 = q.conv(%qx, %wu) {kernel_shape = [1, 1], strides = [2, 2]} : tensor<1x4x3x3x!u>
  %a = q.add(%p, %c2) {activation = "relu"} : tensor<1x4x3x3x!y>
  %f = q.conv(%qx, %w) {kernel_shape = [1, 1], strides = [2, 2]} : tensor<1x4x3x3xf32>
  %cat = onnx.Concat(%f, %f) {axis = 1} : tensor<1x8x3x3xf32>
  %s0, %s1 = onnx.Split(%cat) {axis = 1} : tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>
  %da = q.dequantize(%a) : tensor<1x4x3x3xf32>
  %dr = q.dequantize(%r) : tensor<1x4x6x6xf32>
  %m = onnx.Mul(%dr, %k) : tensor<1x4x6x6xf32>
  %t = onnx.Transpose(%m) {perm = [0, 2, 3, 1]} : tensor<1x6x6x4xf32>
  %sm = onnx.Softmax(%t) {axis = 2} : tensor<1x6x6x4xf32>
  %s = onnx.Add(%s0, %da) : tensor<1x4x3x3xf32>
  %m3 = onnx.Reshape(%m, %rows) : tensor<1x24x6xf32>
  %q3 = q.quantize(%m3) : tensor<1x24x6x!x>
  %q3u = q.quantize(%m3) : tensor<1x24x6x!y>
  %rc = q.concat(%q3, %q3u) {axis = 2} : tensor<1x24x12x!y>
  %drc = q.dequantize(%rc) : tensor<1x24x12xf32>
  %c5 = q.conv(%qx, %wu) {kernel_shape = [1, 1]} : tensor<1x4x6x6x!y>
  %s5 = q.activation(%c5) {activation = "sigmoid"} : tensor<1x4x6x6x!u>
  %a5 = q.add(%s5, %s5) : tensor<1x4x6x6x!y>
  %d5 = q.dequantize(%a5) : tensor<1x4x6x6xf32>
  %qk = q.quantize(%k) : tensor<1x4x1x1x!u>
  %bm = q.mul(%r, %qk) : tensor<1x4x6x6x!y>
  %dbm = q.dequantize(%bm) : tensor<1x4x6x6xf32>
  %mm = q.matmul(%q3, %wm) {activation = "relu"} : tensor<1x24x4x!y>
  %dmm = q.dequantize(%mm) : tensor<1x24x4xf32>
  %up = onnx.Resize(%a, _, %two) {mode = "nearest"} : tensor<1x4x6x6x!y>
  %dup = q.dequantize(%up) : tensor<1x4x6x6xf32>
  %qs1 = q.quantize(%s1) : tensor<1x4x3x3x!u>
  %ds1 = q.dequantize(%qs1) : tensor<1x4x3x3xf32>
  %fr = onnx.Reshape(%f, %r9) : tensor<1x4x9xf32>
  return %da, %cat, %sm, %s, %drc, %dup, %dmm, %d5, %dbm, %ds1, %fr
}
)";

struct Built {
  Context ctx;
  std::unique_ptr<Model> model;
  std::unique_ptr<Plan> plan;
};

std::unique_ptr<Built> build(const char *text, Isa isa = Isa::Scalar) {
  auto b = std::make_unique<Built>();
  auto m = parseModel(text, "<test>", b->ctx);
  EXPECT_TRUE(bool(m)) << llvm::toString(m.takeError());
  if (!m)
    return b;
  b->model = std::move(*m);
  auto plan = buildPlan(*b->model, PlanBuildOptions{isa});
  EXPECT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  if (plan)
    b->plan = std::move(*plan);
  return b;
}

std::string serialized(const Plan &plan) {
  auto bytes = serializePlan(plan);
  EXPECT_TRUE(bool(bytes)) << llvm::toString(bytes.takeError());
  return bytes ? *bytes : std::string();
}

/// The checksum recomputed after the payload changed.
void resealChecksum(std::string &file) {
  llvm::support::endian::write64le(
      &file[24], llvm::xxHash64(llvm::StringRef(file).drop_front(32)));
}

std::string errorOf(llvm::StringRef file) {
  auto plan = readPlan(file, Isa::Scalar);
  if (plan)
    return "";
  return llvm::toString(plan.takeError());
}

TEST(PlanFile, RoundTripGivesTheSameBitsOnEveryIsa) {
  auto b = build(kEveryStep);
  ASSERT_TRUE(b->plan);
  std::map<std::string, int> kinds;
  for (const auto &s : b->plan->steps)
    ++kinds[s->getKindName().str()];
  for (const char *kind :
       {"int8 conv", "reformat", "float", "table", "max pool", "channel copy",
        "quantize", "resize", "int8 gemm"})
    EXPECT_GT(kinds[kind], 0) << "the model has no " << kind << " step";
  EXPECT_TRUE(llvm::any_of(b->plan->steps, [](const auto &s) {
    const auto *conv = llvm::dyn_cast<ConvStep>(s.get());
    return conv && conv->getConv().getEpilogue().weightZero ==
                       std::vector<int32_t>{-8, 3, 0, 127};
  })) << "the u8 weights' zero points, - 128";
  EXPECT_TRUE(llvm::any_of(b->plan->steps, [](const auto &s) {
    const auto *conv = llvm::dyn_cast<ConvStep>(s.get());
    return conv && conv->getConv().getEpilogue().outputTable.size() == 256;
  })) << "no conv with an output table";
  EXPECT_TRUE(llvm::any_of(b->plan->steps, [](const auto &s) {
    const auto *conv = llvm::dyn_cast<ConvStep>(s.get());
    return conv && conv->getConv().getEpilogue().pairArithmetic;
  })) << "no conv computing its pair table's add";
  EXPECT_TRUE(llvm::any_of(b->plan->steps, [](const auto &s) {
    const auto *table = llvm::dyn_cast<TableStep>(s.get());
    return table && table->getBroadcast().operand == 1 &&
           table->getBroadcast().inner == 1 && table->getBroadcast().count == 4;
  })) << "no table reading an operand along the channels";
  EXPECT_TRUE(llvm::any_of(b->plan->steps, [](const auto &s) {
    const auto *copy = llvm::dyn_cast<ChannelCopyStep>(s.get());
    return copy && llvm::any_of(copy->getPieces(),
                                [](const auto &p) { return bool(p.grid); });
  })) << "no copy quantizing its pieces";
  EXPECT_TRUE(llvm::any_of(b->plan->steps, [](const auto &s) {
    const auto *reformat = llvm::dyn_cast<ReformatStep>(s.get());
    return reformat && reformat->rowStride == 9;
  })) << "no reformat written into a larger result";

  std::string file = serialized(*b->plan);
  ASSERT_TRUE(isPlanFile(file));
  auto inputs = makeRandomInputs(b->model->getGraph(), 5);
  ASSERT_TRUE(bool(inputs));
  auto want = b->plan->run(*inputs, PlanRunOptions(1));
  ASSERT_TRUE(bool(want)) << llvm::toString(want.takeError());
  for (Isa isa : getSupportedIsas()) {
    auto read = readPlan(file, isa);
    ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
    EXPECT_EQ((*read)->isa, isa);
    EXPECT_EQ((*read)->steps.size(), b->plan->steps.size());
    // Weights come back as they went in, whatever the packing.
    EXPECT_EQ(serialized(**read), file) << getIsaName(isa).str();
    for (unsigned threads : {1u, 2u}) {
      auto got = (*read)->run(*inputs, PlanRunOptions(threads));
      ASSERT_TRUE(bool(got)) << llvm::toString(got.takeError());
      ASSERT_EQ(got->size(), want->size());
      for (size_t i = 0; i < got->size(); ++i)
        EXPECT_TRUE((*got)[i].identicalTo((*want)[i]))
            << "output " << i << ", " << getIsaName(isa).str() << ", "
            << threads << " threads";
    }
  }
}

TEST(PlanFile, DamagedFilesAreOneLineErrors) {
  auto b = build(kEveryStep);
  ASSERT_TRUE(b->plan);
  std::string file = serialized(*b->plan);

  EXPECT_EQ(errorOf("PK\x03\x04 a zip, not a plan"),
            "plan file: not a qopt plan (it does not start with QOPTPLAN)");
  EXPECT_EQ(errorOf("QOPTPLAN"), "plan file: truncated header");

  std::string cut = file.substr(0, file.size() - 1);
  EXPECT_NE(errorOf(cut).find("plan file: truncated: the header says"),
            std::string::npos)
      << errorOf(cut);

  std::string flipped = file;
  flipped[file.size() / 2] ^= 0x10;
  EXPECT_EQ(errorOf(flipped), "plan file: checksum mismatch: the file is "
                              "corrupt");

  std::string newer = file;
  llvm::support::endian::write32le(&newer[8], kPlanFileVersion + 1);
  EXPECT_EQ(errorOf(newer), "plan file: format version " +
                                std::to_string(kPlanFileVersion + 1) +
                                "; this qopt reads versions 1 to " +
                                std::to_string(kPlanFileVersion) +
                                " (rebuild the plan)");

  // A sealed file whose fields lie: an element kind no reader knows.
  std::string lying = file;
  size_t kindAt = 32 + 8 + 8 + 8 + b->plan->tensors[0].name.size();
  lying[kindAt] = 99;
  resealChecksum(lying);
  EXPECT_NE(errorOf(lying).find("element kind 99 is not one this reader "
                                "knows"),
            std::string::npos)
      << errorOf(lying);

  for (const std::string &bad : {cut, flipped, newer, lying})
    EXPECT_EQ(errorOf(bad).find('\n'), std::string::npos);
}

/// `step`, a conv or gemm step (Step), rebuilt on the scalar family with
/// its epilogue changed by `change`.
template <typename Step, typename Change>
void rebuildWithEpilogue(std::unique_ptr<PlanStep> &step, Change change) {
  const auto *old = llvm::cast<Step>(step.get());
  Int8Epilogue epilogue = old->getConv().getEpilogue();
  change(epilogue);
  std::vector<int8_t> weights = old->getConv().getWeights();
  auto changed = std::make_unique<Step>(
      old->getName().str(), Int8Conv(Isa::Scalar, old->getConv().getShape(),
                                     weights.data(), std::move(epilogue)));
  changed->inputs = step->inputs;
  changed->outputs = step->outputs;
  changed->op = step->op;
  step = std::move(changed);
}

TEST(PlanFile, VerifierRefusesStepsThatWouldLeaveTheirTensors) {
  auto b = build(kEveryStep);
  ASSERT_TRUE(b->plan);
  std::string file = serialized(*b->plan);
  ASSERT_FALSE(verifyPlan(*b->plan));

  // What the reader said of the last damaged plan as a file.
  std::string fromFile;
  auto damaged = [&](auto change, bool readerStopsEarlier = false) {
    auto plan = readPlan(file, Isa::Scalar);
    EXPECT_TRUE(bool(plan));
    change(**plan);
    std::string direct = llvm::toString(verifyPlan(**plan));
    // The reader refuses the same plan from a file: with the verifier's
    // words, or, for a conv's own parameters, as it reads them.
    fromFile = errorOf(serialized(**plan));
    if (!readerStopsEarlier)
      EXPECT_EQ(fromFile, "plan file: " + direct);
    return direct;
  };
  auto firstStep = [](Plan &p, PlanStep::Kind kind) -> PlanStep & {
    for (auto &s : p.steps)
      if (s->getKind() == kind)
        return *s;
    ADD_FAILURE() << "no such step";
    return *p.steps.front();
  };

  // A tensor placed past the arena's end.
  std::string e = damaged([](Plan &p) {
    for (PlanTensor &t : p.tensors)
      if (!t.constant) {
        t.arenaOffset = int64_t(p.arenaBytes);
        return;
      }
  });
  EXPECT_NE(e.find("is not 64-byte aligned inside the arena"),
            std::string::npos)
      << e;

  // A conv reading a smaller tensor than its geometry's input.
  e = damaged([&](Plan &p) {
    PlanStep &conv = firstStep(p, PlanStep::Kind::Conv);
    conv.inputs[0] = conv.outputs[0] == 0 ? 1 : 0;
  });
  EXPECT_NE(e.find("int8 conv"), std::string::npos) << e;
  EXPECT_NE(e.find("the step needs i8 or u8[1,4,6,6] nhwc"), std::string::npos)
      << e;

  // A gemm reading rows of another length than its K.
  e = damaged([&](Plan &p) {
    PlanStep &gemm = firstStep(p, PlanStep::Kind::Gemm);
    gemm.inputs[0] = gemm.outputs[0];
  });
  EXPECT_NE(e.find("int8 gemm"), std::string::npos) << e;
  EXPECT_NE(e.find("the step needs 24 rows of 6 i8 or u8 in ONNX layout"),
            std::string::npos)
      << e;

  // A gemm step with an output table (no table of stored bytes fits the
  // kernel's u8 before an s8 result is flipped).
  e = damaged([&](Plan &p) {
    for (auto &step : p.steps)
      if (llvm::isa<GemmStep>(step.get()))
        return rebuildWithEpilogue<GemmStep>(
            step, [](Int8Epilogue &e) { e.outputTable.assign(256, 7); });
  });
  EXPECT_NE(e.find("a gemm step has no output or pair table"),
            std::string::npos)
      << e;

  // The conv that took the add's table: without the add's other operand,
  // with it of another shape, and with an output table next to its pair
  // table (the builder composes the two into one).
  auto pairedConv = [](Plan &p) -> PlanStep & {
    for (auto &s : p.steps)
      if (s->getKind() == PlanStep::Kind::Conv && s->op == "q.conv+q.add")
        return *s;
    ADD_FAILURE() << "no conv with a pair table";
    return *p.steps.front();
  };
  e = damaged([&](Plan &p) { pairedConv(p).inputs.pop_back(); });
  EXPECT_NE(e.find("int8 conv"), std::string::npos) << e;
  EXPECT_NE(e.find("2 inputs"), std::string::npos) << e;
  e = damaged([&](Plan &p) {
    PlanStep &conv = pairedConv(p);
    conv.inputs.back() = conv.inputs[0];
  });
  EXPECT_NE(e.find("its pair table's operand"), std::string::npos) << e;
  EXPECT_NE(e.find("the step needs i8 or u8[1,4,3,3] nhwc"), std::string::npos)
      << e;
  // The paired conv rebuilt with its epilogue changed by `change`.
  auto changePairedEpilogue = [&](auto change) {
    return [&pairedConv, change](Plan &p) {
      for (auto &step : p.steps)
        if (step.get() == &pairedConv(p))
          return rebuildWithEpilogue<ConvStep>(step, change);
    };
  };
  e = damaged(changePairedEpilogue([](Int8Epilogue &epilogue) {
                epilogue.outputTable.assign(256, 7);
              }),
              /*readerStopsEarlier=*/true);
  for (const std::string &error : {e, fromFile})
    EXPECT_NE(error.find("a pair table of 65536 entries on an int8 result "
                         "with an output table"),
              std::string::npos)
        << error;
  // Its arithmetic off its table by one output step.
  e = damaged(changePairedEpilogue([](Int8Epilogue &epilogue) {
                ASSERT_TRUE(epilogue.pairArithmetic);
                epilogue.pairArithmetic->outputZero += 1;
              }),
              /*readerStopsEarlier=*/true);
  for (const std::string &error : {e, fromFile})
    EXPECT_NE(
        error.find("a pair table's arithmetic that does not give its entries"),
        std::string::npos)
        << error;

  // A constant in NHWC layout (steps read constants without a flip).
  e = damaged([&](Plan &p) {
    for (PlanTensor &t : p.tensors)
      if (t.constant && t.shape.size() == 4) {
        t.layout = PlanLayout::Nhwc;
        return;
      }
    ADD_FAILURE() << "no 4-D constant";
  });
  EXPECT_NE(e.find("a constant not in ONNX layout"), std::string::npos) << e;

  // A broadcast table reading more of its operand than it has.
  e = damaged([&](Plan &p) {
    for (auto &step : p.steps)
      if (auto *table = llvm::dyn_cast<TableStep>(step.get()))
        if (table->getBroadcast().operand >= 0) {
          TableStep::Broadcast broadcast = table->getBroadcast();
          ++broadcast.count;
          auto changed = std::make_unique<TableStep>(
              table->getName().str(), table->getArity(),
              table->getResultBytes(), table->getTable().vec(),
              table->getNumElements(), broadcast);
          changed->inputs = step->inputs;
          changed->outputs = step->outputs;
          changed->op = step->op;
          step = std::move(changed);
          return;
        }
  });
  EXPECT_NE(e.find("is not 5 bytes"), std::string::npos) << e;

  // A table over more elements than its operand has.
  e = damaged([&](Plan &p) {
    PlanStep &table = firstStep(p, PlanStep::Kind::Table);
    int id = table.inputs[0];
    p.tensors[id].shape[3] -= 1;
  });
  EXPECT_FALSE(e.empty());

  // A row copy into a result with fewer elements a row than its pieces.
  e = damaged([&](Plan &p) {
    for (auto &s : p.steps)
      if (s->getKind() == PlanStep::Kind::ChannelCopy &&
          p.tensors[s->outputs[0]].layout == PlanLayout::Onnx)
        p.tensors[s->outputs[0]].shape[2] -= 1;
  });
  EXPECT_NE(e.find("does not fit both tensors' pixels and channels (or rows)"),
            std::string::npos)
      << e;

  // A resize writing a taller result than its maps have rows for.
  e = damaged([&](Plan &p) {
    PlanStep &resize = firstStep(p, PlanStep::Kind::Resize);
    p.tensors[resize.outputs[0]].shape[2] += 1;
  });
  EXPECT_NE(e.find("(resize "), std::string::npos) << e;
  EXPECT_NE(e.find("the step needs i8 or u8[1,4,6,6] nhwc"), std::string::npos)
      << e;

  // The first copy piece (that quantizes, if `quantizing`) through
  // change(plan, piece, the step's outputs), its step rebuilt around it.
  auto changePiece = [&](Plan &p, bool quantizing, auto change) {
    for (auto &step : p.steps)
      if (auto *copy = llvm::dyn_cast<ChannelCopyStep>(step.get())) {
        std::vector<ChannelCopyStep::Piece> pieces = copy->getPieces().vec();
        for (ChannelCopyStep::Piece &piece : pieces)
          if (piece.grid || !quantizing) {
            change(p, piece, step->outputs);
            auto changed = std::make_unique<ChannelCopyStep>(
                copy->getName().str(), std::move(pieces), copy->getNumTiles());
            changed->inputs = step->inputs;
            changed->outputs = step->outputs;
            changed->op = step->op;
            step = std::move(changed);
            return;
          }
      }
    ADD_FAILURE() << "no such piece";
  };

  // A copy piece starting at the most negative channel: refused before
  // any arithmetic on it (which would overflow).
  e = damaged([&](Plan &p) {
    changePiece(
        p, false,
        [](Plan &, ChannelCopyStep::Piece &piece, const std::vector<int> &) {
          piece.fromChannel = std::numeric_limits<int64_t>::min();
        });
  });
  EXPECT_NE(e.find("does not fit both tensors' pixels and channels"),
            std::string::npos)
      << e;

  // A copy piece quantizing onto a zero point past u8's range, and one
  // quantizing into an f32 tensor the step writes.
  e = damaged([&](Plan &p) {
    changePiece(p, true,
                [](Plan &, ChannelCopyStep::Piece &piece,
                   const std::vector<int> &) { piece.grid->zero = 256; });
  });
  EXPECT_NE(e.find("its grid does not fit its result"), std::string::npos) << e;
  e = damaged([&](Plan &p) {
    changePiece(p, true,
                [](Plan &p, ChannelCopyStep::Piece &piece,
                   const std::vector<int> &outputs) {
                  for (int id : outputs)
                    if (p.tensors[id].kind == ElementKind::F32)
                      piece.to = id;
                });
  });
  EXPECT_NE(e.find("which is not f32 into int8 bytes"), std::string::npos) << e;

  // A reformat's rows placed past the end of its result.
  e = damaged([&](Plan &p) {
    for (auto &step : p.steps)
      if (auto *r = llvm::dyn_cast<ReformatStep>(step.get()))
        if (r->rowStride)
          r->columnOffset = 1;
  });
  EXPECT_NE(e.find("apart from 1 on, from row 0 of 4 an image, in 'fr', which"),
            std::string::npos)
      << e;

  // A resize map pointing past the input's rows.
  e = damaged([&](Plan &p) {
    for (auto &step : p.steps)
      if (auto *resize = llvm::dyn_cast<ResizeStep>(step.get())) {
        std::vector<int64_t> rows = resize->getSourceRows();
        rows.back() = resize->getGeometry().inH;
        auto changed = std::make_unique<ResizeStep>(
            resize->getName().str(), resize->getGeometry(), rows,
            resize->getSourceCols().vec());
        changed->inputs = step->inputs;
        changed->outputs = step->outputs;
        changed->op = step->op;
        step = std::move(changed);
        return;
      }
  });
  EXPECT_NE(e.find("the resize maps do not take each output row and column "
                   "to one of the input's"),
            std::string::npos)
      << e;

  // A tensor id the plan does not have.
  e = damaged([&](Plan &p) {
    firstStep(p, PlanStep::Kind::Float).outputs[0] = int(p.tensors.size());
  });
  EXPECT_NE(e.find("which the plan does not have"), std::string::npos) << e;

  // A step writing a constant.
  e = damaged([&](Plan &p) {
    PlanStep &reformat = firstStep(p, PlanStep::Kind::Reformat);
    for (size_t id = 0; id < p.tensors.size(); ++id)
      if (p.tensors[id].constant)
        reformat.outputs[0] = int(id);
  });
  EXPECT_NE(e.find("writes constant tensor"), std::string::npos) << e;
}

// Sealed files with random bytes changed: the reader either refuses them
// with an error or gives a plan that passed the verifier, and such a plan
// runs (the sanitizer build checks that it stays inside its memory).
TEST(PlanFile, RandomlyChangedSealedFilesReadOrFailCleanly) {
  auto b = build(kEveryStep);
  ASSERT_TRUE(b->plan);
  std::string file = serialized(*b->plan);
  auto inputs = makeRandomInputs(b->model->getGraph(), 3);
  ASSERT_TRUE(bool(inputs));
  std::mt19937 rng(42);
  int read = 0, refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string changed = file;
    for (int k = 0, n = 1 + int(rng() % 3); k < n; ++k)
      changed[32 + rng() % (changed.size() - 32)] = char(rng());
    resealChecksum(changed);
    auto plan = readPlan(changed, Isa::Scalar);
    if (!plan) {
      std::string msg = llvm::toString(plan.takeError());
      EXPECT_EQ(msg.rfind("plan file: ", 0), 0u) << msg;
      ++refused;
      continue;
    }
    ++read;
    // Changed pooling windows or conv kernels may ask for a lot of work:
    // safe, but not for a unit test.
    bool cheap = (*plan)->arenaBytes < (size_t(1) << 24);
    for (const auto &s : (*plan)->steps) {
      cheap &= s->getMacs() < 10'000'000;
      if (const auto *pool = llvm::dyn_cast<PoolStep>(s.get()))
        cheap &= pool->getWindow().kernelH * pool->getWindow().kernelW <= 64;
    }
    if (cheap)
      llvm::consumeError((*plan)->run(*inputs, PlanRunOptions(1)).takeError());
  }
  // Most single-byte changes land in data (weights, tables, constants).
  EXPECT_GT(read, 0);
  EXPECT_GT(refused, 0);
}

} // namespace

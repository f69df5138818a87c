//===- FusionRules.cpp - What each backend fuses, as tables ---------------===//
//
// One table per backend, next to the documentation its rules come from.
// The planner (FusionPlan.cpp) reads only these tables and the op table's
// traits: data movement and MaxPool run on int8 between units wherever the
// backend moves Q/DQ through them, and are not listed here.
//
//===----------------------------------------------------------------------===//

#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"

using namespace qopt;

namespace {

constexpr OpRole W = OpRole::Weighted;
constexpr OpRole E = OpRole::Epilogue;
constexpr OpRole I = OpRole::Int8Op;

//===----------------------------------------------------------------------===//
// TensorRT, explicit quantization
//===----------------------------------------------------------------------===//
//
// TensorRT Developer Guide, "Working with Quantized Types" (explicit
// quantization, Q/DQ processing):
// - Q nodes are propagated backward and DQ nodes forward through layers
//   that commute with quantization (data movement, MaxPool), so those run
//   on int8 between units; a DQ -> Q pair left behind with different
//   scales becomes a requantize ("Scale") layer, with equal scales it is
//   removed.
// - Weighted fusion: DQ on the input and on the weights -> Convolution,
//   Deconvolution, GEMM/MatMul (+ bias) (+ BatchNorm) (+ activation)
//   (+ element-wise Add whose other input is INT8) -> Q. Without a Q on
//   the output the layer reads INT8 and writes float.
// - Non-weighted INT8 layers: DQ on every input -> op -> Q (pooling,
//   element-wise, activations, Resize). Concat is a copy: inputs on other
//   scales than the output are requantized first.
// - Zero points must be 0; activations are quantized per tensor, weights
//   per tensor or per channel on the output-channel axis; INT8 storage.
// - Convs with few or unaligned channels and GEMMs with K or N below 16:
//   NVIDIA Model Optimizer's ONNX quantizer leaves them unquantized for
//   TensorRT (modelopt/onnx/quantization/graph_utils.py,
//   find_nodes_from_convs_to_exclude; see smallShapesStayFloat).
//
constexpr OpRule kTrtOps[] = {
    {ops::Conv, W, "conv"},
    {ops::ConvTranspose, W, "conv_transpose"},
    {ops::Gemm, W, "gemm"},
    {ops::MatMul, W, "matmul"},
    {ops::BatchNormalization, E, "", false, true},
    {ops::Gelu, E, "", false, true},
    {ops::Relu, I, "activation", true, true},
    {ops::Clip, I, "activation", true, true},
    {ops::LeakyRelu, I, "activation", true, true},
    {ops::Sigmoid, I, "activation", true, true},
    {ops::Tanh, I, "activation", true, true},
    {ops::HardSigmoid, I, "activation", true, true},
    {ops::HardSwish, I, "activation", true, true},
    {ops::Elu, I, "activation", true, true},
    {ops::Selu, I, "activation", true, true},
    {ops::Softplus, I, "activation", true, true},
    {ops::Add, I, "add", true},
    {ops::Sub, I, "sub", true},
    {ops::Mul, I, "mul", true},
    {ops::AveragePool, I, "pool", true},
    {ops::GlobalAveragePool, I, "pool", true},
    {ops::GlobalMaxPool, I, "pool", true},
    {ops::Resize, I, "resize", true},
    {ops::ReduceMean, I, "reduce", true},
};

// Versions. The rules above hold for TensorRT 8.5 to 10 (TensorRT issue
// #3861: the same fusions of Conv+BN+SiLU+Add on 8.5 and 10.6); what the
// versions' ONNX parsers import differs (onnx-tensorrt docs/operators.md
// on the release/8.5-GA, 8.6-GA and 10.x branches):
// - opsets: up to 17 on 8.5 and 8.6; 9 to 20 on 10.0, to 24 on 10.15;
// - LayerNormalization: not imported by 8.5 (8.6 maps it to
//   INormalizationLayer, which computes in FP32/FP16);
// - Q/DQ: INT8 only on 8.x; FP8 and INT4 (block-quantized weights) from
//   10.0: a MatMul by a 4-bit weight with float activations is one
//   weight-only GEMM there (FusionWeightOnly.cpp);
// - FP4 (E2M1, NVFP4's two-level block scales) from 10.8 (release notes:
//   "E2M1 FP4 data type on NVIDIA Blackwell GPUs using explicit
//   quantization"): FP4 weight constants with a DQ prologue into a GEMM
//   whose activations stay high precision (Torch-TensorRT's NVFP4
//   weight-only example); `trt:10` is the newest 10.x, `trt:10.0` the
//   first.
constexpr int64_t kTrtAttentionHeadSizes[] = {16, 32, 64};
constexpr llvm::StringLiteral kTrt85Unparsed[] = {ops::LayerNormalization};
constexpr llvm::StringLiteral kTrtVersionSource =
    "onnx-tensorrt docs/operators.md (release/8.5-GA, release/8.6-GA, "
    "release/10.x); TensorRT issue #3861";

constexpr BackendRules trtRules(llvm::StringLiteral version, int64_t maxOpset,
                                llvm::ArrayRef<llvm::StringLiteral> unparsed,
                                bool fp8AndInt4, bool fp4 = false) {
  BackendRules r{"trt", "TensorRT", kTrtOps};
  r.version = version;
  r.maxOpset = maxOpset;
  r.unparsedOps = unparsed;
  r.versionSource = kTrtVersionSource;
  r.activationZeroPointZero = true;
  r.activationStorage = TS_I8;
  r.weightStorage = TS_I8;
  r.weightZeroPointZero = true;
  // INT4 weight-only GEMMs from 10.0 (release notes: weight-only
  // quantization, block-quantized INT4 weights).
  r.int4WeightOnlyGemm = fp8AndInt4;
  r.fp8Gemm = fp8AndInt4;
  r.fp4WeightOnlyGemm = fp4;
  r.weightOnlyGemmEpilogue = true;
  r.propagatesThroughDataMovement = true;
  r.concatRequantizes = false;
  r.residualAddEpilogue = true;
  r.siluEpilogue = true;
  r.smallShapesStayFloat = true;
  // Q/DQ propagation moves a DQ forward through data movement, a weight's
  // too: torch.onnx writes a Linear on 3-D input as MatMul(x,
  // Transpose(DQ(W))), pytorch-quantization's BERT/ViT exports among them.
  r.weightDequantizeCrossesDataMovement = true;
  // Fused multi-head attention in INT8 (FusionAttention.cpp): Developer
  // Guide, MHA fusion (quoted in TensorRT issues #2981, #4167): Q/DQ before
  // BMM1, after the Softmax and after BMM2; head size 16, 32 or 64;
  // sequence lengths up to 512.
  r.int8AttentionHeadSizes = kTrtAttentionHeadSizes;
  r.int8AttentionMaxSequence = 512;
  // GELU after a GEMM runs in its epilogue: TensorRT's BERT demo builds
  // GELU from element-wise ops because that "will trigger FC+GELU fusion"
  // (demo/BERT/builder_varseqlen.py), and Model Optimizer leaves the
  // Div-Erf-Add-Mul-Mul chain unquantized for TensorRT
  // (modelopt/onnx/quantization/partitioning.py).
  r.geluEpilogue = true;
  // TensorRT's own engines for pytorch-quantization ResNet-18s
  // (trt-engine-explorer's published engine graphs, ../shared/trt-truth;
  // test/trt-truth/compare_engines.py checks these against them):
  // - `Conv_34 + Add_36 + Relu_37` with an Int8 input and an FP16 skip:
  //   the Add fuses with a float other input; in a downsample block it goes
  //   to the downsample conv (`Conv_95 + Add_97`), the later of the two;
  // - `Conv_284 + Add_292 + Relu_293` with Int8 and FP32 inputs and an FP32
  //   output, `DequantizeLinear_291` a Reformat of its own: a conv that
  //   writes float reads its residual in float;
  // - `Conv_9 + MaxPool_12` (ConvActPool), Int8 in and out: the Q after the
  //   MaxPool moves backward and the pool joins the conv;
  // - one `QuantizeLinear_65` Reformat where the ONNX has two Qs of the
  //   tensor on one scale (QuantizeLinear_65 and _88).
  r.floatResidualAddEpilogue = true;
  r.maxPoolJoinsWeightedUnit = true;
  r.mergesEqualQuantizes = true;
  r.documentation =
      "TensorRT Developer Guide, Working with Quantized Types: Q/DQ "
      "propagation, Q/DQ layer fusion, layer-placement recommendations; "
      "NVIDIA Model Optimizer (ONNX PTQ) small conv/GEMM exclusion; "
      "TensorRT's engine graphs of QAT ResNet-18s (trt-engine-explorer)";
  return r;
}

constexpr BackendRules kTrtRules = trtRules("10", 24, {}, true, true);
constexpr BackendRules kTrt100Rules = trtRules("10.0", 20, {}, true);
constexpr BackendRules kTrt86Rules = trtRules("8.6", 17, {}, false);
constexpr BackendRules kTrt85Rules = trtRules("8.5", 17, kTrt85Unparsed, false);

//===----------------------------------------------------------------------===//
// ONNX Runtime, CPU execution provider, QDQ node units
//===----------------------------------------------------------------------===//
//
// onnxruntime/core/optimizer/qdq_transformer/selectors_actions/
// qdq_selector_action_transformer.cc registers the selectors:
// - Conv: DQ x, DQ w (constant), optional DQ bias (int32) -> Conv -> Q
//   becomes QLinearConv; without the Q nothing fuses.
// - MatMul -> QLinearMatMul with a Q on the output, MatMulIntegerToFloat
//   without; Gemm -> QGemm (either way).
// - Binary: Add, Mul -> QLinearAdd/QLinearMul (com.microsoft).
// - Unary: AveragePool, GlobalAveragePool, LeakyRelu, Sigmoid, Softmax ->
//   QLinear* (com.microsoft).
// - Variadic: Concat -> QLinearConcat, which requantizes every input.
// - Drop Q/DQ: data movement and MaxPool between a DQ and a Q with equal
//   parameters run on the integers (QDQ propagation moves Q/DQ through
//   them where one side is missing).
// - ReluQuantFusion removes a Relu before a Q whose zero point is the
//   storage minimum.
// - Activations uint8 or int8, any zero point; weights int8 or uint8. On
//   x86 the kernels take uint8 activations: QDQS8ToU8Transformer rewrites
//   an int8 Q -> DQ pair to uint8 (zero point + 128) only when the DQ is
//   the Q's one consumer and has one consumer itself, so int8 activations
//   elsewhere keep their unit from forming.
//
constexpr OpRule kOrtOps[] = {
    {ops::Conv, W, "conv", true},
    {ops::MatMul, W, "matmul"},
    {ops::Gemm, W, "gemm"},
    {ops::Add, I, "add", true},
    {ops::Mul, I, "mul", true},
    {ops::AveragePool, I, "pool", true},
    {ops::GlobalAveragePool, I, "pool", true},
    {ops::LeakyRelu, I, "activation", true},
    {ops::Sigmoid, I, "activation", true},
    {ops::Softmax, I, "softmax", true},
    {ops::Concat, I, "concat", true},
};

constexpr BackendRules kOrtRules = [] {
  BackendRules r{"ort", "ONNX Runtime (CPU)", kOrtOps};
  r.activationZeroPointZero = false;
  r.activationStorage = TS_I8 | TS_U8;
  r.weightStorage = TS_I8 | TS_U8;
  r.propagatesThroughDataMovement = true;
  r.concatRequantizes = true;
  r.reluFoldsIntoQ = true;
  r.int8ActivationsOnlyAsU8 = true;
  // quantize_dynamic's MatMulInteger chain becomes MatMulIntegerToFloat
  // (matmul_integer_to_float fusion, MLAS's u8 x s8 GEMM); ConvInteger and
  // DynamicQuantizeLinear have kernels of their own.
  r.dynamicQuantization = true;
  r.documentation =
      "onnxruntime/core/optimizer/qdq_transformer/selectors_actions "
      "(qdq_selector_action_transformer.cc, qdq_selectors.cc)";
  return r;
}();

//===----------------------------------------------------------------------===//
// qopt's own INT8 CPU plan
//===----------------------------------------------------------------------===//
//
// What the plan builder lowers to int8 kernels: conv/gemm/matmul with bias,
// Relu/Clip/LeakyRelu/SiLU, a residual Add with its own grid and the output
// Q in the kernel's epilogue; int8 Add/Mul, pools and Concat (requantizing
// its inputs while copying); an activation between a DQ and a Q on its own
// (a SiLU too) as a 256-entry table; data movement as copies. Everything
// else runs
// as a float step with Q/DQ at its borders.
//
constexpr OpRule kCpuOps[] = {
    {ops::Conv, W, "conv"},
    {ops::ConvTranspose, W, "conv_transpose"},
    {ops::Gemm, W, "gemm"},
    {ops::MatMul, W, "matmul"},
    {ops::Relu, I, "activation", true, true},
    {ops::Clip, I, "activation", true, true},
    {ops::LeakyRelu, I, "activation", true, true},
    {ops::Sigmoid, I, "activation", true},
    {ops::Tanh, I, "activation", true},
    {ops::HardSwish, I, "activation", true},
    {ops::Add, I, "add", true},
    {ops::Mul, I, "mul", true},
    {ops::AveragePool, I, "pool", true},
    {ops::GlobalAveragePool, I, "pool", true},
    {ops::Concat, I, "concat", true},
};

constexpr BackendRules kCpuRules = [] {
  BackendRules r{"cpu", "qopt's INT8 CPU plan", kCpuOps};
  r.activationStorage = TS_I8 | TS_U8;
  r.weightStorage = TS_I8 | TS_U8;
  r.propagatesThroughDataMovement = true;
  r.concatRequantizes = true;
  r.residualAddEpilogue = true;
  r.siluEpilogue = true;
  // The plan runs a requantize as a table step (LowerDataSteps), composed
  // into a conv's output or a neighbouring table where it can (FuseTables).
  r.requantizeIsInt8Step = true;
  // Its int4 weight-only gemm step (LowerInt4Gemm.cpp).
  r.int4WeightOnlyGemm = true;
  // Dynamic matmuls with constant weights: a dynamic quantize step and a
  // dynamic int8 gemm step (lib/CodeGen/LowerDynamic.cpp).
  r.dynamicQuantization = true;
  r.dynamicMatMulToFloatOnly = true;
  r.documentation = "qopt's plan builder (lib/CodeGen)";
  return r;
}();

const BackendRules *const kAllRules[] = {&kTrtRules, &kOrtRules, &kCpuRules};
/// Every version, oldest first per backend; the defaults are the newest.
const BackendRules *const kVersionedRules[] = {&kTrt85Rules, &kTrt86Rules,
                                               &kTrt100Rules, &kTrtRules};

} // namespace

const BackendRules *qopt::lookupBackendRules(llvm::StringRef name) {
  auto [backend, version] = name.split(':');
  if (version.empty()) {
    if (name.endswith(":"))
      return nullptr;
    for (const BackendRules *r : kAllRules)
      if (r->name == backend)
        return r;
    return nullptr;
  }
  for (const BackendRules *r : kVersionedRules)
    if (r->name == backend && r->version == version)
      return r;
  return nullptr;
}

std::vector<std::string> qopt::getBackendVersions(llvm::StringRef backend) {
  std::vector<std::string> versions;
  for (const BackendRules *r : kVersionedRules)
    if (r->name == backend)
      versions.push_back(r->version.str());
  return versions;
}

std::string BackendRules::titleWithVersion() const {
  return version.empty() ? title.str() : (title + " " + version).str();
}

std::vector<std::string> qopt::versionProblems(const Graph &graph,
                                               int64_t opset,
                                               const BackendRules &rules) {
  std::vector<std::string> problems;
  std::string who = rules.titleWithVersion();
  if (rules.maxOpset && opset > rules.maxOpset)
    problems.push_back("the model imports ONNX opset " + std::to_string(opset) +
                       "; " + who + "'s ONNX parser documents opsets up to " +
                       std::to_string(rules.maxOpset) +
                       " (ops newer than that may fail to import; export "
                       "with opset " +
                       std::to_string(rules.maxOpset) + ")");
  for (llvm::StringLiteral op : rules.unparsedOps) {
    unsigned count = 0;
    const Node *first = nullptr;
    for (const Node &n : graph.getNodes())
      if (n.isa(op) && count++ == 0)
        first = &n;
    if (first)
      problems.push_back(
          std::to_string(count) + " " + first->getOpType().str() +
          (count == 1 ? " node" : " nodes") + " ('" + planNodeName(*first) +
          "'" + (count > 1 ? " and more" : "") + "): " + who +
          "'s ONNX parser does not import " + first->getOpType().str() +
          " (export with an older opset, which decomposes it, or use a "
          "plugin)");
  }
  return problems;
}

llvm::ArrayRef<const BackendRules *> qopt::getAllBackendRules() {
  return kAllRules;
}

#define QOPT_FUSION_PLAN_RUN(CLASS, RULES)                                     \
  AnalysisKey CLASS::Key;                                                      \
  FusionPlan CLASS::run(Graph &g, AnalysisManager &) {                         \
    return computeFusionPlan(g, RULES);                                        \
  }
QOPT_FUSION_PLAN_RUN(TrtFusionPlanAnalysis, kTrtRules)
QOPT_FUSION_PLAN_RUN(Trt86FusionPlanAnalysis, kTrt86Rules)
QOPT_FUSION_PLAN_RUN(Trt85FusionPlanAnalysis, kTrt85Rules)
QOPT_FUSION_PLAN_RUN(OrtFusionPlanAnalysis, kOrtRules)
QOPT_FUSION_PLAN_RUN(CpuFusionPlanAnalysis, kCpuRules)
#undef QOPT_FUSION_PLAN_RUN

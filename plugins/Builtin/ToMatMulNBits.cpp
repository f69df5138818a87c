//===- ToMatMulNBits.cpp - 4-bit weight-only MatMuls as MatMulNBits -------===//
//
// ONNX Runtime 1.30's CPU provider runs the QDQ form of an INT4 weight-only
// MatMul as a float DequantizeLinear and a float MatMul (69 ms for a
// 4096-wide two-layer decode MLP); its 4-bit kernels take only its own
// com.microsoft.MatMulNBits (9.7 ms for the same weights at accuracy
// level 0). This pass writes that form:
//
//   %w = onnx.Constant : tensor<KxNx!quant.uniform<i4:f32:{0:B}, ...>>
//   %b = q.dequantize(%w) : tensor<KxNxf32>
//   %y = onnx.MatMul(%x, %b)                             x: f32 [..., K]
//     =>
//   %y = com.microsoft.MatMulNBits(%x, %B, %scales[, %zero_points])
//          {K, N, bits = 4, block_size = B, accuracy_level = L}
//
//   B            u8 [N, blocks, B / 2]: each column's codes along K, two a
//                byte (low nibble first), as unsigned: int4 q + 8, uint4 q;
//                past K the zero point's code (a 0 weight)
//   scales       f32 [N * blocks]
//   zero_points  u8 [N * ceil(blocks / 2)], two a byte along the blocks;
//                left out where every one is 8 (the op's default: int4
//                without zero points)
//
// Blocks along K of a power of two from 16 (the op's constraint); one scale
// per column or one for all becomes one block of the next power of two
// from K (at least 16). Exact at accuracy level 0 (the default): ONNX
// Runtime dequantizes as the DequantizeLinear does and multiplies in float
// (qopt's interpreter runs the op as that chain, bit for bit the model's).
// accuracy-level=4 lets ONNX Runtime round the activation to int8 per
// block: faster, lossy (noted in the cost report).
//
//===----------------------------------------------------------------------===//

#include "BuiltinPasses.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Passes/QdqUtils.h"
#include "qopt/Support/Error.h"

#include <set>

using namespace qopt;

static constexpr llvm::StringLiteral kToMatMulNBitsPass = "to-matmul-nbits";

llvm::Expected<ToMatMulNBitsPass>
ToMatMulNBitsPass::parse(llvm::StringRef params) {
  auto kv = parsePassParams(kToMatMulNBitsPass, params, {"accuracy-level"});
  if (!kv)
    return kv.takeError();
  ToMatMulNBitsPass pass;
  auto it = kv->find("accuracy-level");
  if (it != kv->end() &&
      (llvm::StringRef(it->second).getAsInteger(10, pass.accuracyLevel) ||
       pass.accuracyLevel < 0 || pass.accuracyLevel > 4))
    return makeError("invalid accuracy-level '" + it->second +
                     "' for 'to-matmul-nbits'; expected 0 to 4 (ONNX "
                     "Runtime's MatMulNBits accuracy_level)");
  return pass;
}

void ToMatMulNBitsPass::printPipeline(llvm::raw_ostream &os) const {
  os << kToMatMulNBitsPass;
  if (accuracyLevel)
    os << "<accuracy-level=" << accuracyLevel << ">";
}

namespace {

/// The weight of a MatMul the op can take, in its terms.
struct NBitsWeight {
  Node *dequantize;
  const DenseElements *codes;
  const QuantType *grid;
  int64_t k, n, block;
};

int64_t nextPowerOfTwo(int64_t v) {
  int64_t p = 16;
  while (p < v)
    p *= 2;
  return p;
}

std::optional<NBitsWeight> nbitsWeight(const Node &matmul) {
  if (!matmul.isa(ops::MatMul) || matmul.getNumOperands() != 2)
    return std::nullopt;
  Value *x = matmul.getOperand(0);
  Node *dq = getProducer(matmul.getOperand(1), ops::QDequantize);
  if (!x || !dq || x->getType()->isQuantized() ||
      x->getType()->getStorageKind() != ElementKind::F32 ||
      dq->getResult()->getType()->getStorageKind() != ElementKind::F32 ||
      !x->getType()->hasRank() || x->getType()->getRank() < 1)
    return std::nullopt;
  const DenseElements *codes = getConstantData(dq->getOperand(0));
  const QuantType *q = getStoredQuantType(dq->getOperand(0));
  if (!codes || !q || codes->getDims().size() != 2 ||
      (q->getStorageKind() != ElementKind::I4 &&
       q->getStorageKind() != ElementKind::U4))
    return std::nullopt;
  int64_t k = codes->getDims()[0], n = codes->getDims()[1];
  if (k < 1 || n < 1)
    return std::nullopt;
  int64_t block;
  if (q->isBlocked()) {
    block = q->getBlockSize();
    if (q->getAxis() != 0 || block < 16 || (block & (block - 1)))
      return std::nullopt;
  } else if (!q->isPerAxis() || q->getAxis() == 1) {
    block = nextPowerOfTwo(k); // one block: per column or per tensor
  } else {
    return std::nullopt;
  }
  return NBitsWeight{dq, codes, q, k, n, block};
}

/// The (scale, unsigned zero point) of column j's block b.
std::pair<float, int64_t> paramsAt(const NBitsWeight &w, int64_t b, int64_t j) {
  const QuantType *q = w.grid;
  size_t at = q->isBlocked()   ? size_t(b * w.n + j)
              : q->isPerAxis() ? size_t(j)
                               : 0;
  int64_t offset = q->getStorageKind() == ElementKind::I4 ? 8 : 0;
  return {q->getScales()[at], q->getZeroPoints()[at] + offset};
}

bool rewrite(Node &matmul, const NBitsWeight &w, int64_t accuracyLevel,
             PatternRewriter &rewriter) {
  Context &ctx = rewriter.getGraph().getContext();
  int64_t blocks = (w.k + w.block - 1) / w.block, blob = w.block / 2;
  int64_t offset = w.grid->getStorageKind() == ElementKind::I4 ? 8 : 0;
  std::string packed(size_t(w.n * blocks * blob), '\0');
  std::vector<float> scales(size_t(w.n * blocks));
  std::vector<int64_t> zeros(size_t(w.n * blocks));
  bool allEight = true;
  for (int64_t j = 0; j < w.n; ++j)
    for (int64_t b = 0; b < blocks; ++b) {
      auto [scale, zero] = paramsAt(w, b, j);
      scales[size_t(j * blocks + b)] = scale;
      zeros[size_t(j * blocks + b)] = zero;
      allEight &= zero == 8;
      for (int64_t i = 0; i < w.block; ++i) {
        int64_t p = b * w.block + i;
        int64_t code = p < w.k ? w.codes->getAsInt(p * w.n + j) + offset : zero;
        char &byte = packed[size_t((j * blocks + b) * blob + i / 2)];
        byte = char(uint8_t(byte) | uint8_t((code & 0xF) << (4 * (i % 2))));
      }
    }
  rewriter.setInsertionPoint(&matmul);
  rewriter.setRoot(&matmul);
  std::string base = matmul.getResult()->getName().str();
  Value *bValue = createConstant(
      rewriter,
      DenseElements(ElementKind::U8, {w.n, blocks, blob}, std::move(packed)),
      ctx.getElementType(ElementKind::U8), base + "_B");
  Value *sValue =
      createConstant(rewriter, *quant::makeDenseF32({w.n * blocks}, scales),
                     ctx.getElementType(ElementKind::F32), base + "_scales");
  std::vector<Value *> operands{matmul.getOperand(0), bValue, sValue};
  if (!allEight) {
    int64_t perColumn = (blocks + 1) / 2;
    std::string zp(size_t(w.n * perColumn), '\0');
    for (int64_t j = 0; j < w.n; ++j)
      for (int64_t b = 0; b < blocks; ++b) {
        char &byte = zp[size_t(j * perColumn + b / 2)];
        byte =
            char(uint8_t(byte) | uint8_t((zeros[size_t(j * blocks + b)] & 0xF)
                                         << (4 * (b % 2))));
      }
    operands.push_back(createConstant(
        rewriter,
        DenseElements(ElementKind::U8, {w.n * perColumn}, std::move(zp)),
        ctx.getElementType(ElementKind::U8), base + "_zero_points"));
  }
  std::vector<NamedAttribute> attrs = {
      {"K", Attribute(w.k)},
      {"N", Attribute(w.n)},
      {"bits", Attribute(int64_t(4))},
      {"block_size", Attribute(w.block)},
      {"accuracy_level", Attribute(accuracyLevel)}};
  Node *nbits = rewriter.create(ops::MsMatMulNBits, operands,
                                {{matmul.getResult()->getType(), ""}},
                                std::move(attrs), matmul.getName().str());
  bool output = matmul.getResult()->isGraphOutput();
  rewriter.replaceNode(matmul, {nbits->getResult()});
  // The result keeps the MatMul's name (a graph output kept it already).
  if (!output && !rewriter.getGraph().lookupValue(base))
    nbits->getResult()->setName(base);
  return true;
}

} // namespace

PreservedAnalyses ToMatMulNBitsPass::run(Graph &g, AnalysisManager &am) {
  PatternRewriter rewriter(g);
  std::vector<std::pair<Node *, NBitsWeight>> sites;
  for (Node &n : g.getNodes())
    if (auto w = nbitsWeight(n))
      sites.push_back({&n, *w});
  for (auto &[n, w] : sites)
    rewrite(*n, w, accuracyLevel, rewriter);
  // The weights' q.dequantize and codes now read by nothing go (their
  // quantized type would have nothing left to record it in ONNX).
  std::set<Value *> weights;
  for (auto &[n, w] : sites)
    weights.insert(w.dequantize->getResult());
  for (Value *v : weights)
    eraseIfDead(rewriter, v);
  if (sites.empty())
    return PreservedAnalyses::all();
  if (accuracyLevel == 4)
    am.getCostReport().recordNote(
        kToMatMulNBitsPass,
        std::to_string(sites.size()) +
            " MatMulNBits at accuracy level 4: ONNX Runtime rounds their "
            "activations to int8 per block (a different function; qopt-run "
            "computes level 0)");
  return PreservedAnalyses::none();
}

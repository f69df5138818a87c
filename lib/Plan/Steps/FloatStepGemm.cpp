//===- FloatStepGemm.cpp - Float Gemm and MatMul steps --------------------===//
//
// A float step of a Gemm of f32 A (not transposed) by a constant f32 B, C
// none or constant along the rows, runs gemmColumns (FloatMath.h): the
// reference kernel's sums in double, in its order, vectorized over panels
// of B's columns made once; a B that is exactly int8 values times a scale
// per column (a weight-only fake-quantized layer) is kept as those values
// and rebuilt bit for bit as it is read (gemmScaledColumns).
//
// A MatMul of two f32 tensors (attention's Q K^T and its weights times V)
// runs matmulRows on each batch (its batch dims broadcast as ONNX does),
// tiles of 16 rows: each output a double sum over k in order, as the
// reference's; Eigen orders the reference's sums its own way, so the two
// may differ by one f32 ulp where a sum rounds near a midpoint.
//
//===----------------------------------------------------------------------===//

#include "qopt/Kernels/FloatMath.h"
#include "qopt/Plan/Steps/FloatStep.h"

#include <algorithm>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;

/// Output columns of a Gemm a tile computes (all rows).
static constexpr int64_t kGemmTileColumns = 128;
static_assert(kGemmTileColumns % kGemmPanelColumns == 0,
              "a tile starts a panel");

/// A Gemm's constant operands as gemmColumns reads them, made once.
struct FloatStep::GemmWeights {
  int64_t m = 0, k = 0, n = 0;
  /// B in gemmColumns' panels of columns (transposed when transB), or
  /// empty where it is int8 values times a scale per column: then those
  /// values in the same panels, and the scales (gemmScaledColumns).
  std::vector<float> b;
  std::vector<int8_t> q;
  std::vector<float> scales;
  /// beta * C[j] in double (exact), or empty without C.
  std::vector<double> betaC;
};

const FloatStep::GemmWeights *FloatStep::gemmWeights(const PlanRun &run) const {
  if (arithmetic != Arithmetic::Gemm || inputs.size() < 2 || inputs[0] < 0 ||
      inputs[1] < 0 || outputs.size() != 1 || outputs[0] < 0)
    return nullptr;
  const PlanTensor &a = run.tensor(inputs[0]), &b = run.tensor(inputs[1]);
  const PlanTensor &y = run.tensor(outputs[0]);
  const PlanTensor *c =
      inputs.size() > 2 && inputs[2] >= 0 ? &run.tensor(inputs[2]) : nullptr;
  auto isF32 = [](const PlanTensor &t) {
    return t.kind == ElementKind::F32 && t.layout == PlanLayout::Onnx;
  };
  if (!isF32(a) || !isF32(b) || !isF32(y) || !b.constant ||
      a.shape.size() != 2 || b.shape.size() != 2 || y.shape.size() != 2)
    return nullptr;
  int64_t m = a.shape[0], k = a.shape[1];
  int64_t n = gemmTransB ? b.shape[0] : b.shape[1];
  if ((gemmTransB ? b.shape[1] : b.shape[0]) != k || y.shape != Shape{m, n})
    return nullptr;
  // C: none, or constant values broadcast along the rows ([N], [1, N], one).
  if (c && (!isF32(*c) || !c->constant ||
            (c->numElements() != 1 &&
             !(c->numElements() == n && c->shape.back() == n &&
               (c->shape.size() == 1 ||
                (c->shape.size() == 2 && c->shape[0] == 1))))))
    return nullptr;
  std::call_once(gemmOnce, [&] {
    auto g = std::make_shared<GemmWeights>();
    g->m = m;
    g->k = k;
    g->n = n;
    const float *bv = b.constant->data<float>();
    auto at = [&](int64_t p, int64_t j) {
      return gemmTransB ? bv[j * k + p] : bv[p * n + j];
    };
    // A weight-only fake-quantized layer's B (int8 values dequantized and
    // folded): kept as those values and a scale per column, a quarter of
    // the bytes to read and to keep, rebuilt bit for bit as they are read.
    // ResNet-18 QAT's f32 FC (512 x 1000): 0.051 -> 0.042 ms, 2 MB of
    // weights -> 0.5 MB (the rebuild's conversions bound it now).
    g->scales.resize(n);
    for (int64_t j = 0; j < n && !g->scales.empty(); ++j)
      if (!(g->scales[j] = int8ScaleOf(k, [&](int64_t p) { return at(p, j); })))
        g->scales.clear();
    if (!g->scales.empty())
      g->q.resize(size_t(k) * n);
    else
      g->b.resize(size_t(k) * n);
    for (int64_t j0 = 0; j0 < n; j0 += kGemmPanelColumns) {
      int64_t width = std::min(kGemmPanelColumns, n - j0);
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = j0; j < j0 + width; ++j) {
          size_t slot = j0 * k + p * width + j - j0;
          if (g->q.empty())
            g->b[slot] = at(p, j);
          else
            g->q[slot] = int8ValueOf(at(p, j), g->scales[j]);
        }
    }
    if (c) {
      const float *cv = c->constant->data<float>();
      g->betaC.resize(n);
      for (int64_t j = 0; j < n; ++j)
        g->betaC[j] = beta * double(cv[c->numElements() == 1 ? 0 : j]);
    }
    gemm = std::move(g);
  });
  return gemm.get();
}

int64_t FloatStep::gemmTiles(const PlanRun &run) const {
  const GemmWeights *g = gemmWeights(run);
  return g ? (g->n + kGemmTileColumns - 1) / kGemmTileColumns : 0;
}

void FloatStep::runGemm(PlanRun &run, int64_t tileBegin,
                        int64_t tileEnd) const {
  const GemmWeights *g = gemmWeights(run);
  // The reference's sums, in its order: its bits (FloatMath.h).
  const auto *a = reinterpret_cast<const float *>(run.read(inputs[0]));
  auto *y = reinterpret_cast<float *>(run.write(outputs[0]));
  int64_t begin = std::min(g->n, tileBegin * kGemmTileColumns);
  int64_t end = std::min(g->n, tileEnd * kGemmTileColumns);
  const double *betaC = g->betaC.empty() ? nullptr : g->betaC.data();
  if (!g->q.empty())
    gemmScaledColumns(run.getPlan().isa, a, g->m, g->k, g->q.data(),
                      g->scales.data(), g->n, begin, end, alpha, betaC, y);
  else
    gemmColumns(run.getPlan().isa, a, g->m, g->k, g->b.data(), g->n, begin, end,
                alpha, betaC, y);
}

//===----------------------------------------------------------------------===//
// MatMul of two f32 tensors
//===----------------------------------------------------------------------===//

/// Rows of one batch of a MatMul a tile computes (all columns).
static constexpr int64_t kMatMulTileRows = 16;

FloatStep::MatMulShape FloatStep::matmulShape(const PlanRun &run) const {
  if (arithmetic != Arithmetic::MatMul || inputs.size() != 2 || inputs[0] < 0 ||
      inputs[1] < 0 || outputs.size() != 1 || outputs[0] < 0)
    return {};
  const PlanTensor &a = run.tensor(inputs[0]), &b = run.tensor(inputs[1]);
  const PlanTensor &y = run.tensor(outputs[0]);
  for (const PlanTensor *t : {&a, &b, &y})
    if (t->kind != ElementKind::F32 || t->layout != PlanLayout::Onnx ||
        t->shape.size() < 2)
      return {};
  size_t rank = y.shape.size();
  if (a.shape.size() > rank || b.shape.size() > rank)
    return {};
  MatMulShape s;
  s.m = a.shape[a.shape.size() - 2];
  s.k = a.shape.back();
  s.n = b.shape.back();
  if (b.shape[b.shape.size() - 2] != s.k || y.shape[rank - 2] != s.m ||
      y.shape[rank - 1] != s.n)
    return {};
  // Each batch dim of the result is the operands' (right-aligned; a
  // missing dim is a 1), equal or broadcast from a 1.
  s.batches = 1;
  for (size_t d = 0; d + 2 < rank; ++d) {
    auto dimOf = [&](const PlanTensor &t) {
      size_t missing = rank - t.shape.size();
      return d < missing ? int64_t(1) : t.shape[d - missing];
    };
    int64_t da = dimOf(a), db = dimOf(b), dy = y.shape[d];
    if ((da != dy && da != 1) || (db != dy && db != 1))
      return {};
    s.batches *= dy;
  }
  if (s.batches == 0 || s.m == 0 || s.n == 0)
    return {};
  return s;
}

int64_t FloatStep::matmulTiles(const PlanRun &run) const {
  MatMulShape s = matmulShape(run);
  return s.batches * ((s.m + kMatMulTileRows - 1) / kMatMulTileRows);
}

void FloatStep::runMatMul(PlanRun &run, const MatMulShape &s, int64_t tileBegin,
                          int64_t tileEnd) const {
  const PlanTensor &at = run.tensor(inputs[0]), &bt = run.tensor(inputs[1]);
  const Shape &yShape = run.tensor(outputs[0]).shape;
  const auto *a = reinterpret_cast<const float *>(run.read(inputs[0]));
  const auto *b = reinterpret_cast<const float *>(run.read(inputs[1]));
  auto *y = reinterpret_cast<float *>(run.write(outputs[0]));
  size_t rank = yShape.size();
  // The element offset of result batch `batch` in an operand: its batch
  // dims' coordinates, a broadcast dim's at 0.
  auto offsetIn = [&](const PlanTensor &t, int64_t batch) {
    size_t missing = rank - t.shape.size();
    int64_t offset = 0, stride = t.shape[t.shape.size() - 2] * t.shape.back();
    for (size_t d = rank - 2; d-- > 0;) {
      int64_t coordinate = batch % yShape[d];
      batch /= yShape[d];
      if (d < missing)
        break;
      int64_t dim = t.shape[d - missing];
      if (dim != 1)
        offset += coordinate * stride;
      stride *= dim;
    }
    return offset;
  };
  int64_t blocks = (s.m + kMatMulTileRows - 1) / kMatMulTileRows;
  for (int64_t tile = tileBegin; tile < tileEnd; ++tile) {
    int64_t batch = tile / blocks, block = tile % blocks;
    if (batch >= s.batches)
      break;
    int64_t first = block * kMatMulTileRows;
    int64_t last = std::min(s.m, first + kMatMulTileRows);
    matmulRows(run.getPlan().isa, a + offsetIn(at, batch),
               b + offsetIn(bt, batch), s.k, s.n, first, last,
               y + batch * s.m * s.n);
  }
}

//===- Compare.cpp - Numeric comparison of outputs and models -------------===//

#include "qopt/ToolSupport/Compare.h"
#include "qopt/IR/Graph.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/FloatFormat.h"

#include "llvm/Support/Format.h"

#include <cmath>

using namespace qopt;
using namespace qopt::interp;

OutputComparison qopt::compareTensors(llvm::StringRef name, const Tensor &a,
                                      const Tensor &b) {
  OutputComparison c;
  c.name = name.str();
  c.elements = a.numElements();
  if (a.kind() != b.kind() || a.shape() != b.shape()) {
    c.shapeOrTypeDiffers = true;
    return c;
  }
  c.identical = a.identicalTo(b);
  c.integer = isIntegerKind(a.kind()) || a.kind() == ElementKind::Bool;
  if (a.kind() == ElementKind::String)
    return c;
  double sumAbs = 0, dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < c.elements; ++i) {
    double x = a.getDouble(i), y = b.getDouble(i);
    double d = std::fabs(x - y);
    if (std::isnan(x) != std::isnan(y))
      d = std::numeric_limits<double>::infinity();
    else if (std::isnan(x))
      d = 0;
    c.maxAbsDiff = std::max(c.maxAbsDiff, d);
    sumAbs += d;
    if (c.integer && a.getInt(i) != b.getInt(i)) {
      ++c.differing;
      c.maxLsbDiff = std::max<int64_t>(c.maxLsbDiff,
                                       std::llabs(a.getInt(i) - b.getInt(i)));
    } else if (!c.integer && d != 0) {
      ++c.differing;
    }
    if (std::isfinite(x) && std::isfinite(y)) {
      dot += x * y;
      na += x * x;
      nb += y * y;
    }
  }
  c.meanAbsDiff = c.elements ? sumAbs / c.elements : 0;
  if (na == 0 && nb == 0)
    c.cosine = 1;
  else if (na == 0 || nb == 0)
    c.cosine = 0;
  else
    c.cosine = dot / std::sqrt(na * nb);
  return c;
}

bool ComparisonReport::allIdentical() const {
  for (const OutputComparison &c : outputs)
    if (!c.identical)
      return false;
  return true;
}

bool ComparisonReport::within(const CompareTolerance &tol) const {
  for (const OutputComparison &c : outputs) {
    if (c.shapeOrTypeDiffers)
      return false;
    if (c.integer ? c.maxLsbDiff > tol.maxLsb : c.maxAbsDiff > tol.atol)
      return false;
    if (c.cosine < tol.minCosine)
      return false;
  }
  return true;
}

void ComparisonReport::print(llvm::raw_ostream &os) const {
  for (const OutputComparison &c : outputs) {
    os << toPrintableLine(c.name) << ": ";
    if (c.shapeOrTypeDiffers) {
      os << "shape or type differs\n";
      continue;
    }
    if (c.identical) {
      os << "identical (" << c.elements << " elements)\n";
      continue;
    }
    os << "max_abs_diff=" << formatDouble(c.maxAbsDiff)
       << " mean_abs_diff=" << formatDouble(c.meanAbsDiff)
       << " cosine=" << llvm::format("%.8f", c.cosine);
    if (c.integer)
      os << " differing=" << c.differing << "/" << c.elements
         << " max_lsb=" << c.maxLsbDiff;
    else
      os << " differing=" << c.differing << "/" << c.elements;
    os << "\n";
  }
}

llvm::Expected<ComparisonReport>
qopt::compareModels(const Model &a, const Model &b,
                    const CompareOptions &opts) {
  auto ia = Interpreter::create(a);
  if (!ia)
    return ia.takeError();
  auto ib = Interpreter::create(b);
  if (!ib)
    return ib.takeError();
  auto inputs =
      makeRandomInputs(a.getGraph(), opts.seed, opts.dims, opts.distribution);
  if (!inputs)
    return inputs.takeError();
  auto oa = (*ia)->run(*inputs);
  if (!oa)
    return oa.takeError();
  auto ob = (*ib)->run(*inputs);
  if (!ob)
    return ob.takeError();
  if (oa->size() != ob->size())
    return makeError("the models have " + llvm::Twine(oa->size()) + " and " +
                     llvm::Twine(ob->size()) + " outputs");
  ComparisonReport report;
  for (size_t i = 0; i < oa->size(); ++i)
    report.outputs.push_back(compareTensors(
        a.getGraph().getOutput(i)->getName(), (*oa)[i], (*ob)[i]));
  return report;
}

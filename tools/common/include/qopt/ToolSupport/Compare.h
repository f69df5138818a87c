//===- Compare.h - Numeric comparison of outputs and models -----*- C++ -*-===//
//
// The one helper lit, gtest, qopt-run and later passes use to say "these
// graphs compute the same thing" (exact passes) or "this is what it costs"
// (lossy passes): run both on the same seeded inputs and compare each output:
// max / mean abs difference, cosine similarity, and for integer (quantized)
// outputs the number of elements that differ and by how many LSB.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_TOOLSUPPORT_COMPARE_H
#define QOPT_TOOLSUPPORT_COMPARE_H

#include "qopt/Interpreter/Interpreter.h"

#include "llvm/Support/raw_ostream.h"

namespace qopt {
class Model;

struct OutputComparison {
  std::string name;
  bool shapeOrTypeDiffers = false;
  bool identical = false; // bit for bit
  int64_t elements = 0;
  double maxAbsDiff = 0, meanAbsDiff = 0, cosine = 1;
  bool integer = false;   // quantized/integer output
  int64_t differing = 0;  // elements that differ
  int64_t maxLsbDiff = 0; // integer outputs: largest |a - b|
};

struct CompareTolerance {
  double atol = 0;    // max abs diff allowed
  int64_t maxLsb = 0; // integer outputs: largest LSB diff allowed
  double minCosine = -2;
};

struct ComparisonReport {
  std::vector<OutputComparison> outputs;
  bool allIdentical() const;
  bool within(const CompareTolerance &tol) const;
  void print(llvm::raw_ostream &os) const;
};

OutputComparison compareTensors(llvm::StringRef name, const interp::Tensor &a,
                                const interp::Tensor &b);

struct CompareOptions {
  uint64_t seed = 1;
  std::map<std::string, int64_t> dims;
  interp::InputDistribution distribution = interp::InputDistribution::Uniform;
};

/// Runs both models on the same seeded inputs (drawn from a's inputs; both
/// must have the same input names) and compares outputs position by position.
llvm::Expected<ComparisonReport>
compareModels(const Model &a, const Model &b,
              const CompareOptions &options = {});

} // namespace qopt

#endif // QOPT_TOOLSUPPORT_COMPARE_H

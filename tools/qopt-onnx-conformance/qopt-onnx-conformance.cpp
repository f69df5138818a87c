//===- qopt-onnx-conformance.cpp - ONNX backend node tests on the interpreter
//-===//
//
//   qopt-onnx-conformance [--dir=/usr/share/libonnx-testdata/data/node]
//                         [--filter=REGEX] [--verbose] [--plan]
//
// Runs every ONNX backend node test whose model imports and whose ops all
// have reference kernels, compares each output with the expected one
// (floats: |a-b| <= atol + rtol*|b| with the ONNX runner's rtol=1e-3,
// atol=1e-7; integers, bools and strings: exact) and prints how many were
// attempted, passed, and skipped (with the reason). Exit 1 if any attempted
// test fails.
//
// --plan runs each test as qopt's CPU plan instead: the graph inputs after
// the first become initializers holding the test's values (weights and
// quantization parameters, which ONNX's tests pass as inputs, so that they
// reach the quantized types), the model goes through default<cpu>, and the
// plan built from it runs on the first input. Tests whose plan cannot be
// built (shapes that depend on data, ops the interpreter lacks) are skipped
// with the reason.
//
//===----------------------------------------------------------------------===//

#include "../common/RunPipeline.h"
#include "qopt/CodeGen/PlanBuilder.h"
#include "qopt/IR/Graph.h"
#include "qopt/Interpreter/Interpreter.h"
#include "qopt/Onnx/ModelIO.h"
#include "qopt/Onnx/OnnxImporter.h"
#include "qopt/ToolSupport/NpyIO.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

#include <cmath>
#include <cstring>
#include <map>

using namespace qopt;
namespace cl = llvm::cl;

static cl::list<std::string>
    testDirs("dir", cl::desc("Directory of test directories (repeatable)"),
             cl::value_desc("dir"));
static cl::list<std::string>
    singleTests("test", cl::desc("One test directory (repeatable)"),
                cl::value_desc("dir"));
static cl::opt<std::string> filter("filter", cl::desc("Only tests matching"),
                                   cl::init(""));
static cl::opt<bool> verbose("verbose", cl::desc("Print every test"));
static cl::opt<bool>
    asPlan("plan",
           cl::desc("Run each test as the CPU plan (inputs after the first "
                    "bound as constants, default<cpu>, the plan)"));
static const char *argv0 = "";
static cl::opt<double> relTol("rtol", cl::desc("Relative tolerance for floats"),
                              cl::init(1e-3));
static cl::opt<double> absTol("atol", cl::desc("Absolute tolerance for floats"),
                              cl::init(1e-7));

namespace {

struct Outcome {
  enum Kind { Pass, Fail, Skip } kind;
  std::string detail;
};

std::string compareOutput(const interp::Tensor &got,
                          const interp::Tensor &want) {
  if (got.kind() != want.kind())
    return "type " + getElementKindName(got.kind()).str() + ", expected " +
           getElementKindName(want.kind()).str();
  if (got.shape() != want.shape())
    return "shape " + interp::shapeToString(got.shape()) + ", expected " +
           interp::shapeToString(want.shape());
  if (got.kind() == ElementKind::String)
    return got.strings() == want.strings() ? "" : "strings differ";
  bool isFloat = isFloatKind(got.kind());
  for (int64_t i = 0; i < got.numElements(); ++i) {
    if (isFloat) {
      double g = got.getDouble(i), w = want.getDouble(i);
      if (std::isnan(g) && std::isnan(w))
        continue;
      if (std::isinf(w) && g == w)
        continue;
      if (!(std::fabs(g - w) <= absTol + relTol * std::fabs(w)))
        return "element " + std::to_string(i) + ": " + std::to_string(g) +
               ", expected " + std::to_string(w);
    } else if (got.getInt(i) != want.getInt(i)) {
      return "element " + std::to_string(i) + ": " +
             std::to_string(got.getInt(i)) + ", expected " +
             std::to_string(want.getInt(i));
    }
  }
  return "";
}

std::vector<std::string> sortedFiles(llvm::StringRef dir,
                                     llvm::StringRef prefix) {
  std::vector<std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (name.startswith(prefix) && name.endswith(".pb"))
      files.push_back(it->path());
  }
  // input_10 after input_9.
  std::sort(files.begin(), files.end(),
            [](const std::string &a, const std::string &b) {
              return a.size() != b.size() ? a.size() < b.size() : a < b;
            });
  return files;
}

/// Tests whose expected data disagrees with the ONNX spec qopt follows.
const std::map<std::string, std::string> kKnownDataDeviations = {
    {"test_cast_FLOAT_to_BFLOAT16",
     "the ONNX 1.12 test data truncates to bfloat16; qopt rounds to nearest "
     "even, as the current spec and ONNX Runtime do"},
    {"qtdnn_10x5_101_i32_biases",
     "tract's io.npz expects 10 frames, but ONNX's VALID padding with a "
     "width-3 kernel over 10 frames gives 8 (tract streams the input)"},
};

/// One data set run as the CPU plan: inputs after the first bound as
/// initializers, default<cpu>, the plan on the first input. Fails or skips
/// as runTest does; fills `got` on success.
Outcome runAsPlan(const std::string &modelPath, const Graph &g,
                  const interp::TensorMap &inputs,
                  std::vector<interp::Tensor> &got) {
  std::map<std::string, DenseElementsRef> bound;
  interp::TensorMap live;
  for (unsigned i = 0; i < g.getNumInputs(); ++i) {
    std::string name = g.getInput(i)->getName().str();
    auto it = inputs.find(name);
    if (it == inputs.end())
      continue;
    const interp::Tensor &t = it->second;
    if (i == 0) {
      live[name] = t;
      continue;
    }
    bound[name] =
        t.kind() == ElementKind::String
            ? std::make_shared<const DenseElements>(t.shape(), t.strings())
            : std::make_shared<const DenseElements>(
                  t.kind(), t.shape(), std::string(t.bytes(), t.byteSize()));
  }
  Context ctx;
  auto model = importOnnxFileWithInputsBound(modelPath, ctx, bound);
  if (!model)
    return {Outcome::Skip, "import: " + llvm::toString(model.takeError())};
  std::map<std::string, interp::Shape> shapes;
  for (auto &[name, t] : live)
    shapes[name] = t.shape();
  if (auto err = bindStaticInputShapes(**model, {}, shapes))
    return {Outcome::Skip, "plan: " + llvm::toString(std::move(err))};
  PluginSetup plugins;
  plugins.argv0 = argv0;
  plugins.anchor = reinterpret_cast<void *>(&runAsPlan);
  if (auto err = runPipelineWithPlugins(**model, "default<cpu>", plugins))
    return {Outcome::Fail, "default<cpu>: " + llvm::toString(std::move(err))};
  auto isa = kernels::selectIsa();
  if (!isa)
    return {Outcome::Fail, llvm::toString(isa.takeError())};
  auto plan = buildPlan(**model, PlanBuildOptions{*isa});
  if (!plan)
    return {Outcome::Skip, "plan: " + llvm::toString(plan.takeError())};
  auto outputs = (*plan)->run(live);
  if (!outputs)
    return {Outcome::Fail, "plan: " + llvm::toString(outputs.takeError())};
  got = std::move(*outputs);
  // What ran, for --verbose: the steps by kind and op.
  std::map<std::string, unsigned> kinds;
  for (const auto &step : (*plan)->steps)
    ++kinds[(step->getKindName() + (step->op.empty() ? "" : " ") + step->op)
                .str()];
  std::string steps;
  for (auto &[kind, count] : kinds)
    steps += (steps.empty() ? "" : ", ") + kind + " x" + std::to_string(count);
  return {Outcome::Pass, steps};
}

Outcome runTest(const std::string &dir) {
  auto known = kKnownDataDeviations.find(llvm::sys::path::filename(dir).str());
  if (known != kKnownDataDeviations.end())
    return {Outcome::Skip, known->second};
  Context ctx;
  std::string modelPath = dir + "/model.onnx";
  auto model = loadModelFile(modelPath, ctx);
  if (!model)
    return {Outcome::Skip, "import: " + llvm::toString(model.takeError())};
  auto reference = interp::Interpreter::create(**model);
  if (!reference)
    return {Outcome::Skip, llvm::toString(reference.takeError())};
  const Graph &g = (*model)->getGraph();
  // Expected data: test_data_set_*/ (ONNX) or io.npz (tract).
  std::vector<std::pair<interp::TensorMap, std::vector<interp::Tensor>>> sets;
  std::error_code ec;
  std::vector<std::string> setDirs;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::path::filename(it->path()).startswith("test_data_set_"))
      setDirs.push_back(it->path());
  std::sort(setDirs.begin(), setDirs.end());
  for (const std::string &sd : setDirs) {
    interp::TensorMap inputs;
    std::vector<interp::Tensor> outputs;
    std::vector<std::string> inFiles = sortedFiles(sd, "input_");
    // Inputs bind to graph inputs in order (by name when the .pb has one).
    for (size_t i = 0; i < inFiles.size(); ++i) {
      auto d = readTensorProtoFile(inFiles[i]);
      if (!d)
        return {Outcome::Skip, llvm::toString(d.takeError())};
      std::string name = (*d)->getName().str();
      if (name.empty() || !g.lookupValue(name)) {
        if (i >= g.getNumInputs())
          return {Outcome::Skip, "more input files than graph inputs"};
        name = g.getInput(i)->getName().str();
      }
      interp::Tensor t = interp::Tensor::fromDense(**d);
      // Older test data stores bfloat16/float16 inputs as uint16 bits.
      ElementKind want = g.lookupValue(name)->getType()->getStorageKind();
      if (t.kind() == ElementKind::U16 &&
          (want == ElementKind::BF16 || want == ElementKind::F16)) {
        interp::Tensor re(want, t.shape());
        if (t.byteSize())
          std::memcpy(re.bytes(), t.bytes(), t.byteSize());
        t = std::move(re);
      }
      inputs[name] = std::move(t);
    }
    for (const std::string &f : sortedFiles(sd, "output_")) {
      auto d = readTensorProtoFile(f);
      if (!d)
        return {Outcome::Skip, llvm::toString(d.takeError())};
      interp::Tensor t = interp::Tensor::fromDense(**d);
      size_t i = outputs.size();
      ElementKind want = i < g.getNumOutputs()
                             ? g.getOutput(i)->getType()->getStorageKind()
                             : ElementKind::Unknown;
      if (t.kind() == ElementKind::U16 &&
          (want == ElementKind::BF16 || want == ElementKind::F16)) {
        interp::Tensor re(want, t.shape());
        if (t.byteSize())
          std::memcpy(re.bytes(), t.bytes(), t.byteSize());
        t = std::move(re);
      }
      outputs.push_back(std::move(t));
    }
    sets.push_back({std::move(inputs), std::move(outputs)});
  }
  if (sets.empty() && llvm::sys::fs::exists(dir + "/io.npz")) {
    auto npz = readNpz(dir + "/io.npz");
    if (!npz)
      return {Outcome::Skip, llvm::toString(npz.takeError())};
    interp::TensorMap inputs;
    std::vector<interp::Tensor> outputs;
    for (auto &[name, t] : *npz) {
      if (g.getNumInputs() == 1 && name == "input")
        inputs[g.getInput(0)->getName().str()] = t;
      else if (name == "output")
        outputs.push_back(t);
    }
    sets.push_back({std::move(inputs), std::move(outputs)});
  }
  if (sets.empty())
    return {Outcome::Skip, "no expected outputs"};
  std::string planSteps;
  for (auto &[inputs, expected] : sets) {
    // Some test data does not have the shape its own model declares.
    for (const Value *in : g.getInputs()) {
      auto it = inputs.find(in->getName().str());
      const TensorType *t = in->getType();
      if (it == inputs.end() || !t->hasRank())
        continue;
      bool same = t->getRank() == it->second.rank();
      for (int64_t d = 0; same && d < t->getRank(); ++d)
        same = !t->getShape()[d].isStatic() ||
               t->getShape()[d].size == it->second.dim(d);
      if (!same)
        return {Outcome::Skip, "test data for input '" + in->getName().str() +
                                   "' has shape " +
                                   interp::shapeToString(it->second.shape()) +
                                   ", the model declares " + typeToString(t)};
    }
    std::vector<interp::Tensor> got;
    if (asPlan) {
      Outcome o = runAsPlan(modelPath, g, inputs, got);
      if (o.kind != Outcome::Pass)
        return o;
      planSteps = o.detail;
    } else {
      auto outputs = (*reference)->run(inputs);
      if (!outputs)
        return {Outcome::Fail, llvm::toString(outputs.takeError())};
      got = std::move(*outputs);
    }
    if (got.size() < expected.size())
      return {Outcome::Fail, "fewer outputs than expected"};
    for (size_t i = 0; i < expected.size(); ++i) {
      std::string why = compareOutput(got[i], expected[i]);
      if (!why.empty())
        return {Outcome::Fail, "output " + std::to_string(i) + " (" +
                                   g.getOutput(i)->getName().str() +
                                   "): " + why};
    }
  }
  return {Outcome::Pass, planSteps};
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv, "ONNX node tests on qopt's reference interpreter\n");
  argv0 = argv[0];
  if (testDirs.empty() && singleTests.empty())
    testDirs.push_back("/usr/share/libonnx-testdata/data/node");
  std::vector<std::string> tests(singleTests.begin(), singleTests.end());
  for (const std::string &root : testDirs) {
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(root, ec), end; it != end && !ec;
         it.increment(ec))
      if (llvm::sys::fs::exists(it->path() + "/model.onnx"))
        tests.push_back(it->path());
  }
  std::sort(tests.begin(), tests.end());
  llvm::Regex re(filter);
  unsigned attempted = 0, passed = 0, skipped = 0;
  std::map<std::string, unsigned> skipReasons;
  std::vector<std::string> failures;
  for (const std::string &t : tests) {
    if (!filter.empty() && !re.match(t))
      continue;
    Outcome o = runTest(t);
    std::string name = llvm::sys::path::filename(t).str();
    if (o.kind == Outcome::Skip) {
      ++skipped;
      // Group reasons by the op the interpreter lacks.
      std::string reason = o.detail;
      size_t pos = reason.find("cannot run op '");
      if (pos != std::string::npos)
        reason =
            "no kernel for " +
            reason.substr(pos + 15, reason.find('\'', pos + 15) - pos - 15);
      else if (reason.size() > 60)
        reason = reason.substr(0, 60) + "...";
      ++skipReasons[reason];
      if (verbose)
        llvm::outs() << "SKIP " << name << ": " << o.detail << "\n";
      continue;
    }
    ++attempted;
    if (o.kind == Outcome::Pass) {
      ++passed;
      if (verbose)
        llvm::outs() << "PASS " << name
                     << (o.detail.empty() ? "" : " (plan: " + o.detail + ")")
                     << "\n";
    } else {
      failures.push_back(name + ": " + o.detail);
      llvm::outs() << "FAIL " << name << ": " << o.detail << "\n";
    }
  }
  if (verbose)
    for (const auto &[reason, count] : skipReasons)
      llvm::outs() << "  skipped " << count << ": " << reason << "\n";
  llvm::outs() << "onnx-conformance: " << tests.size() << " tests, "
               << attempted << " attempted, " << passed << " passed, "
               << failures.size() << " failed, " << skipped << " skipped\n";
  return failures.empty() ? 0 : 1;
}

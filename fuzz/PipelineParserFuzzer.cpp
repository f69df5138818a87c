//===- PipelineParserFuzzer.cpp - libFuzzer target: -passes= text ---------===//
//
// Any text: the pipeline parser fails with an error or builds a pipeline
// whose canonical text parses back to the same canonical text.
//
//===----------------------------------------------------------------------===//

#include "qopt/Passes/PassRegistry.h"
#include "qopt/Support/Error.h"

#include <cstdlib>

using namespace qopt;

namespace {
struct NoOpPass : PassInfoMixin<NoOpPass> {
  PreservedAnalyses run(Graph &, AnalysisManager &) {
    return PreservedAnalyses::all();
  }
};

/// A pass with a parameter, printed canonically.
struct ParamPass : PassInfoMixin<ParamPass> {
  std::string policy = "max";
  PreservedAnalyses run(Graph &, AnalysisManager &) {
    return PreservedAnalyses::all();
  }
  void printPipeline(llvm::raw_ostream &os) const {
    os << "param<policy=" << policy << ">";
  }
};

const PassRegistry &registry() {
  static PassRegistry r = [] {
    PassRegistry reg;
    registerCoreAnalyses(reg);
    reg.registerPass<NoOpPass>("dce", "no-op");
    reg.registerPass<NoOpPass>("cse", "no-op");
    reg.registerPass(
        "param", "parameterised",
        [](llvm::StringRef params)
            -> llvm::Expected<std::unique_ptr<PassConcept>> {
          auto p = parsePassParams("param", params, {"policy"});
          if (!p)
            return p.takeError();
          ParamPass pass;
          if (p->count("policy")) {
            if ((*p)["policy"] != "max" && (*p)["policy"] != "output")
              return qopt::makeError("bad policy");
            pass.policy = (*p)["policy"];
          }
          return std::make_unique<PassModel<ParamPass>>(pass, "param");
        });
    reg.registerPipeline("cleanup", "cleanup", "cse,dce");
    return reg;
  }();
  return r;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto pm = registry().parsePipeline(text);
  if (!pm) {
    llvm::consumeError(pm.takeError());
    return 0;
  }
  std::string canonical;
  llvm::raw_string_ostream os(canonical);
  pm->printPipeline(os);
  os.flush();
  auto again = registry().parsePipeline(canonical);
  if (!again) {
    llvm::errs() << "canonical text does not parse: " << canonical << ": "
                 << llvm::toString(again.takeError()) << "\n";
    std::abort();
  }
  std::string second;
  llvm::raw_string_ostream os2(second);
  again->printPipeline(os2);
  if (os2.str() != canonical) {
    llvm::errs() << "canonical text is not stable: " << canonical << " vs "
                 << second << "\n";
    std::abort();
  }
  return 0;
}

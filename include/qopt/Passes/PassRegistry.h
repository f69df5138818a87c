//===- PassRegistry.h - Named passes, analyses and pipelines ----*- C++ -*-===//
//
// Every pass, analysis and named pipeline that `-passes=` can name is
// registered here, by the core (analyses and pipeline utilities) and by
// plugins (transform passes). The registry also parses pipeline text with
// LLVM's grammar:
//
//   pipeline := element (',' element)*
//   element  := name ['<' params '>'] ['(' pipeline ')']
//
//   sink-qdq,unify-scales<policy=max>     fixpoint(a,b)   repeat<3>(a)
//   require<scale-analysis>   invalidate<all>   print<scale-analysis>
//   verify   print   default<cleanup>
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PASSES_PASSREGISTRY_H
#define QOPT_PASSES_PASSREGISTRY_H

#include "qopt/Passes/PassManager.h"
#include "qopt/Support/Error.h"

#include "llvm/ADT/StringMap.h"

#include <map>

namespace qopt {

/// Creates a pass from its parameter text ("" when none was given).
using PassFactory = std::function<llvm::Expected<std::unique_ptr<PassConcept>>(
    llvm::StringRef)>;

struct PassEntry {
  std::string name;
  std::string description;
  std::string plugin;
  std::string paramsHelp; // e.g. "policy=max|output"
  PassFactory create;
};

struct AnalysisEntry {
  std::string name;
  std::string description;
  std::string plugin;
  AnalysisKey *key;
  /// Computes (or fetches) the result in `am`.
  std::function<void(Graph &, AnalysisManager &)> compute;
};

struct PipelineEntry {
  std::string name;
  std::string description;
  std::string plugin;
  std::string text;
};

class PassRegistry {
public:
  PassRegistry();

  /// The plugin whose callbacks are registering now (for diagnostics).
  void setCurrentPlugin(llvm::StringRef plugin) {
    currentPlugin = plugin.str();
  }

  void registerPass(llvm::StringRef name, llvm::StringRef description,
                    PassFactory create, llvm::StringRef paramsHelp = {});
  /// A pass without parameters, default-constructed.
  template <typename PassT>
  void registerPass(llvm::StringRef name, llvm::StringRef description) {
    std::string n = name.str();
    registerPass(name, description,
                 [n](llvm::StringRef params)
                     -> llvm::Expected<std::unique_ptr<PassConcept>> {
                   if (!params.empty())
                     return makeError("pass '" + n +
                                      "' takes no parameters, got '<" + params +
                                      ">'");
                   return std::make_unique<PassModel<PassT>>(PassT(), n);
                 });
  }

  template <typename AnalysisT>
  void registerAnalysis(llvm::StringRef name, llvm::StringRef description) {
    registerAnalysisEntry(
        {name.str(), description.str(), currentPlugin, &AnalysisT::Key,
         [](Graph &g, AnalysisManager &am) { am.getResult<AnalysisT>(g); }});
  }
  void registerAnalysisEntry(AnalysisEntry entry);

  /// `default<name>` expands to `text`.
  void registerPipeline(llvm::StringRef name, llvm::StringRef description,
                        llvm::StringRef text);

  /// The first name clash or other registration problem, if any.
  llvm::Error takeRegistrationError();

  const PassEntry *lookupPass(llvm::StringRef name) const;
  const AnalysisEntry *lookupAnalysis(llvm::StringRef name) const;
  const PipelineEntry *lookupPipeline(llvm::StringRef name) const;

  /// Parses pipeline text into a pass manager. Errors name the offending
  /// token: "unknown pass 'sink-qqd' in pipeline; did you mean 'sink-qdq'?".
  llvm::Expected<PassManager> parsePipeline(llvm::StringRef text) const;

  /// Lists every registered pass, analysis and pipeline with its description.
  void printRegistry(llvm::raw_ostream &os) const;
  /// Tells the analysis manager the registered names (for log lines).
  void nameAnalyses(AnalysisManager &am) const;

  /// Every name a pipeline may use (passes, analyses' wrappers, builtins).
  std::vector<std::string> allPassNames() const;

private:
  struct Element;
  llvm::Expected<std::vector<Element>>
  parseElements(llvm::StringRef text, size_t &pos, unsigned depth) const;
  llvm::Error buildInto(PassManager &pm, const std::vector<Element> &elems,
                        unsigned depth) const;
  bool checkUnique(llvm::StringRef kind, llvm::StringRef name);
  /// Keeps `err` as the registration error unless one is kept already.
  void keepRegistrationError(llvm::Error err);

  std::string currentPlugin = "qopt";
  std::map<std::string, PassEntry> passes;
  std::map<std::string, AnalysisEntry> analyses;
  std::map<std::string, PipelineEntry> pipelines;
  std::map<std::string, std::string> owners; // name -> "kind 'x' from plugin"
  std::unique_ptr<llvm::ErrorInfoBase> registrationError;
};

/// Parses "key=value;key2=value2" pass parameters, allowing only `keys`. A
/// key without a value is a flag and reads "true".
llvm::Expected<std::map<std::string, std::string>>
parsePassParams(llvm::StringRef passName, llvm::StringRef params,
                llvm::ArrayRef<llvm::StringRef> keys);

/// "true"/"1" or "false"/"0" (a bare flag parses as "true").
llvm::Expected<bool> parseBoolParam(llvm::StringRef passName,
                                    llvm::StringRef key, llvm::StringRef value);

/// Registers the core analyses (see Passes.def).
void registerCoreAnalyses(PassRegistry &registry);

} // namespace qopt

#endif // QOPT_PASSES_PASSREGISTRY_H

//===- PassRegistry.cpp - Named passes, analyses and pipelines ------------===//

#include "qopt/Passes/PassRegistry.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Support/Error.h"

#include "llvm/Support/FormatVariadic.h"

using namespace qopt;

//===----------------------------------------------------------------------===//
// Utility passes named by the pipeline grammar
//===----------------------------------------------------------------------===//

namespace {

/// require<a>: computes an analysis (kept cached).
class RequireAnalysisPass : public PassConcept {
public:
  explicit RequireAnalysisPass(const AnalysisEntry &a) : analysis(a) {}
  PreservedAnalyses run(Graph &g, AnalysisManager &am) override {
    analysis.compute(g, am);
    return PreservedAnalyses::all();
  }
  llvm::StringRef name() const override { return nameText; }
  void printPipeline(llvm::raw_ostream &os) const override { os << nameText; }

private:
  const AnalysisEntry &analysis;
  std::string nameText = "require<" + analysis.name + ">";
};

/// invalidate<a|all>: drops cached results.
class InvalidateAnalysisPass : public PassConcept {
public:
  explicit InvalidateAnalysisPass(const AnalysisEntry *a) : analysis(a) {}
  PreservedAnalyses run(Graph &g, AnalysisManager &am) override {
    am.invalidateOne(g, analysis ? analysis->key : nullptr);
    return PreservedAnalyses::all();
  }
  llvm::StringRef name() const override { return nameText; }
  void printPipeline(llvm::raw_ostream &os) const override { os << nameText; }

private:
  const AnalysisEntry *analysis;
  std::string nameText =
      "invalidate<" + (analysis ? analysis->name : std::string("all")) + ">";
};

/// print<a>: computes an analysis and prints its result to stderr.
class PrintAnalysisPass : public PassConcept {
public:
  explicit PrintAnalysisPass(const AnalysisEntry &a) : analysis(a) {}
  PreservedAnalyses run(Graph &g, AnalysisManager &am) override {
    analysis.compute(g, am);
    llvm::errs() << "Printing analysis '" << analysis.name << "' for graph @"
                 << toPrintableLine(g.getName()) << ":\n";
    if (auto *r = am.getCachedResult(g, analysis.key))
      r->print(llvm::errs());
    return PreservedAnalyses::all();
  }
  llvm::StringRef name() const override { return nameText; }
  void printPipeline(llvm::raw_ostream &os) const override { os << nameText; }

private:
  const AnalysisEntry &analysis;
  std::string nameText = "print<" + analysis.name + ">";
};

/// verify: runs the verifier; a failure stops the pipeline.
class VerifierPass : public PassConcept {
public:
  PreservedAnalyses run(Graph &g, AnalysisManager &am) override {
    if (llvm::Error err = verifyGraph(g)) {
      if (PassInstrumentation *pi = am.getInstrumentation())
        pi->reportError(makeError("verify: " + llvm::toString(std::move(err))));
      else
        llvm::consumeError(std::move(err));
    }
    return PreservedAnalyses::all();
  }
  llvm::StringRef name() const override { return "verify"; }
  void printPipeline(llvm::raw_ostream &os) const override { os << "verify"; }
};

/// print: prints the graph to stderr.
class PrintGraphPass : public PassConcept {
public:
  PreservedAnalyses run(Graph &g, AnalysisManager &) override {
    PrintOptions opts;
    opts.elideResourceData = true;
    printGraph(g, llvm::errs(), opts);
    return PreservedAnalyses::all();
  }
  llvm::StringRef name() const override { return "print"; }
  void printPipeline(llvm::raw_ostream &os) const override { os << "print"; }
};

constexpr const char *kBuiltinNames[] = {"fixpoint",   "repeat", "require",
                                         "invalidate", "print",  "verify",
                                         "default"};

} // namespace

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

PassRegistry::PassRegistry() {
  for (const char *n : kBuiltinNames)
    owners[n] = "pipeline keyword";
}

/// Why `name` cannot be a pass, analysis or pipeline name, or empty: the
/// pipeline text separates, parameterizes and nests with , < > ( ) = ;.
static std::string whyNotAName(llvm::StringRef name) {
  if (name.empty())
    return "an empty name";
  for (char c : name)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f ||
        llvm::StringRef(",<>()=;").contains(c))
      return "a name holding '" + toPrintableLine(llvm::StringRef(&c, 1)) +
             "' (names are the pipeline's words: no spaces, control bytes or "
             ", < > ( ) = ;)";
  return {};
}

bool PassRegistry::checkUnique(llvm::StringRef kind, llvm::StringRef name) {
  // Passes are the pipeline text's words; analyses and pipelines are
  // registered with their parameters (fusion-plan<trt>, default<trt>).
  std::string why = kind == "pass" ? whyNotAName(name) : "";
  if (!why.empty()) {
    keepRegistrationError(
        makeError("plugin '" + toPrintableLine(currentPlugin) + "' registers " +
                  kind + " '" + toPrintableLine(name) + "': " + why));
    return false;
  }
  auto it = owners.find(name.str());
  if (it == owners.end()) {
    owners[name.str()] =
        (kind + " '" + name + "' from plugin '" + currentPlugin + "'").str();
    return true;
  }
  keepRegistrationError(
      makeError("plugin '" + currentPlugin + "' registers " + kind + " '" +
                name + "', but that name is already taken by " + it->second));
  return false;
}

void PassRegistry::keepRegistrationError(llvm::Error err) {
  if (registrationError) {
    llvm::consumeError(std::move(err));
    return;
  }
  llvm::handleAllErrors(std::move(err),
                        [&](std::unique_ptr<llvm::ErrorInfoBase> e) {
                          registrationError = std::move(e);
                        });
}

void PassRegistry::registerPass(llvm::StringRef name,
                                llvm::StringRef description, PassFactory create,
                                llvm::StringRef paramsHelp) {
  if (!checkUnique("pass", name))
    return;
  passes[name.str()] = {name.str(), description.str(), currentPlugin,
                        paramsHelp.str(), std::move(create)};
}

void PassRegistry::registerAnalysisEntry(AnalysisEntry entry) {
  if (!checkUnique("analysis", entry.name))
    return;
  entry.plugin = currentPlugin;
  std::string name = entry.name;
  analyses[name] = std::move(entry);
}

void PassRegistry::registerPipeline(llvm::StringRef name,
                                    llvm::StringRef description,
                                    llvm::StringRef text) {
  std::string key = ("default<" + name + ">").str();
  if (!checkUnique("pipeline", key))
    return;
  pipelines[name.str()] = {name.str(), description.str(), currentPlugin,
                           text.str()};
}

llvm::Error PassRegistry::takeRegistrationError() {
  if (!registrationError)
    return llvm::Error::success();
  return llvm::Error(std::move(registrationError));
}

const PassEntry *PassRegistry::lookupPass(llvm::StringRef name) const {
  auto it = passes.find(name.str());
  return it == passes.end() ? nullptr : &it->second;
}
const AnalysisEntry *PassRegistry::lookupAnalysis(llvm::StringRef name) const {
  auto it = analyses.find(name.str());
  return it == analyses.end() ? nullptr : &it->second;
}
const PipelineEntry *PassRegistry::lookupPipeline(llvm::StringRef name) const {
  auto it = pipelines.find(name.str());
  return it == pipelines.end() ? nullptr : &it->second;
}

std::vector<std::string> PassRegistry::allPassNames() const {
  std::vector<std::string> names;
  for (const auto &[n, _] : passes)
    names.push_back(n);
  for (const char *n : kBuiltinNames)
    names.push_back(n);
  return names;
}

void PassRegistry::nameAnalyses(AnalysisManager &am) const {
  for (const auto &[n, a] : analyses)
    am.setDisplayName(a.key, n);
}

void PassRegistry::printRegistry(llvm::raw_ostream &os) const {
  auto origin = [](const std::string &plugin) {
    return plugin == "qopt" ? std::string() : " [" + plugin + "]";
  };
  os << "Passes:\n";
  for (const auto &[n, p] : passes) {
    os << "  " << n;
    if (!p.paramsHelp.empty())
      os << "<" << p.paramsHelp << ">";
    os << " - " << p.description << origin(p.plugin) << "\n";
  }
  os << "Analyses (use with require<>, invalidate<>, print<>):\n";
  for (const auto &[n, a] : analyses)
    os << "  " << n << " - " << a.description << origin(a.plugin) << "\n";
  os << "Pipelines (use as default<name>):\n";
  for (const auto &[n, p] : pipelines)
    os << "  " << n << " - " << p.description << origin(p.plugin) << " = "
       << p.text << "\n";
  os << "Pipeline keywords:\n"
        "  fixpoint<max-iterations=N>(...) - rerun until nothing changes "
        "(default bound 10)\n"
        "  repeat<N>(...) - run N times\n"
        "  require<analysis>, invalidate<analysis|all>, print<analysis>\n"
        "  verify - run the IR verifier\n"
        "  print - print the graph to stderr\n";
}

//===----------------------------------------------------------------------===//
// Pipeline parsing
//===----------------------------------------------------------------------===//

struct PassRegistry::Element {
  std::string name;
  std::optional<std::string> params;
  std::optional<std::vector<Element>> inner;
  size_t offset;
};

static constexpr unsigned kMaxPipelineDepth = 32;

llvm::Expected<std::vector<PassRegistry::Element>>
PassRegistry::parseElements(llvm::StringRef text, size_t &pos,
                            unsigned depth) const {
  if (depth > kMaxPipelineDepth)
    return makeError("pipeline nests deeper than " +
                     llvm::Twine(kMaxPipelineDepth) + " levels");
  std::vector<Element> out;
  auto isNameChar = [](char c) {
    return isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
           c == '.';
  };
  while (true) {
    Element e;
    e.offset = pos;
    size_t start = pos;
    while (pos < text.size() && isNameChar(text[pos]))
      ++pos;
    e.name = text.slice(start, pos).str();
    if (e.name.empty()) {
      if (pos >= text.size())
        return makeError("pipeline '" + text +
                         "' ends where a pass name "
                         "was expected");
      return makeError("unexpected '" + text.substr(pos, 1) +
                       "' in pipeline at offset " + llvm::Twine(pos) +
                       "; expected a pass name");
    }
    if (pos < text.size() && text[pos] == '<') {
      unsigned level = 1;
      size_t pstart = ++pos;
      while (pos < text.size() && level) {
        if (text[pos] == '<')
          ++level;
        else if (text[pos] == '>')
          --level;
        ++pos;
      }
      if (level)
        return makeError("unbalanced '<' after '" + e.name + "' in pipeline");
      e.params = text.slice(pstart, pos - 1).str();
    }
    if (pos < text.size() && text[pos] == '(') {
      ++pos;
      auto inner = parseElements(text, pos, depth + 1);
      if (!inner)
        return inner.takeError();
      if (pos >= text.size() || text[pos] != ')')
        return makeError("missing ')' for '" + e.name + "(' in pipeline");
      ++pos;
      e.inner = std::move(*inner);
    }
    out.push_back(std::move(e));
    if (pos >= text.size() || text[pos] == ')')
      return out;
    if (text[pos] != ',')
      return makeError("unexpected '" + text.substr(pos, 1) +
                       "' in pipeline at offset " + llvm::Twine(pos) +
                       "; expected ',' or ')'");
    ++pos;
  }
}

static std::string closestName(llvm::StringRef name,
                               const std::vector<std::string> &candidates) {
  // Suggest only close names: at most a third of the name's length, 2 to 4
  // edits (edit_distance stops counting past the bound).
  unsigned bound = std::min<size_t>(4, std::max<size_t>(2, name.size() / 3));
  std::string best;
  unsigned bestDist = bound + 1;
  for (const std::string &c : candidates) {
    unsigned d = name.edit_distance(c, true, bound + 1);
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  return bestDist <= bound ? best : "";
}

llvm::Error PassRegistry::buildInto(PassManager &pm,
                                    const std::vector<Element> &elems,
                                    unsigned depth) const {
  for (const Element &e : elems) {
    auto needParams = [&](const char *what) -> llvm::Error {
      if (!e.params || e.params->empty())
        return makeError("'" + e.name + "' needs <" + what + "> in pipeline");
      return llvm::Error::success();
    };
    auto noInner = [&]() -> llvm::Error {
      if (e.inner)
        return makeError("'" + e.name + "' takes no '(...)' sub-pipeline");
      return llvm::Error::success();
    };
    auto inner = [&]() -> llvm::Expected<PassManager> {
      if (!e.inner)
        return makeError("'" + e.name + "' needs a '(...)' sub-pipeline");
      PassManager sub;
      if (auto err = buildInto(sub, *e.inner, depth + 1))
        return std::move(err);
      return std::move(sub);
    };
    auto analysisNamed =
        [&](llvm::StringRef n) -> llvm::Expected<const AnalysisEntry *> {
      if (const AnalysisEntry *a = lookupAnalysis(n))
        return a;
      std::vector<std::string> names;
      for (const auto &[k, _] : analyses)
        names.push_back(k);
      std::string hint = closestName(n, names);
      return makeError("unknown analysis '" + n + "' in '" + e.name + "<" + n +
                       ">'" +
                       (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    };

    if (e.name == "fixpoint") {
      unsigned maxIt = FixpointPass::kDefaultMaxIterations;
      if (e.params) {
        auto p = parsePassParams("fixpoint", *e.params, {"max-iterations"});
        if (!p)
          return p.takeError();
        if (p->count("max-iterations") &&
            (llvm::StringRef((*p)["max-iterations"]).getAsInteger(10, maxIt) ||
             maxIt == 0))
          return makeError("invalid max-iterations '" + (*p)["max-iterations"] +
                           "' for 'fixpoint'");
      }
      auto sub = inner();
      if (!sub)
        return sub.takeError();
      pm.addPass(std::make_unique<FixpointPass>(std::move(*sub), maxIt));
    } else if (e.name == "repeat") {
      if (auto err = needParams("count"))
        return err;
      // A pipeline that repeats more than this is a typo or an attack
      // (repeat<4000000000> ran for ever).
      constexpr unsigned kMaxRepeat = 10000;
      unsigned count;
      if (llvm::StringRef(*e.params).getAsInteger(10, count) || count == 0)
        return makeError("invalid repeat count '" + *e.params +
                         "'; expected a positive integer");
      if (count > kMaxRepeat)
        return makeError("repeat count " + llvm::Twine(count) +
                         " is over the limit of " + llvm::Twine(kMaxRepeat));
      auto sub = inner();
      if (!sub)
        return sub.takeError();
      pm.addPass(std::make_unique<RepeatPass>(std::move(*sub), count));
    } else if (e.name == "require" || e.name == "print" ||
               e.name == "invalidate") {
      if (auto err = noInner())
        return err;
      if (e.name == "print" && !e.params) {
        pm.addPass(std::make_unique<PrintGraphPass>());
        continue;
      }
      if (auto err = needParams("analysis"))
        return err;
      if (e.name == "invalidate" && *e.params == "all") {
        pm.addPass(std::make_unique<InvalidateAnalysisPass>(nullptr));
        continue;
      }
      auto a = analysisNamed(*e.params);
      if (!a)
        return a.takeError();
      if (e.name == "require")
        pm.addPass(std::make_unique<RequireAnalysisPass>(**a));
      else if (e.name == "print")
        pm.addPass(std::make_unique<PrintAnalysisPass>(**a));
      else
        pm.addPass(std::make_unique<InvalidateAnalysisPass>(*a));
    } else if (e.name == "verify") {
      if (auto err = noInner())
        return err;
      if (e.params)
        return makeError("'verify' takes no parameters");
      pm.addPass(std::make_unique<VerifierPass>());
    } else if (e.name == "default") {
      if (auto err = noInner())
        return err;
      if (auto err = needParams("pipeline name"))
        return err;
      const PipelineEntry *p = lookupPipeline(*e.params);
      if (!p) {
        std::vector<std::string> names;
        for (const auto &[k, _] : pipelines)
          names.push_back(k);
        std::string hint = closestName(*e.params, names);
        return makeError(
            "unknown pipeline 'default<" + *e.params + ">'" +
            (hint.empty() ? "" : "; did you mean 'default<" + hint + ">'?"));
      }
      if (depth > kMaxPipelineDepth)
        return makeError("pipeline 'default<" + *e.params +
                         ">' expands into itself");
      size_t pos = 0;
      auto sub = parseElements(p->text, pos, depth + 1);
      if (!sub)
        return sub.takeError();
      if (auto err = buildInto(pm, *sub, depth + 1))
        return err;
    } else if (const PassEntry *entry = lookupPass(e.name)) {
      if (auto err = noInner())
        return err;
      if (e.params && e.params->empty())
        return makeError("empty parameter list '<>' after '" + e.name + "'");
      auto pass = entry->create(e.params.value_or(""));
      if (!pass)
        return pass.takeError();
      pm.addPass(std::move(*pass));
    } else {
      std::string hint = closestName(e.name, allPassNames());
      if (lookupAnalysis(e.name))
        return makeError("'" + e.name +
                         "' is an analysis, not a pass; use "
                         "require<" +
                         e.name + "> or print<" + e.name + ">");
      return makeError("unknown pass '" + e.name + "' in pipeline" +
                       (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    }
  }
  return llvm::Error::success();
}

llvm::Expected<PassManager>
PassRegistry::parsePipeline(llvm::StringRef text) const {
  PassManager pm;
  if (text.trim().empty())
    return std::move(pm);
  size_t pos = 0;
  auto elems = parseElements(text, pos, 0);
  if (!elems)
    return elems.takeError();
  if (pos != text.size())
    return makeError("unexpected ')' in pipeline at offset " +
                     llvm::Twine(pos));
  if (auto err = buildInto(pm, *elems, 0))
    return std::move(err);
  return std::move(pm);
}

llvm::Expected<std::map<std::string, std::string>>
qopt::parsePassParams(llvm::StringRef passName, llvm::StringRef params,
                      llvm::ArrayRef<llvm::StringRef> keys) {
  std::map<std::string, std::string> out;
  llvm::SmallVector<llvm::StringRef, 4> parts;
  params.split(parts, ';', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef part : parts) {
    auto [key, value] = part.split('=');
    key = key.trim();
    if (llvm::find(keys, key) == keys.end()) {
      std::string allowed;
      for (llvm::StringRef k : keys)
        allowed += (allowed.empty() ? "" : ", ") + k.str();
      return makeError("invalid parameter '" + key + "' for '" + passName +
                       "'" +
                       (allowed.empty() ? "; it takes none"
                                        : "; expected one of: " + allowed));
    }
    // A bare key is a flag: `fold-weights<requantize-float-weights>`.
    out[key.str()] = part.contains('=') ? value.trim().str() : "true";
  }
  return out;
}

llvm::Expected<bool> qopt::parseBoolParam(llvm::StringRef passName,
                                          llvm::StringRef key,
                                          llvm::StringRef value) {
  if (value == "true" || value == "1")
    return true;
  if (value == "false" || value == "0")
    return false;
  return makeError("invalid value '" + value + "' for parameter '" + key +
                   "' of '" + passName + "'; expected true or false");
}

//===- QoptPython.cpp - The `qopt` Python module's native half ------------===//
//
// pybind11 bindings over the libraries, for python/qopt/__init__.py, which
// gives them their Python shape. What a script between export and trtexec
// needs: load a model (ONNX bytes or a path, or .qir text), run a pipeline
// and get its cost report as data, explain it under a backend's rules (the
// --report JSON), write it back, and build or load a CPU plan and run it on
// numpy arrays.
//
// Errors carry qopt's one-line messages (qopt.Error). The GIL is released
// while a pipeline or a plan runs. Passes come from the built-in plugins,
// found next to the module (build tree and install tree) or in
// $QOPT_PLUGIN_PATH, as the tools find them.
//
//===----------------------------------------------------------------------===//

#include "qopt/CodeGen/PlanBuilder.h"
#include "qopt/Fusion/FusionPlan.h"
#include "qopt/IR/AsmParser.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Kernels/CpuFeatures.h"
#include "qopt/Onnx/ModelIO.h"
#include "qopt/Onnx/OnnxExporter.h"
#include "qopt/Onnx/OnnxImporter.h"
#include "qopt/Passes/PassRegistry.h"
#include "qopt/Passes/StandardInstrumentations.h"
#include "qopt/Plan/Plan.h"
#include "qopt/Plan/PlanFile.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/FileOutput.h"
#include "qopt/Support/ResourceLimits.h"
#include "qopt/ToolSupport/FusionReport.h"
#include "qopt/ToolSupport/PassRegistrySetup.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <dlfcn.h>
#include <mutex>

namespace py = pybind11;
using namespace qopt;

namespace {

/// qopt's one-line message, raised in Python as qopt.Error.
struct QoptError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void raise(llvm::Error err) {
  throw QoptError(toPrintableLine(llvm::toString(std::move(err))));
}
template <typename T> T take(llvm::Expected<T> value) {
  if (!value)
    raise(value.takeError());
  return std::move(*value);
}
/// take(), with the file the error is about in front, as the tools print it.
template <typename T>
T takeFor(llvm::Expected<T> value, const std::string &file) {
  if (!value)
    throw QoptError(
        toPrintableLine(file + ": " + llvm::toString(value.takeError())));
  return std::move(*value);
}

/// The built-in plugins: $QOPT_PLUGIN_PATH, or lib/qopt/plugins beside the
/// module's tree (build/python/qopt -> build/lib/qopt/plugins; installed
/// lib/qopt/python/qopt -> lib/qopt/plugins).
PassRegistry &getRegistry() {
  static PassRegistry *registry = [] {
    PluginSetup setup;
    setup.directories.emplace();
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&getRegistry), &info) &&
        info.dli_fname) {
      llvm::SmallString<256> here(info.dli_fname);
      llvm::sys::path::remove_filename(here); // .../qopt
      for (const char *rel : {"../../lib/qopt/plugins", "../../plugins"}) {
        llvm::SmallString<256> dir(here);
        llvm::sys::path::append(dir, rel);
        setup.directories->push_back(std::string(dir));
      }
    }
    return take(makePassRegistry(setup)).release();
  }();
  return *registry;
}

py::dict costEntryToDict(const CostReport::Entry &e) {
  py::dict d;
  d["pass"] = e.pass;
  d["tensor"] = e.tensor;
  d["max_error_lsb"] = e.maxErrorLsb;
  d["detail"] = e.detail;
  d["kind"] = e.before ? "regrid" : "note";
  return d;
}

/// A model and the context owning its types.
///
/// Threads: one Model may be used from several Python threads. Each method
/// releases the GIL, then holds the model's lock while it reads or rewrites
/// the graph, and takes the GIL back only after letting the lock go (a
/// thread never waits for the lock while holding the GIL, nor for the GIL
/// while holding the lock). Calls on one Model run one at a time, in some
/// order; calls on different Models run in parallel.
struct PyModel {
  std::unique_ptr<Context> ctx = std::make_unique<Context>();
  std::unique_ptr<Model> model;
  std::string source;
  std::shared_ptr<std::mutex> lock = std::make_shared<std::mutex>();

  /// `f()` with the GIL released and the model locked.
  template <typename F> auto locked(F &&f) const {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> guard(*lock);
    return f();
  }

  static PyModel fromOnnx(const std::string &bytes, const std::string &baseDir,
                          const std::string &source) {
    PyModel m;
    m.model = take(importOnnxBuffer(bytes, baseDir, *m.ctx));
    m.source = source;
    if (auto err = verifyModel(*m.model))
      raise(std::move(err));
    return m;
  }
  static PyModel fromQir(const std::string &text, const std::string &source) {
    PyModel m;
    m.model = take(parseModel(text, source, *m.ctx));
    m.source = source;
    if (auto err = verifyModel(*m.model))
      raise(std::move(err));
    return m;
  }
  static PyModel fromFile(const std::string &path) {
    PyModel m;
    m.model = takeFor(loadModelFile(path, *m.ctx), path);
    m.source = path;
    return m;
  }

  /// Runs `pipeline`; the cost report's entries.
  py::list runPasses(const std::string &pipeline) {
    PassRegistry &registry = getRegistry();
    auto pm = take(registry.parsePipeline(pipeline));
    PassInstrumentation pi;
    StandardInstrumentations si(InstrumentationOptions{});
    si.registerCallbacks(pi);
    AnalysisManager am(&pi);
    registry.nameAnalyses(am);
    llvm::Error err = locked([&] {
      if (auto err = pm.runAndCheck(model->getGraph(), am))
        return err;
      return verifyModel(*model);
    });
    if (err)
      raise(std::move(err));
    py::list entries;
    for (const CostReport::Entry &e : am.getCostReport().getEntries())
      entries.append(costEntryToDict(e));
    return entries;
  }

  /// The fusion plan under `backend` ("trt", "trt:8.6", "ort", "cpu"): the
  /// report's JSON for it, and explain's text.
  std::pair<std::string, std::string> explain(const std::string &backend,
                                              bool checkFixes) {
    const BackendRules *rules = lookupBackendRules(backend);
    if (!rules) {
      std::string known;
      for (const BackendRules *r : getAllBackendRules())
        known += (known.empty() ? "" : ", ") + r->name.str();
      raise(makeError("unknown backend '" + backend + "' (expected one of " +
                      known + ")"));
    }
    PassRegistry &registry = getRegistry();
    return locked([&] {
      Graph &graph = model->getGraph();
      FusionPlan plan = computeFusionPlan(graph, *rules);
      plan.importProblems =
          versionProblems(graph, model->getDefaultOpsetVersion(), *rules);
      if (checkFixes)
        confirmFixes(graph, plan, registry);
      // The report's JSON alone: no picture to lay out.
      std::string json, text;
      llvm::raw_string_ostream js(json), ts(text);
      js << fusionPlanJson(plan, "model");
      printExplanation(plan, graph, ts);
      return std::pair<std::string, std::string>(js.str(), ts.str());
    });
  }

  py::bytes toOnnx() const {
    std::string bytes;
    llvm::raw_string_ostream os(bytes);
    if (auto err = locked([&] { return exportOnnx(*model, os); }))
      raise(std::move(err));
    return py::bytes(os.str());
  }
  std::string toQir() const {
    std::string text;
    llvm::raw_string_ostream os(text);
    locked([&] { printModel(*model, os); });
    return os.str();
  }
  void save(const std::string &path) const {
    if (auto err = locked(
            [&] { return saveModelFile(*model, path, formatForPath(path)); }))
      raise(std::move(err));
  }
};

py::dtype dtypeOf(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return py::dtype::of<float>();
  case ElementKind::F64:
    return py::dtype::of<double>();
  case ElementKind::I8:
    return py::dtype::of<int8_t>();
  case ElementKind::U8:
    return py::dtype::of<uint8_t>();
  case ElementKind::I16:
    return py::dtype::of<int16_t>();
  case ElementKind::U16:
    return py::dtype::of<uint16_t>();
  case ElementKind::I32:
    return py::dtype::of<int32_t>();
  case ElementKind::U32:
    return py::dtype::of<uint32_t>();
  case ElementKind::I64:
    return py::dtype::of<int64_t>();
  case ElementKind::U64:
    return py::dtype::of<uint64_t>();
  case ElementKind::Bool:
    return py::dtype::of<bool>();
  default:
    raise(makeError("no numpy type for element type " +
                    getElementKindName(kind)));
  }
}

/// A CPU plan built from a model or read from a plan file.
struct PyPlan {
  std::unique_ptr<plan::Plan> plan;
  unsigned threads = 0;

  static PyPlan fromModel(PyModel &m, const std::string &pipeline,
                          unsigned threads,
                          const std::map<std::string, int64_t> &dims,
                          bool int8ActivationsForInt4) {
    PyPlan p;
    p.threads = threads;
    if (auto err =
            m.locked([&] { return bindStaticInputShapes(*m.model, dims); }))
      raise(std::move(err));
    if (!pipeline.empty())
      m.runPasses(pipeline);
    kernels::Isa isa = take(kernels::selectIsa());
    p.plan = take(m.locked([&] {
      PlanBuildOptions options{isa, {}};
      options.int8ActivationsForInt4 = int8ActivationsForInt4;
      return buildPlan(*m.model, options);
    }));
    return p;
  }
  static PyPlan fromFile(const std::string &path, unsigned threads) {
    auto buffer = takeFor(readFileWithinLimit(path), path);
    llvm::StringRef bytes = buffer->getBuffer();
    kernels::Isa isa = take(kernels::selectIsa());
    PyPlan p;
    p.threads = threads;
    if (plan::isPlanFile(bytes))
      p.plan = takeFor(plan::readPlan(bytes, isa), path);
    else if (plan::isPlanText(bytes))
      p.plan = takeFor(plan::parsePlanText(bytes, isa), path);
    else
      raise(
          makeError(DiagLocation::file(path), path + ": not a qopt plan file"));
    return p;
  }

  std::vector<std::string> names(const std::vector<int> &ids) const {
    std::vector<std::string> out;
    for (int id : ids)
      out.push_back(plan->tensors[id].name);
    return out;
  }

  py::dict run(const py::dict &feeds) const {
    std::map<std::string, interp::Tensor> inputs;
    for (int id : plan->inputs) {
      const plan::PlanTensor &t = plan->tensors[id];
      if (!feeds.contains(t.name))
        raise(makeError(DiagLocation::value(t.name),
                        "input '" + t.name + "' is missing"));
      py::array a = py::array::ensure(feeds[py::str(t.name)]);
      if (!a)
        raise(makeError(DiagLocation::value(t.name),
                        "input '" + t.name + "' is not an array"));
      py::dtype want = dtypeOf(t.kind);
      interp::Shape shape(a.shape(), a.shape() + a.ndim());
      // numpy's equality, not identity: a dtype object equal to float32
      // (np.dtype("float32", copy=True), one a library made) is float32.
      bool sameType =
          a.dtype().is(want) || a.dtype().attr("__eq__")(want).cast<bool>();
      if (!sameType || shape != t.shape)
        raise(makeError(
            DiagLocation::value(t.name),
            "input '" + t.name + "' is " + std::string(py::str(a.dtype())) +
                interp::shapeToString(shape) + "; the plan takes " +
                std::string(py::str(want)) + interp::shapeToString(t.shape)));
      py::array c = py::array::ensure(a, py::array::c_style);
      inputs[t.name] = interp::Tensor::copyOf(
          t.kind, t.shape, static_cast<const char *>(c.data()));
    }
    for (auto item : feeds) {
      std::string name = py::str(item.first);
      if (!inputs.count(name))
        raise(makeError(DiagLocation::value(name),
                        "the plan has no input named '" + name + "'"));
    }
    llvm::Expected<std::vector<interp::Tensor>> outputs =
        std::vector<interp::Tensor>();
    {
      py::gil_scoped_release release;
      outputs = plan->run(inputs, plan::PlanRunOptions{threads});
    }
    if (!outputs)
      raise(outputs.takeError());
    py::dict result;
    for (size_t i = 0; i < outputs->size(); ++i) {
      const interp::Tensor &t = (*outputs)[i];
      py::array a(dtypeOf(t.kind()),
                  std::vector<py::ssize_t>(t.shape().begin(), t.shape().end()));
      std::memcpy(a.mutable_data(), t.bytes(), t.byteSize());
      result[py::str(plan->tensors[plan->outputs[i]].name)] = a;
    }
    return result;
  }

  void save(const std::string &path, bool text) const {
    std::string bytes =
        take(text ? plan::printPlanText(*plan) : plan::serializePlan(*plan));
    // Atomic: a write error (a full disk) is a qopt.Error and leaves the
    // previous file as it was; raw_fd_ostream alone aborted the process.
    if (auto err = writeFileAtomically(path, [&](llvm::raw_ostream &os) {
          os << bytes;
          return llvm::Error::success();
        }))
      raise(std::move(err));
  }
};

} // namespace

PYBIND11_MODULE(_qopt, m) {
  m.doc() = "qopt's native bindings (use the qopt package)";
  py::register_exception<QoptError>(m, "Error", PyExc_RuntimeError);
  py::class_<PyModel>(m, "Model")
      .def_static("from_onnx", &PyModel::fromOnnx)
      .def_static("from_qir", &PyModel::fromQir)
      .def_static("from_file", &PyModel::fromFile)
      .def("run_passes", &PyModel::runPasses)
      .def("explain", &PyModel::explain)
      .def("to_onnx", &PyModel::toOnnx)
      .def("qir", &PyModel::toQir)
      .def("save", &PyModel::save)
      .def_readonly("source", &PyModel::source);
  py::class_<PyPlan>(m, "Plan")
      .def_static("from_model", &PyPlan::fromModel)
      .def_static("from_file", &PyPlan::fromFile)
      .def("run", &PyPlan::run)
      .def("save", &PyPlan::save)
      .def_property_readonly(
          "inputs", [](const PyPlan &p) { return p.names(p.plan->inputs); })
      .def_property_readonly(
          "outputs", [](const PyPlan &p) { return p.names(p.plan->outputs); })
      .def_property_readonly(
          "isa", [](const PyPlan &p) { return getIsaName(p.plan->isa).str(); })
      .def_readwrite("threads", &PyPlan::threads);
  m.def("passes", [] {
    std::string text;
    llvm::raw_string_ostream os(text);
    getRegistry().printRegistry(os);
    return os.str();
  });
}

//===- Graph.h - Values, nodes, graphs and models ---------------*- C++ -*-===//
//
// A Graph is in SSA form: every Value has exactly one definition (a graph
// input or a node result) and a use list. Nodes are kept in a topological
// order; passes that insert nodes use the insertion helpers that preserve it.
//
// Use lists are unordered. Every operand slot, capture slot and graph output
// remembers where its Use sits in the value's list, so adding, removing and
// checking one use is O(1) whatever the value's fan-out: removal moves the
// list's last use into the hole and fixes that use's back-index.
//
// Op names are dialect-qualified: "onnx.Conv" for the default ONNX domain,
// "q.quantize" for qopt's own ops, and "<domain>.<OpType>" for any other ONNX
// domain (e.g. "com.microsoft.QLinearConv"), so nothing a model contains is
// dropped.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_IR_GRAPH_H
#define QOPT_IR_GRAPH_H

#include "qopt/IR/Attributes.h"
#include "qopt/IR/Types.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/ilist.h"
#include "llvm/ADT/ilist_node.h"

#include <memory>
#include <string>
#include <vector>

namespace qopt {

class Graph;
class Model;
class Node;
class OpDef;

/// One use of a value: operand `index` of `user`, or graph output `index`
/// when `user` is null.
struct Use {
  /// Capture uses (a subgraph attribute reading the value by name) count
  /// from here: operand indices stay below it.
  static constexpr unsigned kCaptureBase = 1u << 30;
  Node *user;
  unsigned index;
  bool isGraphOutput() const { return user == nullptr; }
  bool isCapture() const { return user && index >= kCaptureBase; }
  bool operator==(const Use &o) const {
    return user == o.user && index == o.index;
  }
};

class Value {
public:
  const TensorType *getType() const { return type; }
  void setType(const TensorType *t) { type = t; }
  llvm::StringRef getName() const { return name; }
  /// Renames; names must stay unique within the graph.
  void setName(std::string n);

  /// The producing node, or null for graph inputs.
  Node *getDefiningNode() const { return producer; }
  bool isGraphInput() const { return producer == nullptr; }
  /// Result index in the producer, or input index in the graph.
  unsigned getIndex() const { return index; }
  Graph *getGraph() const { return graph; }
  /// An absent optional result (ONNX's "" output name).
  bool isAbsent() const { return absent; }

  /// Every use, in no particular order (edits may reorder it).
  llvm::ArrayRef<Use> getUses() const { return uses; }
  size_t getNumUses() const { return uses.size(); }
  bool hasUses() const { return !uses.empty(); }
  bool hasOneUse() const { return uses.size() == 1; }
  /// O(1): the value is listed in the graph's outputs (once or more).
  bool isGraphOutput() const { return numOutputUses != 0; }
  /// O(1): the value is read by name from some node's subgraph.
  bool isCaptured() const { return numCaptureUses != 0; }
  /// O(1): operand `operandIndex` of `user` is this value and its use is
  /// recorded where the node says it is. False for out-of-range indices.
  bool hasUseAt(const Node *user, unsigned operandIndex) const;
  /// Redirects every use (including graph outputs) to `other`.
  void replaceAllUsesWith(Value *other);

private:
  friend class Node;
  friend class Graph;
  Value(Graph *g, Node *producer, unsigned index, const TensorType *type,
        std::string name)
      : graph(g), producer(producer), index(index), type(type),
        name(std::move(name)) {}
  /// Appends `u`; returns its position for the user's back-index.
  unsigned addUse(Use u);
  /// Removes the use at `pos` (which must be `u`) in O(1).
  void removeUse(unsigned pos, Use u);
  /// Where the back-index of `u` is stored (operand, capture or output slot).
  unsigned &backIndexOf(Use u);

  Graph *graph;
  Node *producer;
  unsigned index;
  const TensorType *type;
  std::string name;
  std::vector<Use> uses;
  unsigned numOutputUses = 0;
  unsigned numCaptureUses = 0;
  bool absent = false;
};

class Node : public llvm::ilist_node<Node> {
public:
  ~Node();

  llvm::StringRef getOp() const { return op; }
  /// The op table's definition of getOp(), or null for an op it does not
  /// know (looked up once, when the node is made).
  const OpDef *getOpDef() const { return def; }
  bool isa(llvm::StringRef opName) const { return op == opName; }
  /// "onnx", "q" or the ONNX domain for other ops.
  llvm::StringRef getDialect() const;
  /// The op name without its dialect ("Conv" for "onnx.Conv").
  llvm::StringRef getOpType() const;

  /// The node's name in the source model (ONNX NodeProto.name), may be empty.
  llvm::StringRef getName() const { return name; }
  void setName(std::string n) { name = std::move(n); }
  /// "'conv1' (onnx.Conv)" or "%out (onnx.Conv)" for diagnostics.
  std::string describe() const;

  unsigned getNumOperands() const { return operands.size(); }
  /// Operand `i`; null for an absent optional operand.
  Value *getOperand(unsigned i) const { return operands[i]; }
  llvm::ArrayRef<Value *> getOperands() const { return operands; }
  void setOperand(unsigned i, Value *v);
  void addOperand(Value *v);
  void eraseOperand(unsigned i);
  /// Drops operands from `count` on.
  void truncateOperands(unsigned count);

  unsigned getNumResults() const { return results.size(); }
  Value *getResult(unsigned i = 0) const { return results[i].get(); }
  std::vector<Value *> getResults() const;

  llvm::ArrayRef<NamedAttribute> getAttrs() const { return attrs; }
  const Attribute *getAttr(llvm::StringRef name) const;
  std::optional<int64_t> getIntAttr(llvm::StringRef name) const;
  /// Sets or replaces; new attributes go last (print order = insertion order).
  void setAttr(llvm::StringRef name, Attribute value);
  bool removeAttr(llvm::StringRef name);

  Graph *getGraph() const { return graph; }
  /// Drops all operand uses, so the node can be erased.
  void dropAllOperands();

  /// Values of this graph that the node's subgraph attributes (If, Loop,
  /// Scan bodies, kept as opaque bytes) read by name. They count as uses,
  /// so nothing they read is removed; the verifier checks each still has
  /// the name the subgraph uses.
  llvm::ArrayRef<Value *> getCaptures() const { return captures; }
  llvm::ArrayRef<std::string> getCaptureNames() const { return captureNames; }
  void addCapture(Value *v);

private:
  friend class Graph;
  friend class Value;
  Node(Graph *g, std::string op, std::string name);

  Graph *graph;
  std::string op;
  const OpDef *def;
  std::string name;
  std::vector<Value *> operands;
  /// Position of operand i's Use in operands[i]'s use list (unused when the
  /// operand is absent); likewise for captures.
  std::vector<unsigned> operandUsePos;
  std::vector<Value *> captures;
  std::vector<unsigned> captureUsePos;
  std::vector<std::string> captureNames;
  std::vector<std::unique_ptr<Value>> results;
  std::vector<NamedAttribute> attrs;
};

/// Description of a result to create.
struct ResultSpec {
  const TensorType *type;
  std::string name;
  bool absent = false;
};

class Graph {
public:
  using NodeList = llvm::iplist<Node>;

  explicit Graph(Context &ctx, std::string name = "main");
  ~Graph();
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  /// A copy in the same context: the same names, types, attributes (tensor
  /// data shared, it is immutable), node order, captures and outputs. What
  /// a what-if analysis rewrites without touching this graph.
  std::unique_ptr<Graph> clone() const;

  Context &getContext() const { return ctx; }
  /// The default ONNX domain's opset of the model whose main graph this
  /// is (0 for a graph of no model): what the graph's ops may spell.
  int64_t getDefaultOpsetVersion() const;
  llvm::StringRef getName() const { return name; }
  void setName(std::string n) { name = std::move(n); }
  llvm::StringRef getDocString() const { return docString; }
  void setDocString(std::string d) { docString = std::move(d); }

  // Inputs and outputs.
  Value *addInput(const TensorType *type, std::string name);
  unsigned getNumInputs() const { return inputs.size(); }
  Value *getInput(unsigned i) const { return inputs[i].get(); }
  std::vector<Value *> getInputs() const;
  void addOutput(Value *v);
  void setOutput(unsigned i, Value *v);
  unsigned getNumOutputs() const { return outputs.size(); }
  Value *getOutput(unsigned i) const { return outputs[i]; }
  llvm::ArrayRef<Value *> getOutputs() const { return outputs; }

  // Nodes.
  NodeList &getNodes() { return nodes; }
  const NodeList &getNodes() const { return nodes; }
  size_t getNumNodes() const { return nodes.size(); }
  /// Creates a node before `before` (end of the graph when null).
  Node *createNode(llvm::StringRef op, llvm::ArrayRef<Value *> operands,
                   llvm::ArrayRef<ResultSpec> results,
                   std::vector<NamedAttribute> attrs = {},
                   std::string name = {}, Node *before = nullptr);
  /// Erases a node whose results have no uses.
  void eraseNode(Node *n);
  void moveBefore(Node *n, Node *before);

  /// Value names must be unique; this makes `base` unique in this graph,
  /// and not one of the names `reserved` says are taken (names the caller
  /// will give values later, such as an importer's not yet emitted ones).
  std::string
  makeUniqueName(llvm::StringRef base,
                 llvm::function_ref<bool(llvm::StringRef)> reserved = nullptr);
  /// Looks a value up by name; null if no value has it.
  Value *lookupValue(llvm::StringRef name) const;

  /// Initializers that the source model also listed as graph inputs (ONNX
  /// allows overridable initializers); kept so export can restore them.
  std::vector<std::string> &getInitializerInputs() { return initializerInputs; }
  const std::vector<std::string> &getInitializerInputs() const {
    return initializerInputs;
  }
  /// Where each initializer input stood in the source model's input list
  /// (same order as getInitializerInputs); empty when they all came last.
  std::vector<int64_t> &getInitializerInputPositions() {
    return initializerInputPositions;
  }
  const std::vector<int64_t> &getInitializerInputPositions() const {
    return initializerInputPositions;
  }

private:
  friend class Value;
  friend class Node;
  friend class Model;
  Context &ctx;
  /// The model whose main graph this is, or null.
  const Model *owner = nullptr;
  std::string name;
  std::string docString;
  std::vector<std::unique_ptr<Value>> inputs;
  std::vector<Value *> outputs;
  /// Position of output i's Use in outputs[i]'s use list.
  std::vector<unsigned> outputUsePos;
  NodeList nodes;
  std::vector<std::string> initializerInputs;
  std::vector<int64_t> initializerInputPositions;
  llvm::StringMap<Value *> valuesByName;
  uint64_t uniqueCounter = 0;
  void registerName(Value *v);
  void unregisterName(Value *v);
};

/// One opset import: domain ("" = default ONNX domain) and version.
struct OpsetImport {
  std::string domain;
  int64_t version;
};

/// The model: the main graph plus what ONNX export must restore.
class Model {
public:
  explicit Model(Context &ctx)
      : ctx(ctx), mainGraph(std::make_unique<Graph>(ctx)) {
    mainGraph->owner = this;
  }
  // The main graph points back at its model.
  Model(const Model &) = delete;
  Model(Model &&) = delete;

  Context &getContext() const { return ctx; }
  Graph &getGraph() { return *mainGraph; }
  const Graph &getGraph() const { return *mainGraph; }

  int64_t irVersion = 8;
  std::vector<OpsetImport> opsetImports;
  std::string producerName;
  std::string producerVersion;
  std::string domain;
  int64_t modelVersion = 0;
  std::string docString;
  std::vector<std::pair<std::string, std::string>> metadataProps;
  /// Serialized onnx::FunctionProto messages, kept opaque.
  std::vector<std::string> functions;

  /// Version of the default ONNX domain, 0 if not imported.
  int64_t getDefaultOpsetVersion() const;

private:
  Context &ctx;
  std::unique_ptr<Graph> mainGraph;
};

} // namespace qopt

#endif // QOPT_IR_GRAPH_H

//===- Graph.cpp - Values, nodes, graphs and models -----------------------===//

#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/Support/Error.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>

using namespace qopt;

//===----------------------------------------------------------------------===//
// Value
//===----------------------------------------------------------------------===//

void Value::setName(std::string n) {
  if (!n.empty() && n != name)
    if (graph->lookupValue(n))
      llvm::report_fatal_error("Value::setName: name '" + llvm::Twine(n) +
                               "' is already taken by another value");
  graph->unregisterName(this);
  name = std::move(n);
  graph->registerName(this);
}

unsigned Value::addUse(Use u) {
  if (u.isGraphOutput())
    ++numOutputUses;
  else if (u.isCapture())
    ++numCaptureUses;
  uses.push_back(u);
  return static_cast<unsigned>(uses.size() - 1);
}

unsigned &Value::backIndexOf(Use u) {
  if (u.isGraphOutput())
    return graph->outputUsePos[u.index];
  if (u.isCapture())
    return u.user->captureUsePos[u.index - Use::kCaptureBase];
  return u.user->operandUsePos[u.index];
}

void Value::removeUse(unsigned pos, Use u) {
  if (pos >= uses.size() || !(uses[pos] == u))
    llvm::report_fatal_error("Value::removeUse: the use list of '" +
                             llvm::Twine(name) + "' is out of sync");
  if (u.isGraphOutput())
    --numOutputUses;
  else if (u.isCapture())
    --numCaptureUses;
  if (pos + 1 != uses.size()) {
    uses[pos] = uses.back();
    backIndexOf(uses[pos]) = pos;
  }
  uses.pop_back();
}

bool Value::hasUseAt(const Node *user, unsigned operandIndex) const {
  if (!user || operandIndex >= user->operands.size() ||
      user->operands[operandIndex] != this)
    return false;
  unsigned pos = user->operandUsePos[operandIndex];
  return pos < uses.size() && uses[pos].user == user &&
         uses[pos].index == operandIndex;
}

void Value::replaceAllUsesWith(Value *other) {
  if (other == this)
    return;
  std::vector<Use> old = std::move(uses);
  uses.clear();
  numOutputUses = numCaptureUses = 0;
  for (const Use &u : old) {
    if (u.isGraphOutput())
      graph->outputs[u.index] = other;
    else if (u.isCapture())
      u.user->captures[u.index - Use::kCaptureBase] = other;
    else
      u.user->operands[u.index] = other;
    backIndexOf(u) = other->addUse(u);
  }
}

//===----------------------------------------------------------------------===//
// Node
//===----------------------------------------------------------------------===//

Node::~Node() {
  dropAllOperands();
  for (auto &r : results)
    graph->unregisterName(r.get());
}

Node::Node(Graph *g, std::string opName, std::string nodeName)
    : graph(g), op(std::move(opName)), def(lookupOpDef(op)),
      name(std::move(nodeName)) {}

llvm::StringRef Node::getDialect() const {
  llvm::StringRef o = op;
  return o.rsplit('.').first;
}

llvm::StringRef Node::getOpType() const {
  llvm::StringRef o = op;
  return o.rsplit('.').second;
}

std::string Node::describe() const {
  // Names are escaped and shortened: a description goes into messages,
  // which printf-style formatting would cut at a NUL in a name.
  constexpr size_t kNameLimit = 256;
  std::string d;
  if (!name.empty()) {
    d = "node '" + toPrintableLine(name, kNameLimit) + "'";
  } else if (!results.empty() && !results.front()->getName().empty()) {
    d = "node producing '" +
        toPrintableLine(results.front()->getName(), kNameLimit) + "'";
  } else {
    d = "unnamed node";
  }
  return d + " (" + op + ")";
}

void Node::setOperand(unsigned i, Value *v) {
  if (operands[i])
    operands[i]->removeUse(operandUsePos[i], {this, i});
  operands[i] = v;
  if (v)
    operandUsePos[i] = v->addUse({this, i});
}

void Node::addOperand(Value *v) {
  unsigned i = static_cast<unsigned>(operands.size());
  operands.push_back(v);
  operandUsePos.push_back(v ? v->addUse({this, i}) : 0);
}

void Node::eraseOperand(unsigned i) {
  if (operands[i])
    operands[i]->removeUse(operandUsePos[i], {this, i});
  // The operands after `i` move down one slot: renumber their uses in place.
  for (unsigned j = i + 1; j < operands.size(); ++j)
    if (operands[j])
      operands[j]->uses[operandUsePos[j]].index = j - 1;
  operands.erase(operands.begin() + i);
  operandUsePos.erase(operandUsePos.begin() + i);
}

void Node::truncateOperands(unsigned count) {
  while (operands.size() > count) {
    unsigned last = operands.size() - 1;
    if (operands[last])
      operands[last]->removeUse(operandUsePos[last], {this, last});
    operands.pop_back();
    operandUsePos.pop_back();
  }
}

std::vector<Value *> Node::getResults() const {
  std::vector<Value *> out;
  for (auto &r : results)
    out.push_back(r.get());
  return out;
}

const Attribute *Node::getAttr(llvm::StringRef attrName) const {
  for (const NamedAttribute &a : attrs)
    if (a.name == attrName)
      return &a.value;
  return nullptr;
}

std::optional<int64_t> Node::getIntAttr(llvm::StringRef attrName) const {
  if (const Attribute *a = getAttr(attrName))
    if (auto *i = a->getIf<int64_t>())
      return *i;
  return std::nullopt;
}

void Node::setAttr(llvm::StringRef attrName, Attribute value) {
  for (NamedAttribute &a : attrs)
    if (a.name == attrName) {
      a.value = std::move(value);
      return;
    }
  attrs.push_back({attrName.str(), std::move(value)});
}

bool Node::removeAttr(llvm::StringRef attrName) {
  auto it =
      std::find_if(attrs.begin(), attrs.end(),
                   [&](const NamedAttribute &a) { return a.name == attrName; });
  if (it == attrs.end())
    return false;
  attrs.erase(it);
  return true;
}

void Node::dropAllOperands() {
  truncateOperands(0);
  for (unsigned i = 0; i < captures.size(); ++i)
    captures[i]->removeUse(captureUsePos[i], {this, Use::kCaptureBase + i});
  captures.clear();
  captureUsePos.clear();
  captureNames.clear();
}

void Node::addCapture(Value *v) {
  unsigned i = static_cast<unsigned>(captures.size());
  captureUsePos.push_back(v->addUse({this, Use::kCaptureBase + i}));
  captures.push_back(v);
  captureNames.push_back(v->getName().str());
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

Graph::Graph(Context &ctx, std::string name)
    : ctx(ctx), name(std::move(name)) {}

Graph::~Graph() {
  // Drop every use first so that node destruction order does not matter.
  for (Node &n : nodes)
    n.dropAllOperands();
  outputs.clear();
  outputUsePos.clear();
  nodes.clear();
}

std::unique_ptr<Graph> Graph::clone() const {
  auto copy = std::make_unique<Graph>(ctx, name);
  copy->docString = docString;
  // A what-if copy answers for the same model (its opset).
  copy->owner = owner;
  copy->initializerInputs = initializerInputs;
  copy->initializerInputPositions = initializerInputPositions;
  copy->uniqueCounter = uniqueCounter;
  llvm::DenseMap<const Value *, Value *> map;
  for (const auto &in : inputs)
    map[in.get()] = copy->addInput(in->type, in->name);
  // Results first, operands second: a valid graph is in topological order,
  // but the copy must not depend on it.
  std::vector<std::pair<const Node *, Node *>> made;
  for (const Node &n : nodes) {
    std::vector<ResultSpec> results;
    for (const auto &r : n.results)
      results.push_back({r->type, r->name, r->absent});
    Node *c = copy->createNode(n.op, {}, results, n.attrs, n.name);
    for (unsigned i = 0; i < n.results.size(); ++i)
      map[n.results[i].get()] = c->results[i].get();
    made.push_back({&n, c});
  }
  auto lookup = [&](const Value *v) -> Value * {
    return v ? map.lookup(v) : nullptr;
  };
  for (auto [n, c] : made) {
    for (Value *v : n->operands)
      c->addOperand(lookup(v));
    for (Value *v : n->captures)
      c->addCapture(lookup(v));
    c->captureNames = n->captureNames;
  }
  for (Value *v : outputs)
    copy->addOutput(lookup(v));
  return copy;
}

void Graph::registerName(Value *v) {
  if (!v->name.empty())
    valuesByName.try_emplace(v->name, v);
}

void Graph::unregisterName(Value *v) {
  if (v->name.empty())
    return;
  auto it = valuesByName.find(v->name);
  if (it != valuesByName.end() && it->second == v)
    valuesByName.erase(it);
}

Value *Graph::lookupValue(llvm::StringRef valueName) const {
  auto it = valuesByName.find(valueName);
  return it == valuesByName.end() ? nullptr : it->second;
}

Value *Graph::addInput(const TensorType *type, std::string inputName) {
  inputs.emplace_back(
      new Value(this, nullptr, inputs.size(), type, std::move(inputName)));
  registerName(inputs.back().get());
  return inputs.back().get();
}

std::vector<Value *> Graph::getInputs() const {
  std::vector<Value *> out;
  for (auto &v : inputs)
    out.push_back(v.get());
  return out;
}

void Graph::addOutput(Value *v) {
  unsigned i = static_cast<unsigned>(outputs.size());
  outputs.push_back(v);
  outputUsePos.push_back(v->addUse({nullptr, i}));
}

void Graph::setOutput(unsigned i, Value *v) {
  outputs[i]->removeUse(outputUsePos[i], {nullptr, i});
  outputs[i] = v;
  outputUsePos[i] = v->addUse({nullptr, i});
}

Node *Graph::createNode(llvm::StringRef op, llvm::ArrayRef<Value *> operands,
                        llvm::ArrayRef<ResultSpec> results,
                        std::vector<NamedAttribute> attrs, std::string nodeName,
                        Node *before) {
  Node *n = new Node(this, op.str(), std::move(nodeName));
  for (Value *v : operands)
    n->addOperand(v);
  for (const ResultSpec &r : results) {
    n->results.emplace_back(
        new Value(this, n, n->results.size(), r.type, r.name));
    n->results.back()->absent = r.absent;
    registerName(n->results.back().get());
  }
  n->attrs = std::move(attrs);
  if (before)
    nodes.insert(before->getIterator(), n);
  else
    nodes.push_back(n);
  return n;
}

void Graph::eraseNode(Node *n) {
  if (std::any_of(n->results.begin(), n->results.end(),
                  [](auto &r) { return r->hasUses(); }))
    llvm::report_fatal_error("Graph::eraseNode: " + llvm::Twine(n->describe()) +
                             " still has uses");
  nodes.erase(n->getIterator());
}

void Graph::moveBefore(Node *n, Node *before) {
  if (n == before)
    return;
  nodes.remove(n);
  if (before)
    nodes.insert(before->getIterator(), n);
  else
    nodes.push_back(n);
}

std::string
Graph::makeUniqueName(llvm::StringRef base,
                      llvm::function_ref<bool(llvm::StringRef)> reserved) {
  auto taken = [&](llvm::StringRef name) {
    return lookupValue(name) || (reserved && reserved(name));
  };
  if (!base.empty() && !taken(base))
    return base.str();
  std::string stem = base.empty() ? std::string("v") : base.str();
  while (true) {
    std::string candidate = stem + "_" + std::to_string(++uniqueCounter);
    if (!taken(candidate))
      return candidate;
  }
}

int64_t Graph::getDefaultOpsetVersion() const {
  return owner ? owner->getDefaultOpsetVersion() : 0;
}

int64_t Model::getDefaultOpsetVersion() const {
  for (const OpsetImport &o : opsetImports)
    if (o.domain.empty() || o.domain == "ai.onnx")
      return o.version;
  return 0;
}

//===- GraphTest.cpp - Use lists and graph editing ------------------------===//
//
// Use lists are O(1) to edit: these tests check, after every kind of edit
// (operands, captures, outputs, RAUW, erasure) on values with many uses, that
// each list holds exactly the slots that read the value.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/Graph.h"
#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Verifier.h"

#include "gtest/gtest.h"

#include <map>
#include <set>

using namespace qopt;

TEST(GraphTest, ReplaceAllUsesUpdatesOperandsAndOutputs) {
  Context ctx;
  Graph g(ctx);
  auto *t = ctx.getTensorType(llvm::ArrayRef<int64_t>{2},
                              ctx.getElementType(ElementKind::F32));
  Value *x = g.addInput(t, "x");
  Node *a = g.createNode("onnx.Relu", {x}, {{t, "a"}});
  Node *b =
      g.createNode("onnx.Add", {a->getResult(), a->getResult()}, {{t, "b"}});
  g.addOutput(a->getResult());
  g.addOutput(b->getResult());
  EXPECT_EQ(a->getResult()->getUses().size(), 3u);

  Node *c = g.createNode("onnx.Sigmoid", {x}, {{t, "c"}}, {}, "", b);
  a->getResult()->replaceAllUsesWith(c->getResult());
  EXPECT_FALSE(a->getResult()->hasUses());
  EXPECT_EQ(b->getOperand(0), c->getResult());
  EXPECT_EQ(b->getOperand(1), c->getResult());
  EXPECT_EQ(g.getOutput(0), c->getResult());
  g.eraseNode(a);
  EXPECT_EQ(x->getUses().size(), 1u);
  EXPECT_FALSE(bool(verifyGraph(g)));
}

TEST(GraphTest, UniqueNamesAndLookup) {
  Context ctx;
  Graph g(ctx);
  auto *t = ctx.getUnknownTensorType();
  Value *x = g.addInput(t, "x");
  EXPECT_EQ(g.lookupValue("x"), x);
  std::string n = g.makeUniqueName("x");
  EXPECT_NE(n, "x");
  EXPECT_EQ(g.lookupValue(n), nullptr);
  x->setName("renamed");
  EXPECT_EQ(g.lookupValue("x"), nullptr);
  EXPECT_EQ(g.lookupValue("renamed"), x);
}

TEST(GraphTest, EraseOperandRenumbersUses) {
  Context ctx;
  Graph g(ctx);
  auto *t = ctx.getUnknownTensorType();
  Value *x = g.addInput(t, "x");
  Value *y = g.addInput(t, "y");
  Node *n = g.createNode("onnx.Concat", {x, y, x}, {{t, "c"}});
  n->eraseOperand(0);
  ASSERT_EQ(n->getNumOperands(), 2u);
  ASSERT_EQ(x->getUses().size(), 1u);
  EXPECT_EQ(x->getUses()[0].index, 1u);
  EXPECT_EQ(y->getUses()[0].index, 0u);
}

TEST(GraphTest, CapturesCountAsUsesAndKeepTheirName) {
  Context ctx;
  Graph g(ctx);
  auto *t = ctx.getUnknownTensorType();
  Value *x = g.addInput(t, "x");
  Node *relu = g.createNode("onnx.Relu", {x}, {{t, "r"}});
  Node *sig = g.createNode("onnx.Sigmoid", {x}, {{t, "s"}});
  Node *branch = g.createNode("onnx.If", {x}, {{t, "y"}});
  branch->addCapture(relu->getResult());
  g.addOutput(branch->getResult());
  ASSERT_EQ(relu->getResult()->getUses().size(), 1u);
  EXPECT_TRUE(relu->getResult()->getUses()[0].isCapture());
  EXPECT_FALSE(bool(verifyGraph(g)));
  // Redirecting the capture to a value with another name breaks the
  // subgraph, which reads "r": the verifier says so.
  relu->getResult()->replaceAllUsesWith(sig->getResult());
  EXPECT_EQ(branch->getCaptures()[0], sig->getResult());
  llvm::Error err = verifyGraph(g);
  ASSERT_TRUE(bool(err));
  EXPECT_EQ(llvm::toString(std::move(err)),
            "node producing 'y' (onnx.If): subgraph reads 'r', but that "
            "value is now named 's'");
  // Erasing the If drops its capture uses.
  branch->getResult()->replaceAllUsesWith(x);
  g.eraseNode(branch);
  EXPECT_FALSE(sig->getResult()->hasUses());
}

TEST(GraphTest, CloneIsEqualAndIndependent) {
  Context ctx;
  Graph g(ctx, "orig");
  g.setDocString("doc");
  auto *t = ctx.getTensorType(llvm::ArrayRef<int64_t>{2},
                              ctx.getElementType(ElementKind::F32));
  Value *x = g.addInput(t, "x");
  Node *relu = g.createNode("onnx.Relu", {x}, {{t, "r"}}, {}, "relu");
  relu->setAttr("note", Attribute(int64_t(7)));
  // An absent optional operand and an absent result survive the copy.
  Node *clip = g.createNode("onnx.Clip", {relu->getResult(), nullptr},
                            {{t, "c"}, {t, "", /*absent=*/true}}, {}, "clip");
  Node *branch = g.createNode("onnx.If", {x}, {{t, "y"}});
  branch->addCapture(relu->getResult());
  g.addOutput(clip->getResult());
  g.addOutput(branch->getResult());
  g.addOutput(x);

  std::unique_ptr<Graph> copy = g.clone();
  auto text = [](const Graph &graph) {
    std::string s;
    llvm::raw_string_ostream os(s);
    printGraph(graph, os);
    return os.str();
  };
  EXPECT_EQ(text(*copy), text(g));
  EXPECT_EQ(copy->getName(), "orig");
  EXPECT_EQ(copy->getDocString(), "doc");
  EXPECT_EQ(llvm::toString(verifyGraph(*copy)), llvm::toString(verifyGraph(g)));
  Value *cr = copy->lookupValue("r");
  ASSERT_NE(cr, nullptr);
  EXPECT_NE(cr, relu->getResult());
  EXPECT_EQ(cr->getNumUses(), 2u); // the Clip and the If's capture
  EXPECT_EQ(copy->getOutput(2), copy->getInput(0));
  const Node &cclip = *std::next(copy->getNodes().begin());
  EXPECT_EQ(cclip.getOperand(1), nullptr);
  EXPECT_TRUE(cclip.getResult(1)->isAbsent());
  EXPECT_EQ(cclip.getName(), "clip");

  // Editing the copy leaves the original as it was.
  std::string before = text(g);
  Node &crelu = copy->getNodes().front();
  crelu.getResult()->replaceAllUsesWith(copy->getInput(0));
  copy->eraseNode(&crelu);
  EXPECT_EQ(text(g), before);
  EXPECT_EQ(relu->getResult()->getNumUses(), 2u);
}

//===----------------------------------------------------------------------===//
// O(1) use lists: every edit keeps each slot's back-index in sync.
//===----------------------------------------------------------------------===//

namespace {

/// Checks every invariant of the use lists through the public API: each use
/// names a slot holding the value, each slot holding a value is found by
/// hasUseAt / in the value's list exactly once, and the O(1) output and
/// capture flags agree with the slots.
void expectConsistentUseLists(const Graph &g) {
  std::map<const Value *, std::multiset<std::pair<const Node *, unsigned>>>
      slots;
  std::vector<const Value *> values;
  for (const Value *in : g.getInputs())
    values.push_back(in);
  for (const Node &n : g.getNodes()) {
    for (const Value *r : n.getResults())
      values.push_back(r);
    for (unsigned i = 0; i < n.getNumOperands(); ++i)
      if (const Value *v = n.getOperand(i)) {
        EXPECT_TRUE(v->hasUseAt(&n, i))
            << n.describe() << " operand #" << i << " has no use record";
        slots[v].insert({&n, i});
      }
    for (unsigned i = 0; i < n.getCaptures().size(); ++i)
      slots[n.getCaptures()[i]].insert({&n, Use::kCaptureBase + i});
  }
  for (unsigned i = 0; i < g.getNumOutputs(); ++i)
    slots[g.getOutput(i)].insert({nullptr, i});
  for (const Value *v : values) {
    std::multiset<std::pair<const Node *, unsigned>> listed;
    bool output = false, captured = false;
    for (const Use &u : v->getUses()) {
      listed.insert({u.user, u.index});
      output |= u.isGraphOutput();
      captured |= u.isCapture();
    }
    EXPECT_EQ(listed, slots[v]) << "use list of '" << v->getName().str()
                                << "' differs from the slots reading it";
    EXPECT_EQ(v->getNumUses(), slots[v].size());
    EXPECT_EQ(v->isGraphOutput(), output) << v->getName().str();
    EXPECT_EQ(v->isCaptured(), captured) << v->getName().str();
  }
}

struct UseListTest : ::testing::Test {
  Context ctx;
  Graph g{ctx};
  const TensorType *t = ctx.getTensorType(llvm::ArrayRef<int64_t>{4},
                                          ctx.getElementType(ElementKind::F32));
  Value *x = g.addInput(t, "x");
  Value *y = g.addInput(t, "y");

  /// `count` Relu(x) nodes, each result a graph output.
  std::vector<Node *> fanOut(unsigned count) {
    std::vector<Node *> users;
    for (unsigned i = 0; i < count; ++i) {
      users.push_back(
          g.createNode("onnx.Relu", {x}, {{t, "r" + std::to_string(i)}}));
      g.addOutput(users.back()->getResult());
    }
    return users;
  }
};

} // namespace

TEST_F(UseListTest, SetOperandOnAValueWithManyUses) {
  std::vector<Node *> users = fanOut(1000);
  // Move every third user to y, from the middle outwards, then some back.
  for (unsigned i = 0; i < users.size(); i += 3)
    users[(i * 7) % users.size()]->setOperand(0, y);
  unsigned onY = 0;
  for (Node *n : users)
    onY += n->getOperand(0) == y;
  EXPECT_EQ(y->getNumUses(), onY);
  EXPECT_EQ(x->getNumUses(), users.size() - onY);
  for (unsigned i = 0; i < users.size(); i += 5)
    users[i]->setOperand(0, x);
  users[17]->setOperand(0, nullptr); // an absent operand has no use
  EXPECT_FALSE(x->hasUseAt(users[17], 0));
  EXPECT_FALSE(y->hasUseAt(users[17], 0));
  expectConsistentUseLists(g);
  // Relu's input is required: the verifier names the node, it does not trip
  // over the use lists.
  llvm::Error err = verifyGraph(g);
  ASSERT_TRUE(bool(err));
  EXPECT_EQ(llvm::toString(std::move(err)),
            "node producing 'r17' (onnx.Relu): required operand 'X' is "
            "missing");
  users[17]->setOperand(0, y);
  EXPECT_FALSE(bool(verifyGraph(g)));
}

TEST_F(UseListTest, EraseAndTruncateOperandsRenumberRepeatedValues) {
  Node *c = g.createNode("onnx.Concat", {x, y, x, x, y, x}, {{t, "c"}});
  g.addOutput(c->getResult());
  c->eraseOperand(1); // x, x, x, y, x
  ASSERT_EQ(c->getNumOperands(), 5u);
  EXPECT_TRUE(x->hasUseAt(c, 0));
  EXPECT_TRUE(x->hasUseAt(c, 2));
  EXPECT_TRUE(y->hasUseAt(c, 3));
  EXPECT_FALSE(y->hasUseAt(c, 1));
  EXPECT_FALSE(x->hasUseAt(c, 3));
  EXPECT_FALSE(x->hasUseAt(c, 5)); // out of range, no crash
  expectConsistentUseLists(g);
  c->eraseOperand(0);     // x, x, y, x
  c->truncateOperands(3); // x, x, y
  EXPECT_EQ(x->getNumUses(), 2u);
  EXPECT_EQ(y->getNumUses(), 1u);
  EXPECT_TRUE(y->hasUseAt(c, 2));
  expectConsistentUseLists(g);
  c->truncateOperands(0);
  EXPECT_FALSE(x->hasUses());
  EXPECT_FALSE(y->hasUses());
  expectConsistentUseLists(g);
}

TEST_F(UseListTest, ReplaceAllUsesMovesOperandsCapturesAndOutputs) {
  std::vector<Node *> users = fanOut(300);
  Node *branch = g.createNode("onnx.If", {y}, {{t, "b"}});
  branch->addCapture(x);
  branch->addCapture(x);
  g.addOutput(x);
  g.addOutput(branch->getResult());
  // y already has a use: the moved uses join it.
  x->replaceAllUsesWith(y);
  EXPECT_FALSE(x->hasUses());
  EXPECT_FALSE(x->isGraphOutput());
  EXPECT_FALSE(x->isCaptured());
  EXPECT_EQ(y->getNumUses(), 300u + 1 + 2 + 1);
  EXPECT_TRUE(y->isGraphOutput());
  EXPECT_TRUE(y->isCaptured());
  EXPECT_EQ(g.getOutput(300), y);
  for (Node *n : users)
    EXPECT_TRUE(y->hasUseAt(n, 0));
  expectConsistentUseLists(g);
  // And back, so both directions of the swap-remove are exercised.
  y->replaceAllUsesWith(x);
  EXPECT_EQ(x->getNumUses(), 304u);
  expectConsistentUseLists(g);
}

TEST_F(UseListTest, DroppingOperandsOfEveryOtherUserKeepsTheRest) {
  std::vector<Node *> users;
  for (unsigned i = 0; i < 2000; ++i)
    users.push_back(g.createNode("onnx.Add", {x, i % 3 ? x : y},
                                 {{t, "a" + std::to_string(i)}}));
  Node *branch = g.createNode("onnx.Loop", {}, {{t, "l"}});
  branch->addCapture(users[5]->getResult());
  branch->addCapture(x);
  g.addOutput(branch->getResult());
  for (unsigned i = 0; i < users.size(); i += 2)
    users[i]->dropAllOperands();
  unsigned expectX = 1; // the capture
  for (unsigned i = 1; i < users.size(); i += 2)
    expectX += i % 3 ? 2 : 1;
  EXPECT_EQ(x->getNumUses(), expectX);
  expectConsistentUseLists(g);
  branch->dropAllOperands();
  EXPECT_FALSE(users[5]->getResult()->isCaptured());
  EXPECT_EQ(x->getNumUses(), expectX - 1);
  expectConsistentUseLists(g);
  // Erasing the dropped, unused nodes keeps the lists valid too.
  for (unsigned i = 0; i < users.size(); i += 2)
    g.eraseNode(users[i]);
  expectConsistentUseLists(g);
}

TEST_F(UseListTest, SetOutputOnAValueWithManyUses) {
  std::vector<Node *> users = fanOut(500);
  for (unsigned i = 0; i < 100; ++i)
    g.addOutput(x); // x is also output 500..599
  EXPECT_TRUE(x->isGraphOutput());
  for (unsigned i = 0; i < 100; i += 2)
    g.setOutput(500 + i, y);
  EXPECT_TRUE(x->isGraphOutput());
  EXPECT_TRUE(y->isGraphOutput());
  EXPECT_EQ(x->getNumUses(), 500u + 50);
  expectConsistentUseLists(g);
  for (unsigned i = 1; i < 100; i += 2)
    g.setOutput(500 + i, users[i]->getResult());
  EXPECT_FALSE(x->isGraphOutput()); // only operand uses remain
  EXPECT_EQ(x->getNumUses(), 500u);
  g.setOutput(0, x);
  EXPECT_TRUE(x->isGraphOutput());
  EXPECT_FALSE(users[0]->getResult()->isGraphOutput());
  expectConsistentUseLists(g);
  EXPECT_FALSE(bool(verifyGraph(g)));
}

TEST_F(UseListTest, ErasingAHundredThousandUsersOfOneValue) {
  // The dce shape from the issue: N Relu(%x), all dead. With linear
  // removal this is quadratic; the lists must end empty and consistent.
  std::vector<Node *> users;
  for (unsigned i = 0; i < 100000; ++i)
    users.push_back(g.createNode("onnx.Relu", {x}, {{t, ""}}));
  g.addOutput(users[99999]->getResult());
  for (unsigned i = 0; i + 1 < users.size(); ++i)
    g.eraseNode(users[i]);
  EXPECT_EQ(x->getNumUses(), 1u);
  EXPECT_TRUE(x->hasUseAt(users[99999], 0));
  expectConsistentUseLists(g);
}

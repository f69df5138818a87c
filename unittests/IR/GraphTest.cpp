//===- GraphTest.cpp - Use lists and graph editing ------------------------===//

#include "qopt/IR/Graph.h"
#include "qopt/IR/Verifier.h"

#include "gtest/gtest.h"

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

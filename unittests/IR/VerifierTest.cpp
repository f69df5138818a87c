//===- VerifierTest.cpp - Verifier diagnostics ----------------------------===//

#include "qopt/IR/Verifier.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace qopt;

namespace {

class VerifierTest : public ::testing::Test {
protected:
  Context ctx;
  Graph g{ctx};
  const TensorType *f32x4() {
    return ctx.getTensorType(llvm::ArrayRef<int64_t>{1, 4},
                             ctx.getElementType(ElementKind::F32));
  }
  const TensorType *quantized(float scale, int64_t zp,
                              ElementKind storage = ElementKind::U8) {
    return ctx.getTensorType(
        llvm::ArrayRef<int64_t>{1, 4},
        ctx.getPerTensorQuantType(storage, ElementKind::F32, scale, zp));
  }
  std::string verify() {
    llvm::Error err = verifyGraph(g);
    return err ? llvm::toString(std::move(err)) : std::string();
  }
};

} // namespace

TEST_F(VerifierTest, AcceptsQuantizeDequantizePair) {
  Value *x = g.addInput(f32x4(), "x");
  Node *q = g.createNode(ops::QQuantize, {x}, {{quantized(0.5f, 128), "xq"}},
                         {}, "q1");
  Node *dq = g.createNode(ops::QDequantize, {q->getResult()}, {{f32x4(), "y"}},
                          {}, "dq1");
  g.addOutput(dq->getResult());
  EXPECT_EQ(verify(), "");
}

TEST_F(VerifierTest, NamesTheNodeWithABadScale) {
  Value *x = g.addInput(f32x4(), "x");
  Node *q = g.createNode(ops::QQuantize, {x}, {{quantized(-0.5f, 0), "xq"}}, {},
                         "q1");
  g.addOutput(q->getResult());
  EXPECT_EQ(verify(),
            "node 'q1' (q.quantize): scale must be finite and > 0, got -0.5");
}

TEST_F(VerifierTest, RejectsNaNScaleAndOutOfRangeZeroPoint) {
  Value *x = g.addInput(f32x4(), "x");
  Node *q = g.createNode(ops::QQuantize, {x},
                         {{quantized(std::nanf(""), 0), "xq"}}, {}, "q1");
  g.addOutput(q->getResult());
  EXPECT_NE(verify().find("scale must be finite and > 0"), std::string::npos);

  Graph g2(ctx);
  Value *y = g2.addInput(f32x4(), "y");
  Node *q2 =
      g2.createNode(ops::QQuantize, {y},
                    {{quantized(0.5f, -129, ElementKind::I8), "yq"}}, {}, "q2");
  g2.addOutput(q2->getResult());
  llvm::Error err = verifyGraph(g2);
  EXPECT_EQ(llvm::toString(std::move(err)),
            "node 'q2' (q.quantize): zero point -129 is outside the range "
            "of i8 [-128, 127]");
}

TEST_F(VerifierTest, RejectsQuantizeOfIntegerInput) {
  Value *x = g.addInput(ctx.getTensorType(llvm::ArrayRef<int64_t>{1, 4},
                                          ctx.getElementType(ElementKind::I32)),
                        "x");
  Node *q =
      g.createNode(ops::QQuantize, {x}, {{quantized(0.5f, 0), "xq"}}, {}, "q1");
  g.addOutput(q->getResult());
  EXPECT_EQ(verify(), "node 'q1' (q.quantize): operand 0 'x' has element "
                      "type i32, expected float");
}

TEST_F(VerifierTest, RejectsWrongOperandCount) {
  Value *x = g.addInput(quantized(0.5f, 0), "x");
  Node *r = g.createNode(ops::QRequantize, {x, x}, {{quantized(0.25f, 0), "r"}},
                         {}, "rq");
  g.addOutput(r->getResult());
  EXPECT_EQ(verify(), "node 'rq' (q.requantize): expects 1 operand, got 2");
}

TEST_F(VerifierTest, RejectsUseBeforeDefinition) {
  Value *x = g.addInput(f32x4(), "x");
  Node *a = g.createNode("onnx.Relu", {x}, {{f32x4(), "a"}}, {}, "relu_a");
  Node *b = g.createNode("onnx.Relu", {a->getResult()}, {{f32x4(), "b"}}, {},
                         "relu_b");
  g.addOutput(b->getResult());
  EXPECT_EQ(verify(), "");
  g.moveBefore(b, a); // b now uses a before a is defined
  EXPECT_EQ(verify(), "node 'relu_b' (onnx.Relu): operand #0 'a' is used "
                      "before it is defined (nodes out of topological order, "
                      "or a cycle)");
}

TEST_F(VerifierTest, RejectsDuplicateNames) {
  Value *x = g.addInput(f32x4(), "x");
  Node *a = g.createNode("onnx.Relu", {x}, {{f32x4(), "x"}}, {}, "relu");
  g.addOutput(a->getResult());
  EXPECT_EQ(verify(), "node 'relu' (onnx.Relu): value name 'x' is defined "
                      "more than once");
}

TEST_F(VerifierTest, RetypingAQuantizeAndItsDequantizeStaysValid) {
  // The type is the only place the parameters live: a pass that changes a
  // scale changes two types and nothing else can go stale.
  Value *x = g.addInput(f32x4(), "x");
  Node *q =
      g.createNode(ops::QQuantize, {x}, {{quantized(0.5f, 0), "xq"}}, {}, "q1");
  Node *dq = g.createNode(ops::QDequantize, {q->getResult()}, {{f32x4(), "y"}},
                          {}, "dq1");
  g.addOutput(dq->getResult());
  EXPECT_EQ(verify(), "");
  q->getResult()->setType(quantized(0.125f, 3));
  EXPECT_EQ(verify(), "");
  EXPECT_EQ(dq->getOperand(0)->getType()->getQuantType()->getScale(), 0.125f);
}

TEST_F(VerifierTest, ChecksConstantPayloadSize) {
  auto data = std::make_shared<const DenseElements>(
      ElementKind::F32, std::vector<int64_t>{4}, std::string(8, '\0'));
  Node *c =
      g.createNode(ops::Constant, {},
                   {{ctx.getTensorType(llvm::ArrayRef<int64_t>{4},
                                       ctx.getElementType(ElementKind::F32)),
                     "c"}},
                   {{"value", Attribute(data)}}, "const");
  g.addOutput(c->getResult());
  EXPECT_EQ(verify(), "node 'const' (onnx.Constant): constant data has 8 "
                      "bytes, expected 16");
}

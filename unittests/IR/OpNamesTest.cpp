//===- OpNamesTest.cpp - The ops:: constants and the op table -------------===//
//
// qopt/IR/OpNames.h generates one constant per op of Ops.def: each must name
// a registered op, follow the naming rule, and together they cover the
// table. The constants for ops outside the table must stay outside it.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/OpNames.h"
#include "qopt/IR/OpDefinition.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace qopt;

namespace {

struct OpConstant {
  llvm::StringRef id;
  llvm::StringRef name;
};

std::vector<OpConstant> tableConstants() {
  return {
#define OP(ID, NAME, SINCE, SIG, CONSTRAINTS, TRAITS, INFER, REMAP, SUMMARY)   \
  {#ID, ops::ID},
#include "qopt/IR/Ops.def"
  };
}

/// The identifier the naming rule gives `name`: "onnx.X" -> X,
/// "q.snake_case" -> QSnakeCase.
std::string expectedId(llvm::StringRef name) {
  if (name.consume_front("onnx."))
    return name.str();
  if (name.consume_front("com.microsoft."))
    return "Ms" + name.str();
  std::string id;
  if (!name.consume_front("q."))
    return id;
  id = "Q";
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    id += upper ? static_cast<char>(toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return id;
}

TEST(OpNamesTest, EveryTableConstantNamesARegisteredOp) {
  std::vector<OpConstant> constants = tableConstants();
  for (const OpConstant &c : constants) {
    const OpDef *def = lookupOpDef(c.name);
    ASSERT_NE(def, nullptr) << "ops::" << c.id.str() << " = \"" << c.name.str()
                            << "\" is not a registered op";
    EXPECT_EQ(def->name, c.name);
    EXPECT_EQ(c.id.str(), expectedId(c.name))
        << "ops::" << c.id.str() << " does not follow the naming rule";
  }
}

TEST(OpNamesTest, TableConstantsCoverTheTable) {
  std::vector<OpConstant> constants = tableConstants();
  llvm::ArrayRef<const OpDef *> defs = getAllOpDefs();
  ASSERT_EQ(constants.size(), defs.size());
  for (size_t i = 0; i < defs.size(); ++i)
    EXPECT_EQ(constants[i].name, defs[i]->name);
}

TEST(OpNamesTest, OpaqueConstantsStayOutsideTheTable) {
  for (llvm::StringRef name :
       {ops::MsQGemm, ops::MsQLinearAdd, ops::MsQLinearAveragePool,
        ops::MsQLinearConcat, ops::MsQLinearGlobalAveragePool,
        ops::MsQLinearLeakyRelu, ops::MsQLinearMul, ops::MsQLinearSigmoid,
        ops::Upsample})
    EXPECT_EQ(lookupOpDef(name), nullptr)
        << name.str() << " is in the op table now: move its constant there";
}

} // namespace

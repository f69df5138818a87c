//===- ImportExportTest.cpp - ONNX import/export round trips --------------===//

#include "qopt/IR/AsmPrinter.h"
#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/Onnx/ModelIO.h"
#include "qopt/Onnx/OnnxExporter.h"
#include "qopt/Onnx/OnnxImporter.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

using namespace qopt;

namespace {

std::string printText(const Model &m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printModel(m, os);
  return os.str();
}

std::vector<std::string> goodModels() {
  std::vector<std::string> out;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(QOPT_TEST_INPUTS "/onnx/good", ec),
       end;
       it != end && !ec; it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".onnx")
      out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

TEST(ImportExportTest, ExportThenImportPrintsTheSameText) {
  std::vector<std::string> models = goodModels();
  ASSERT_GE(models.size(), 15u);
  for (const std::string &path : models) {
    SCOPED_TRACE(path);
    Context ctx;
    auto m = loadModelFile(path, ctx);
    ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
    std::string bytes;
    llvm::raw_string_ostream os(bytes);
    ASSERT_FALSE(bool(exportOnnx(**m, os)));
    os.flush();
    llvm::SmallString<256> dir(path);
    llvm::sys::path::remove_filename(dir);
    auto again = importOnnxBuffer(bytes, dir, ctx);
    ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
    EXPECT_EQ(printText(**again), printText(**m));
  }
}

TEST(ImportExportTest, DequantizeOfWeightBecomesTypedConstant) {
  Context ctx;
  auto m =
      loadModelFile(QOPT_TEST_INPUTS "/onnx/good/dq_weight_per_axis.onnx", ctx);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  const Value *w = (*m)->getGraph().lookupValue("w");
  ASSERT_TRUE(w);
  const QuantType *q = w->getType()->getQuantType();
  ASSERT_TRUE(q);
  EXPECT_EQ(q->getStorageKind(), ElementKind::I8);
  EXPECT_TRUE(q->isPerAxis());
  EXPECT_EQ(q->getAxis(), 0);
  EXPECT_EQ(q->getNumChannels(), 4u);
  ASSERT_TRUE(w->hasOneUse());
  EXPECT_TRUE(w->getUses()[0].user->isa(ops::QDequantize));
}

TEST(ImportExportTest, TruncatedModelIsAnError) {
  Context ctx;
  auto m = importOnnxBuffer(llvm::StringRef("\x08\x07\x12\x05", 4), "", ctx);
  ASSERT_FALSE(bool(m));
  EXPECT_NE(llvm::toString(m.takeError()).find("not a valid ONNX model"),
            std::string::npos);
}

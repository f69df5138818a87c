//===- OnnxImportSpellings.cpp - Older opsets' spellings, canonicalized ---===//
//
//   opset 4:  Reshape(x) {shape = [1, -1]}
//   IR:       %y_shape = onnx.Constant() {value = dense<[1, -1]>}
//             %y = onnx.Reshape(%x, %y_shape)
//
// The table of such spellings is qopt/IR/OpsetSpellings.h; the exporter
// writes them back for the model's opset.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporterImpl.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/OpsetSpellings.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/Support/FloatFormat.h"

using namespace qopt;
using namespace qopt::onnximport;

/// Older opsets wrote some operands as attributes: they become constant
/// operands (the canonical spelling), named after the node's first output.
llvm::Error Importer::canonicalizeSpelling(const onnx::NodeProto &n,
                                           llvm::StringRef op,
                                           std::vector<Value *> &operands,
                                           std::vector<NamedAttribute> &attrs) {
  Graph &graph = model->getGraph();
  for (const AttrOperandSpelling &sp : getAttrOperandSpellings(op)) {
    if (opset >= sp.operandSince)
      continue;
    auto it = std::find_if(attrs.begin(), attrs.end(),
                           [&](auto &a) { return a.name == sp.attrName; });
    if (it == attrs.end())
      continue;
    if (operands.size() > sp.operandIndex && operands[sp.operandIndex])
      return makeError(describeProto(n) + ": '" + sp.attrName +
                       "' is given as an attribute and as input " +
                       llvm::Twine(sp.operandIndex));
    DenseElementsRef data;
    if (sp.attrKind == AttrKind::Ints) {
      if (!it->value.getIf<std::vector<int64_t>>() &&
          !it->value.getIf<EmptyList>())
        return makeError(describeProto(n) + ": attribute '" + sp.attrName +
                         "' must be a list of ints");
      std::vector<int64_t> v = it->value.getInts();
      data = quant::makeDenseInt(ElementKind::I64, {int64_t(v.size())}, v);
    } else {
      const float *f = it->value.getIf<float>();
      if (!f)
        return makeError(describeProto(n) + ": attribute '" + sp.attrName +
                         "' must be a float");
      // The bound has the data's float type (Clip, Pad are one T).
      ElementKind kind = ElementKind::F32;
      if (!operands.empty() && operands[0] &&
          isFloatKind(operands[0]->getType()->getStorageKind()))
        kind = operands[0]->getType()->getStorageKind();
      data = quant::makeDense(kind, {}, {static_cast<double>(*f)});
    }
    std::vector<Dim> dims;
    for (int64_t d : data->getDims())
      dims.push_back(Dim::fixed(d));
    std::string stem =
        (n.output_size() && !n.output(0).empty() ? n.output(0) : n.name()) +
        "_" + sp.attrName.str();
    Node *c = graph.createNode(
        ops::Constant, {},
        {{ctx.getTensorType(dims, ctx.getElementType(data->getKind())),
          uniqueName(stem)}},
        {{"value", Attribute(data)}});
    if (operands.size() <= sp.operandIndex)
      operands.resize(sp.operandIndex + 1, nullptr);
    operands[sp.operandIndex] = c->getResult();
    attrs.erase(it);
  }
  return llvm::Error::success();
}

/// Upsample (opsets 7-9) is Resize with asymmetric coordinates; Resize-10
/// has no roi operand. Upsample's scales are >= 1 (ONNX's checker refuses
/// others): a constant one below is an error naming the node.
llvm::Error Importer::canonicalizeResize(const onnx::NodeProto &n,
                                         std::string &op,
                                         std::vector<Value *> &operands,
                                         std::vector<NamedAttribute> &attrs) {
  if (op == ops::Resize && opset < 11 && operands.size() == 2) {
    // Resize-10 maps coordinates asymmetrically and rounds nearest neighbours
    // down when upsampling, up when downsampling: say so in the newest
    // spelling where the constant scales decide it.
    operands = {operands[0], nullptr, operands[1]};
    attrs.push_back(
        {"coordinate_transformation_mode", Attribute("asymmetric")});
    std::string mode = "nearest";
    for (auto &a : attrs)
      if (a.name == "mode" && a.value.isString())
        mode = *a.value.getIf<std::string>();
    if (mode == "nearest")
      if (const char *nearest = resize10NearestMode(operands[2]))
        attrs.push_back({"nearest_mode", Attribute(nearest)});
    return llvm::Error::success();
  }
  if (op != ops::Upsample)
    return llvm::Error::success();
  auto refuseBelowOne = [&](llvm::ArrayRef<float> scales) -> llvm::Error {
    for (float v : scales)
      if (!(v >= 1.0f))
        return makeError(describeProto(n) + ": Upsample scale " +
                         formatFloat(v) +
                         " is below 1 (Upsample enlarges; "
                         "Resize takes smaller scales)");
    return llvm::Error::success();
  };
  if (operands.size() >= 2 && operands[1])
    if (const DenseElements *d = getConstantData(operands[1])) {
      std::vector<float> v;
      for (int64_t i = 0; i < d->getNumElements(); ++i)
        v.push_back(static_cast<float>(d->getAsDouble(i)));
      if (auto err = refuseBelowOne(v))
        return err;
    }
  op = ops::Resize;
  std::string mode = "nearest";
  for (auto it = attrs.begin(); it != attrs.end();) {
    if (it->name == "mode" && it->value.isString())
      mode = *it->value.getIf<std::string>();
    if (it->name == "scales" && it->value.getIf<std::vector<float>>()) {
      // Upsample-7 keeps the scales in an attribute.
      const std::vector<float> &v = *it->value.getIf<std::vector<float>>();
      if (auto err = refuseBelowOne(v))
        return err;
      DenseElementsRef data = quant::makeDenseF32({int64_t(v.size())}, v);
      Graph &graph = model->getGraph();
      Node *c = graph.createNode(
          ops::Constant, {},
          {{ctx.getTensorType(llvm::ArrayRef<int64_t>{int64_t(v.size())},
                              ctx.getElementType(ElementKind::F32)),
            uniqueName(n.output(0) + "_scales")}},
          {{"value", Attribute(data)}});
      operands.push_back(c->getResult());
      it = attrs.erase(it);
      continue;
    }
    ++it;
  }
  attrs.push_back({"coordinate_transformation_mode", Attribute("asymmetric")});
  if (mode == "nearest")
    attrs.push_back({"nearest_mode", Attribute("floor")});
  // Resize(X, roi, scales): Upsample's scales move to position 2.
  if (operands.size() >= 2)
    operands = {operands[0], nullptr, operands[1]};
  return llvm::Error::success();
}

//===- OnnxImportQdq.cpp - Which Q/DQ become q.* ops ----------------------===//
//
// A QuantizeLinear/DequantizeLinear with constant parameters becomes
// q.quantize/q.dequantize; its parameters go into the quantized type of the
// value it writes or reads, and only their initializer names are recorded
// (param_names), for export.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporterImpl.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/OpNames.h"
#include "qopt/IR/QuantMath.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Support/FloatFormat.h"

#include <cmath>
#include <limits>

using namespace qopt;
using namespace qopt::onnximport;

ElementKind Importer::knownKind(NameId id) {
  if (id == kNoName)
    return ElementKind::Unknown;
  if (const DenseElements *d = constantData(id))
    return d->getKind();
  const onnx::TypeProto *declaredProto = declared[id].proto;
  if (declaredProto && declaredProto->has_tensor_type()) {
    auto k = onnxbridge::elementKindFromOnnx(
        declaredProto->tensor_type().elem_type(), names[id]);
    if (k)
      return *k;
    llvm::consumeError(k.takeError());
  }
  if (const QuantType *q = valueQuant[id])
    return q->getStorageKind();
  return ElementKind::Unknown;
}

std::optional<std::vector<Dim>> Importer::knownShape(NameId id) {
  if (id == kNoName)
    return std::nullopt;
  // Walks back through Q/DQ chains (a Q/DQ's output has its input's shape)
  // iteratively, remembering every answer: linear in the chain length.
  llvm::SmallVector<NameId, 4> chain;
  std::optional<std::vector<Dim>> result;
  NameId cur = id;
  while (true) {
    if (shapeCache[cur].known) {
      result = shapeCache[cur].shape;
      break;
    }
    chain.push_back(cur);
    if (const DenseElements *d = constantData(cur)) {
      std::vector<Dim> dims;
      for (int64_t x : d->getDims())
        dims.push_back(Dim::fixed(x));
      result = dims;
      break;
    }
    auto t = declaredType(cur);
    if (!t) {
      llvm::consumeError(t.takeError());
      break;
    }
    if ((*t)->hasRank()) {
      result =
          std::vector<Dim>((*t)->getShape().begin(), (*t)->getShape().end());
      break;
    }
    int p = producers[cur];
    if (p < 0)
      break;
    const onnx::NodeProto &n = proto.graph().node(p);
    if (!isDefaultDomain(n.domain()) ||
        (n.op_type() != "QuantizeLinear" &&
         n.op_type() != "DequantizeLinear") ||
        inputsOf(p).empty() || inputsOf(p)[0] == kNoName)
      break;
    cur = inputsOf(p)[0];
  }
  for (NameId c : chain)
    shapeCache[c] = {true, result};
  return result;
}

llvm::Error Importer::analyzeQdq(int node, QdqInfo &info) {
  const onnx::NodeProto &n = proto.graph().node(node);
  llvm::ArrayRef<NameId> ins = inputsOf(node);
  bool isQ = n.op_type() == "QuantizeLinear";
  LazyNodeDescription where{n};
  int numInputs = n.input_size();
  while (numInputs > 0 && n.input(numInputs - 1).empty())
    --numInputs;
  if (numInputs < 2 || numInputs > 3)
    return makeError(where +
                     ": expects 2 or 3 inputs (x, scale, "
                     "zero_point), got " +
                     llvm::Twine(n.input_size()));
  if (n.input(0).empty() || n.input(1).empty())
    return makeError(where + ": input x and scale are required");
  if (n.output_size() != 1)
    return makeError(where + ": expects 1 output, got " +
                     llvm::Twine(n.output_size()));

  std::optional<int64_t> axisAttr, outputDtype;
  int64_t blockSize = 0;
  bool knownAttrsOnly = true;
  std::string misplacedAttr;
  for (const auto &a : n.attribute()) {
    if (a.name() == "axis") {
      axisAttr = a.i();
    } else if (a.name() == "block_size") {
      if (opset < 21) {
        // Not an attribute of this opset: reported after the other checks,
        // which usually find the model's real defect.
        misplacedAttr = a.name();
      } else if (a.i() < 0) {
        return makeError(where + ": block_size must be positive, got " +
                         llvm::Twine(a.i()));
      } else {
        blockSize = a.i(); // 0: not blocked
      }
    } else if (a.name() == "output_dtype" && isQ) {
      if (opset < 21)
        misplacedAttr = a.name();
      outputDtype = a.i();
    } else if (a.name() != "saturate") {
      knownAttrsOnly = false;
    }
  }

  const std::string &x = n.input(0);
  const std::string &scaleName = n.input(1);
  static const std::string kNoZeroPoint;
  const std::string &zpName = numInputs == 3 ? n.input(2) : kNoZeroPoint;
  NameId xId = ins[0], scaleId = ins[1],
         zpId = numInputs == 3 ? ins[2] : kNoName;

  // Parameters that are not constants keep the node opaque.
  const DenseElements *scale = constantData(scaleId);
  const DenseElements *zp = constantData(zpId);
  // float8 (opset 19) and float4 (opset 23): typed like the integer kinds
  // when the zero point is absent or all +0 codes (a quantized type's
  // minifloat grid has no offset); other zero points keep the node
  // onnx.QuantizeLinear/DequantizeLinear, which the interpreter runs as
  // ONNX defines it.
  {
    ElementKind stored = isQ ? knownKind(zpId) : knownKind(xId);
    if (stored == ElementKind::Unknown && isQ && outputDtype)
      if (auto k = elementKindFromOnnxDataType(*outputDtype))
        stored = *k;
    if (stored == ElementKind::Unknown && !isQ)
      stored = knownKind(zpId);
    if (isMinifloatKind(stored)) {
      int64_t since = stored == ElementKind::F4E2M1 ? 23 : 19;
      if (opset < since)
        return makeError(where + ": " +
                         (stored == ElementKind::F4E2M1 ? "float4" : "float8") +
                         " type " + getElementKindName(stored) +
                         " needs opset " + llvm::Twine(since) +
                         ", but the model imports opset " + llvm::Twine(opset));
      if (!zpName.empty()) {
        if (!zp || zp->getKind() != stored)
          return llvm::Error::success();
        for (int64_t i = 0; i < zp->getNumElements(); ++i)
          if (zp->getAsInt(i) != 0)
            return llvm::Error::success();
      }
    }
  }
  ElementKind scaleKind = knownKind(scaleId);
  if (scaleKind != ElementKind::Unknown && !isFloatKind(scaleKind))
    return makeError(where + ": scale '" + scaleName +
                     "' must be a float tensor, got " +
                     getElementKindName(scaleKind));
  ElementKind zpKind = knownKind(zpId);
  if (zpKind != ElementKind::Unknown && !isAnyQuantStorageKind(zpKind))
    return makeError(where + ": zero point '" + zpName +
                     "' must be int4, uint4, int8, uint8, int16, uint16" +
                     (isQ ? "" : " or int32") + ", got " +
                     getElementKindName(zpKind));
  if ((zpKind == ElementKind::I16 || zpKind == ElementKind::U16 ||
       zpKind == ElementKind::I4 || zpKind == ElementKind::U4) &&
      opset < 21)
    return makeError(
        where + ": " + (getElementByteSize(zpKind) == 2 ? "16" : "4") +
        "-bit zero point '" + zpName +
        "' needs opset 21, but the model imports opset " + llvm::Twine(opset));
  if (isQ && zpKind == ElementKind::I32)
    return makeError(where + ": zero point '" + zpName +
                     "' of type i32 is only valid for DequantizeLinear");
  if (scale && scale->getKind() == ElementKind::F64)
    return makeError(where + ": scale '" + scaleName +
                     "' must be float, float16 or bfloat16, got f64");

  // Storage type: zero point, else output_dtype (Q) / x's type (DQ), else u8.
  ElementKind storage = zpKind;
  if (outputDtype && *outputDtype != 0) {
    auto k = onnxbridge::elementKindFromOnnx(*outputDtype, std::string(where));
    if (!k)
      return k.takeError();
    if (!isAnyQuantStorageKind(*k) || *k == ElementKind::I32)
      return makeError(where + ": output_dtype " + getElementKindName(*k) +
                       " is not a supported quantized type");
    if (storage != ElementKind::Unknown && storage != *k)
      return makeError(where + ": output_dtype " + getElementKindName(*k) +
                       " does not match the zero point type " +
                       getElementKindName(storage));
    storage = *k;
  }
  ElementKind xKind = knownKind(xId);
  if (isQ) {
    if (xKind != ElementKind::Unknown && !isFloatKind(xKind))
      return makeError(where + ": input '" + x +
                       "' must be a float tensor, "
                       "got " +
                       getElementKindName(xKind));
    if (storage == ElementKind::Unknown && zpName.empty())
      storage = ElementKind::U8;
  } else {
    if (xKind != ElementKind::Unknown) {
      if (!isAnyQuantStorageKind(xKind))
        return makeError(where + ": input '" + x +
                         "' must be int8, uint8, "
                         "int16, uint16 or int32, "
                         "got " +
                         getElementKindName(xKind));
      if (storage != ElementKind::Unknown && storage != xKind)
        return makeError(where + ": input '" + x + "' is " +
                         getElementKindName(xKind) + " but the zero point is " +
                         getElementKindName(storage));
      storage = xKind;
    }
  }
  // Declared result type of a Q must be the storage type.
  if (isQ && storage != ElementKind::Unknown) {
    ElementKind declaredOut = knownKind(outputsOf(node)[0]);
    if (declaredOut != ElementKind::Unknown && declaredOut != storage)
      return makeError(where + ": output '" + n.output(0) + "' is declared " +
                       getElementKindName(declaredOut) +
                       " but the quantized type is " +
                       getElementKindName(storage) +
                       " (from the zero point or output_dtype)");
  }

  // Shapes, from constants or declared types: per tensor (one element,
  // rank <= 1) or per axis (rank 1). Checked even for dynamic parameters.
  auto staticDims = [&](NameId id) -> std::optional<std::vector<int64_t>> {
    auto shape = knownShape(id);
    if (!shape)
      return std::nullopt;
    std::vector<int64_t> dims;
    for (const Dim &d : *shape) {
      if (!d.isStatic())
        return std::nullopt;
      dims.push_back(d.size);
    }
    return dims;
  };
  auto numElements = [](const std::vector<int64_t> &dims) {
    int64_t n = 1;
    for (int64_t d : dims)
      if (d < 0 || __builtin_mul_overflow(n, d, &n))
        return std::numeric_limits<int64_t>::max(); // reads as "blocked"
    return n;
  };
  // NVFP4: the scale is the DequantizeLinear of constant float8 codes by a
  // constant scale; the type holds both levels (its shape: the codes').
  std::optional<TwoLevelScale> twoLevel;
  if (!scale && !isQ && knownAttrsOnly && (zpName.empty() || zp) &&
      storage != ElementKind::Unknown)
    twoLevel = twoLevelScaleOf(scaleId);
  std::optional<std::vector<int64_t>> sdims = staticDims(scaleId);
  if (!sdims && twoLevel)
    sdims = twoLevel->dims;
  std::optional<std::vector<int64_t>> zdims = staticDims(zpId);
  if (sdims && zdims && *zdims != *sdims &&
      !(numElements(*sdims) == 1 && numElements(*zdims) == 1))
    return makeError(where + ": zero point shape " + shapeText(*zdims) +
                     " does not match scale shape " + shapeText(*sdims));
  if (blockSize == 0 && sdims && sdims->size() > 1 && numElements(*sdims) != 1)
    return makeError(where + ": scale of shape " + shapeText(*sdims) +
                     " has more than one dim but the node has no block_size");
  if (sdims && numElements(*sdims) == 0)
    return makeError(where + ": scale '" + scaleName + "' is empty");
  std::optional<int64_t> axis;
  // The axis attribute (default 1) for an input of `rank`, made positive.
  auto axisFor = [&](int64_t rank) -> llvm::Expected<int64_t> {
    int64_t a = axisAttr.value_or(1);
    if (a < -rank || a >= rank)
      return makeError(where + ": axis " + llvm::Twine(a) +
                       " is out of range for input '" + x + "' of rank " +
                       llvm::Twine(rank));
    return a < 0 ? a + rank : a;
  };
  if (blockSize > 0) {
    // Block-wise: the scale has x's rank and shape, but along the axis
    // ceil(size / block_size).
    std::optional<std::vector<int64_t>> xdims = staticDims(xId);
    if (!sdims || !xdims)
      return makeError(where + ": block_size " + llvm::Twine(blockSize) +
                       " needs static shapes for input '" + x +
                       "' and its scale");
    auto normalized = axisFor(static_cast<int64_t>(xdims->size()));
    if (!normalized)
      return normalized.takeError();
    int64_t a = *normalized;
    std::vector<int64_t> want = *xdims;
    want[a] = quant::blocksAlong(want[a], blockSize);
    if (*sdims != want)
      return makeError(where + ": scale of shape " + shapeText(*sdims) +
                       " does not fit input '" + x + "' of shape " +
                       shapeText(*xdims) + " in blocks of " +
                       llvm::Twine(blockSize) + " along axis " +
                       llvm::Twine(a) + " (expected " + shapeText(want) + ")");
    axis = a;
  } else if (sdims && numElements(*sdims) > 1) {
    int64_t channels = numElements(*sdims);
    int64_t a = axisAttr.value_or(1);
    if (auto xShape = knownShape(xId)) {
      auto normalized = axisFor(static_cast<int64_t>(xShape->size()));
      if (!normalized)
        return normalized.takeError();
      a = *normalized;
      const Dim &d = (*xShape)[a];
      if (d.isStatic() && d.size != channels)
        return makeError(where + ": per-axis scale has " +
                         llvm::Twine(channels) + " elements but axis " +
                         llvm::Twine(a) + " of input '" + x + "' has size " +
                         llvm::Twine(d.size));
      axis = a;
    } else if (a < 0) {
      return llvm::Error::success(); // cannot normalise: stay opaque
    } else {
      axis = a;
    }
  }

  if (!misplacedAttr.empty())
    return makeError(where + ": attribute '" + misplacedAttr +
                     "' needs opset 21, but the model imports opset " +
                     llvm::Twine(opset));

  if (twoLevel) {
    const QuantType *q = ctx.getTwoLevelQuantType(
        storage, ElementKind::F32, axis, blockSize, twoLevel->codeKind,
        twoLevel->scale, twoLevel->codes,
        std::vector<int64_t>(twoLevel->codes.size(), 0));
    if (zp)
      for (int64_t i = 0; i < zp->getNumElements(); ++i)
        if (zp->getAsInt(i) != 0)
          return llvm::Error::success(); // keep it as written
    if (!checkQuantType(q).empty() || !sdims ||
        numElements(*sdims) != static_cast<int64_t>(twoLevel->codes.size()) ||
        (!axis && twoLevel->codes.size() != 1))
      return llvm::Error::success();
    info.convertible = true;
    info.quant = q;
    info.scaleNode = twoLevel->node;
    return llvm::Error::success();
  }
  if (!scale || (!zpName.empty() && !zp) || !knownAttrsOnly ||
      storage == ElementKind::Unknown)
    return llvm::Error::success(); // dynamic parameters: opaque node

  int64_t channels = scale->getNumElements();
  std::vector<float> scales;
  std::vector<int64_t> zps;
  for (int64_t i = 0; i < channels; ++i) {
    float s = static_cast<float>(scale->getAsDouble(i));
    if (!std::isfinite(s) || !(s > 0))
      return makeError(where + ": scale '" + scaleName +
                       "' must be finite and > 0, got " +
                       (std::isnan(s) ? std::string("nan") : formatFloat(s)));
    scales.push_back(s);
    zps.push_back(zp ? zp->getAsInt(i) : 0);
  }
  const QuantType *q =
      ctx.getQuantType(storage, scale->getKind(), axis, scales, zps, blockSize);
  std::string why = checkQuantType(q);
  if (!why.empty())
    return makeError(where + ": " + why);
  info.convertible = true;
  info.quant = q;
  return llvm::Error::success();
}

std::optional<TwoLevelScale> Importer::twoLevelScaleOf(NameId scaleId) {
  if (scaleId == kNoName || readCounts[scaleId] != 1 || producers[scaleId] < 0)
    return std::nullopt;
  int p = producers[scaleId];
  const onnx::NodeProto &n = proto.graph().node(p);
  llvm::ArrayRef<NameId> ins = inputsOf(p);
  if (!isDefaultDomain(n.domain()) || n.op_type() != "DequantizeLinear" ||
      n.attribute_size() != 0 || n.output_size() != 1 || ins.size() < 2 ||
      ins.size() > 3)
    return std::nullopt;
  const DenseElements *codes = constantData(ins[0]);
  const DenseElements *scale = constantData(ins[1]);
  const DenseElements *zero = ins.size() == 3 ? constantData(ins[2]) : nullptr;
  if (!codes || !scale || (ins.size() == 3 && ins[2] != kNoName && !zero) ||
      !isFloat8Kind(codes->getKind()) || scale->getNumElements() != 1 ||
      scale->getKind() != ElementKind::F32)
    return std::nullopt;
  if (zero) {
    if (zero->getKind() != codes->getKind() || zero->getNumElements() != 1 ||
        zero->getAsInt(0) != 0)
      return std::nullopt;
  }
  TwoLevelScale two;
  two.node = p;
  two.codeKind = codes->getKind();
  two.dims.assign(codes->getDims().begin(), codes->getDims().end());
  two.scale = static_cast<float>(scale->getAsDouble(0));
  for (int64_t i = 0; i < codes->getNumElements(); ++i)
    two.codes.push_back(static_cast<uint8_t>(codes->getAsInt(i)));
  return two;
}

llvm::Error Importer::assignQuantTypes() {
  const onnx::GraphProto &g = proto.graph();
  qdq.resize(g.node_size());
  readCounts.assign(names.size(), 0);
  for (int i = 0; i < g.node_size(); ++i) {
    for (NameId id : inputsOf(i))
      if (id != kNoName)
        ++readCounts[id];
    for (NameId id : captureIds[i])
      ++readCounts[id];
  }
  for (NameId id : outputIds)
    ++readCounts[id];
  // Quantize results first: they define their values' types.
  for (int i : order) {
    const onnx::NodeProto &n = g.node(i);
    if (!isDefaultDomain(n.domain()) ||
        (n.op_type() != "QuantizeLinear" && n.op_type() != "DequantizeLinear"))
      continue;
    if (auto err = analyzeQdq(i, qdq[i]))
      return err;
    if (qdq[i].convertible && n.op_type() == "QuantizeLinear" &&
        outputsOf(i)[0] != kNoName)
      valueQuant[outputsOf(i)[0]] = qdq[i].quant;
  }
  // Then each DQ input not produced by a convertible Q takes the parameters
  // its DQ consumers agree on. Reads grouped by value: (value, DQ node).
  std::vector<std::pair<NameId, int>> dqReads;
  for (int i : order)
    if (qdq[i].convertible && g.node(i).op_type() == "DequantizeLinear")
      dqReads.push_back({inputsOf(i)[0], i});
  std::sort(dqReads.begin(), dqReads.end());
  for (size_t begin = 0, end; begin < dqReads.size(); begin = end) {
    NameId value = dqReads[begin].first;
    for (end = begin + 1; end < dqReads.size() && dqReads[end].first == value;)
      ++end;
    auto users =
        llvm::make_range(dqReads.begin() + begin, dqReads.begin() + end);
    const QuantType *first = qdq[dqReads[begin].second].quant;
    if (const QuantType *fromQ = valueQuant[value]) {
      for (auto [v, u] : users)
        if (qdq[u].quant != fromQ)
          qdq[u].convertible = false; // different params: keep ONNX DQ
      continue;
    }
    bool agree = true;
    for (auto [v, u] : users)
      agree &= qdq[u].quant == first;
    ElementKind kind = knownKind(value);
    if (agree &&
        (kind == ElementKind::Unknown || kind == first->getStorageKind())) {
      valueQuant[value] = first;
    } else {
      for (auto [v, u] : users)
        qdq[u].convertible = false;
    }
  }
  // A two-level scale's DequantizeLinear is the type's now: not emitted
  // (emitNode puts it back if its reader stays an ONNX node after all).
  for (int i : order)
    if (qdq[i].convertible && qdq[i].scaleNode >= 0) {
      emitted.set(qdq[i].scaleNode);
      for (NameId id : inputsOf(qdq[i].scaleNode))
        if (id != kNoName)
          absorbedParams.set(id);
    }
  return llvm::Error::success();
}

/// What export needs to restore a Q/DQ's parameter initializers: their
/// names and, where not the default, their ranks. The numbers stay in the
/// quantized type only.
void Importer::recordParamNames(int node, const QuantType *q,
                                std::vector<NamedAttribute> &attrs) {
  llvm::ArrayRef<NameId> ins = inputsOf(node);
  std::vector<std::string> paramNames;
  std::vector<int64_t> ranks;
  bool defaultRanks = true;
  int defaultRank = q->isPerAxis() ? 1 : 0;
  for (size_t k = 1; k < ins.size() && k < 3; ++k) {
    if (ins[k] == kNoName)
      break;
    paramNames.push_back(names[ins[k]].str());
    absorbedParams.set(ins[k]);
    const DenseElements *d = constantData(ins[k]);
    int rank = d ? static_cast<int>(d->getDims().size()) : defaultRank;
    ranks.push_back(rank);
    defaultRanks &= rank == defaultRank;
  }
  attrs.push_back({"param_names", Attribute(std::move(paramNames))});
  if (!defaultRanks)
    attrs.push_back({"param_ranks", Attribute(std::move(ranks))});
  if (qdq[node].scaleNode < 0)
    return;
  // Two-level: the scale tensor's DequantizeLinear, its codes, scale and
  // zero point.
  int p = qdq[node].scaleNode;
  std::vector<std::string> scaleParams{proto.graph().node(p).name()};
  for (NameId id : inputsOf(p))
    scaleParams.push_back(id == kNoName ? "" : names[id].str());
  attrs.push_back({"scale_params", Attribute(std::move(scaleParams))});
  // The ranks of its scale and zero point, when not scalars.
  std::vector<int64_t> scaleRanks;
  for (size_t k = 1; k < inputsOf(p).size(); ++k)
    if (const DenseElements *d = constantData(inputsOf(p)[k]))
      scaleRanks.push_back(int64_t(d->getDims().size()));
  if (llvm::any_of(scaleRanks, [](int64_t r) { return r != 0; }))
    attrs.push_back({"scale_param_ranks", Attribute(std::move(scaleRanks))});
}

void Importer::adoptDataGrids() {
  for (Node &n : model->getGraph().getNodes()) {
    const OpDef *def = n.getOpDef();
    if (!def || !hasTrait(n, OpTrait::DataMovement) || !n.getNumOperands() ||
        !n.getOperand(0))
      continue;
    const QuantType *grid = n.getOperand(0)->getType()->getQuantType();
    const SignatureSlot *data = def->operandSlot(0);
    if (!grid || !data || data->typeVar.empty())
      continue;
    for (unsigned i = 1; i < n.getNumOperands(); ++i) {
      Value *v = n.getOperand(i);
      const SignatureSlot *slot = def->operandSlot(i);
      if (!v || !slot || slot->typeVar != data->typeVar || !v->hasOneUse())
        continue;
      const TensorType *t = v->getType();
      const Node *producer = v->getDefiningNode();
      if (t->isQuantized() || !t->hasRank() ||
          t->getStorageKind() != grid->getStorageKind() || !producer ||
          !producer->isa(ops::Constant))
        continue;
      v->setType(model->getContext().getTensorType(t->getShape(), grid));
    }
  }
}

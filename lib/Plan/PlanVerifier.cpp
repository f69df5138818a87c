//===- PlanVerifier.cpp - What a plan's steps rely on when they run -------===//
//
// The steps read and write raw bytes at the offsets their parameters give;
// the builder makes those agree with the tensors, and verifyPlan checks
// that they do before a plan from elsewhere (a plan file) runs:
//
//   tensors  a numeric kind, a shape whose bytes fit the limits, an arena
//            place inside the arena (or a constant of that kind, shape and
//            size), NHWC only for 4-D tensors
//   steps    tensor ids in range, results not constants, and per kind the
//            layouts, kinds and shapes its kernel assumes (a conv's input
//            and output against its geometry, a table's element counts, a
//            channel copy's ranges inside both tensors, ...)
//
// A plan that passes cannot make an int8, table, pool, copy, resize,
// quantize or reformat step touch bytes outside its tensors or its scratch; a
// float step passes the IR's verifier as a node of a graph of its own (operand
// and result counts, kinds, attributes, inferred result types), as every
// node the interpreter runs does. What a plan computes is the file's
// business.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/Graph.h"
#include "qopt/IR/OpDefinition.h"
#include "qopt/IR/Verifier.h"
#include "qopt/Plan/Plan.h"
#include "qopt/Support/Error.h"

#include "llvm/Support/Casting.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace qopt;
using namespace qopt::rt;

namespace {

/// Largest tensor or arena a plan may describe (1 TiB): far beyond any
/// model, small enough that no size computed from it overflows.
constexpr uint64_t kMaxPlanBytes = uint64_t(1) << 40;
/// Largest geometry parameter (a dimension, stride, pad, ...).
constexpr int64_t kMaxGeometry = int64_t(1) << 31;

bool isInt8Kind(ElementKind kind) {
  return kind == ElementKind::I8 || kind == ElementKind::U8;
}

class PlanVerifier {
public:
  PlanVerifier(const Plan &plan, bool requirePlacement)
      : plan(plan), requirePlacement(requirePlacement) {}

  llvm::Error verify() {
    if (plan.arenaBytes > kMaxPlanBytes)
      return makeError("the arena of " + llvm::Twine(plan.arenaBytes) +
                       " bytes is over the limit");
    referenced.assign(plan.tensors.size(), false);
    for (const auto &s : plan.steps)
      for (const std::vector<int> *ids : {&s->inputs, &s->outputs})
        for (int id : *ids)
          if (id >= 0 && size_t(id) < plan.tensors.size())
            referenced[id] = true;
    for (const std::vector<int> *ids : {&plan.inputs, &plan.outputs})
      for (int id : *ids)
        if (id >= 0 && size_t(id) < plan.tensors.size())
          referenced[id] = true;
    for (size_t id = 0; id < plan.tensors.size(); ++id)
      if (auto err = verifyTensor(static_cast<int>(id)))
        return err;
    for (int id : plan.inputs) {
      if (auto err = checkId(id, "graph input"))
        return err;
      const PlanTensor &t = plan.tensors[id];
      if (t.constant || t.layout != PlanLayout::Onnx)
        return makeError("graph input '" + t.name +
                         "' is a constant or not in ONNX layout");
    }
    for (int id : plan.outputs)
      if (auto err = checkId(id, "graph output"))
        return err;
    for (size_t i = 0; i < plan.steps.size(); ++i)
      if (auto err = verifyStep(*plan.steps[i]))
        return makeError("step " + llvm::Twine(i) + " (" +
                         plan.steps[i]->getKindName() + " '" +
                         plan.steps[i]->getName() +
                         "'): " + llvm::toString(std::move(err)));
    return checkPlanBudget(plan);
  }

private:
  llvm::Error checkId(int id, const llvm::Twine &role) const {
    if (id < 0 || static_cast<size_t>(id) >= plan.tensors.size())
      return makeError(role + " names tensor %" + llvm::Twine(id) +
                       ", which the plan does not have");
    return llvm::Error::success();
  }

  llvm::Error verifyTensor(int id) const {
    const PlanTensor &t = plan.tensors[id];
    auto fail = [&](const llvm::Twine &why) {
      return makeError("tensor %" + llvm::Twine(id) + " '" + t.name +
                       "': " + why);
    };
    for (int64_t d : t.shape)
      if (d < 0 || d > kMaxGeometry)
        return fail("dimension " + llvm::Twine(d) + " is out of range");
    auto count = shapeNumElements(t.shape);
    unsigned size = getElementByteSize(t.kind);
    if (!count || uint64_t(*count) > kMaxPlanBytes)
      return fail("too many elements");
    if (uint64_t(*count) * std::max(size, 1u) > kMaxPlanBytes)
      return fail("too many bytes");
    if (t.layout == PlanLayout::Nhwc && t.shape.size() != 4)
      return fail("an NHWC tensor is 4-D");
    if (t.constant) {
      if (t.constant->kind() != t.kind || t.constant->shape() != t.shape ||
          t.constant->byteSize() != t.byteSize())
        return fail("the constant's value is not of the tensor's type");
      // Steps read constants as they are (no stored flip).
      if (t.layout != PlanLayout::Onnx)
        return fail("a constant not in ONNX layout");
      return llvm::Error::success();
    }
    // A tensor nothing reads or writes (a step fused away) has no place.
    if ((!referenced[id] || !requirePlacement) && t.arenaOffset == -1)
      return llvm::Error::success();
    if (size == 0)
      return fail("a tensor in the arena needs a numeric kind");
    if (t.arenaOffset < 0 || t.arenaOffset % 64 != 0 ||
        uint64_t(t.arenaOffset) > plan.arenaBytes ||
        t.byteSize() > plan.arenaBytes - uint64_t(t.arenaOffset))
      return fail("its place in the arena (offset " +
                  llvm::Twine(t.arenaOffset) + ", " +
                  llvm::Twine(t.byteSize()) +
                  " bytes) is not 64-byte aligned inside the arena of " +
                  llvm::Twine(plan.arenaBytes) + " bytes");
    return llvm::Error::success();
  }

  /// The ids a step reads and writes; `optional` allows -1 (absent).
  llvm::Error checkOperands(const PlanStep &s, size_t inputs, size_t outputs,
                            bool optional = false) const {
    if (s.inputs.size() != inputs || s.outputs.size() != outputs)
      return makeError("expects " + llvm::Twine(inputs) + " inputs and " +
                       llvm::Twine(outputs) + " outputs, has " +
                       llvm::Twine(s.inputs.size()) + " and " +
                       llvm::Twine(s.outputs.size()));
    return checkIds(s, optional);
  }

  llvm::Error checkIds(const PlanStep &s, bool optional) const {
    for (int id : s.inputs)
      if (!(optional && id == -1))
        if (auto err = checkId(id, "an input"))
          return err;
    for (int id : s.outputs) {
      if (optional && id == -1)
        continue;
      if (auto err = checkId(id, "an output"))
        return err;
      if (plan.tensors[id].constant)
        return makeError("writes constant tensor %" + llvm::Twine(id));
    }
    return llvm::Error::success();
  }

  /// Tensor `id` is NHWC with `shape`, i8 or u8 (`int8`) or else f32.
  llvm::Error expectNhwc(int id, const Shape &shape, bool int8,
                         const llvm::Twine &role) const {
    const PlanTensor &t = plan.tensors[id];
    if (t.layout != PlanLayout::Nhwc || t.shape != shape ||
        (int8 ? !isInt8Kind(t.kind) : t.kind != ElementKind::F32))
      return makeError(role + " '" + t.name + "' is " +
                       getElementKindName(t.kind) + shapeToString(t.shape) +
                       (t.layout == PlanLayout::Nhwc ? " nhwc" : "") +
                       "; the step needs " + (int8 ? "i8 or u8" : "f32") +
                       shapeToString(shape) + " nhwc");
    return llvm::Error::success();
  }

  llvm::Error verifyStep(const PlanStep &s) const {
    if (const auto *conv = llvm::dyn_cast<ConvStep>(&s))
      return verifyConv(*conv);
    if (const auto *reformat = llvm::dyn_cast<ReformatStep>(&s))
      return verifyReformat(*reformat);
    if (const auto *f = llvm::dyn_cast<FloatStep>(&s))
      return verifyFloat(*f);
    if (const auto *table = llvm::dyn_cast<TableStep>(&s))
      return verifyTable(*table);
    if (const auto *pool = llvm::dyn_cast<PoolStep>(&s))
      return verifyPool(*pool);
    if (const auto *pool = llvm::dyn_cast<AveragePoolStep>(&s))
      return verifyAveragePool(*pool);
    if (const auto *copy = llvm::dyn_cast<ChannelCopyStep>(&s))
      return verifyChannelCopy(*copy);
    if (const auto *quantize = llvm::dyn_cast<QuantizeStep>(&s))
      return verifyQuantize(*quantize);
    if (const auto *resize = llvm::dyn_cast<ResizeStep>(&s))
      return verifyResize(*resize);
    if (const auto *gemm = llvm::dyn_cast<GemmStep>(&s))
      return verifyGemm(*gemm);
    if (const auto *matmul = llvm::dyn_cast<MatMulStep>(&s))
      return verifyMatMul(*matmul);
    return makeError("unknown kind of step");
  }

  /// A float step's kernel trusts its operand and result counts to be its
  /// op's (in a graph, the IR's verifier sees to that): the op table's
  /// bounds, or one result for the ops the table does not define.
  llvm::Error verifyFloat(const FloatStep &step) const {
    const KernelOp &op = step.getOp();
    unsigned operands = op.getNumOperands(), results = op.getNumResults();
    const OpDef *def = lookupOpDef(op.op);
    bool fits = step.inputs.size() == operands &&
                step.outputs.size() == results &&
                op.resultQuantTypes.size() <= results &&
                (def ? operands >= def->getMinOperands() &&
                           operands <= def->getMaxOperands() &&
                           results >= def->getMinResults() &&
                           results <= def->getMaxResults() && results > 0
                     : results == 1);
    if (!fits)
      return makeError(llvm::Twine(step.inputs.size()) + " operands and " +
                       llvm::Twine(step.outputs.size()) +
                       " results do not fit " + op.op);
    if (auto err = checkIds(step, /*optional=*/true))
      return err;
    return verifyAsNode(step);
  }

  /// The float step as a node of a graph of its own, through the IR's
  /// verifier: operand kinds, attributes, and the result types its op
  /// infers from the operands (constants by their values) against the
  /// step's result tensors. A kernel then sees what it would in the
  /// interpreter, whose graphs passed the same checks.
  llvm::Error verifyAsNode(const FloatStep &step) const {
    const KernelOp &op = step.getOp();
    Context ctx;
    Graph graph(ctx);
    auto typeOf = [&](const PlanTensor &t, const QuantType *q) {
      const Type *element =
          q ? static_cast<const Type *>(ctx.getQuantType(
                  q->getStorageKind(), q->getExpressedKind(),
                  q->isPerAxis() ? std::optional<int64_t>(q->getAxis())
                                 : std::nullopt,
                  q->getScales(), q->getZeroPoints()))
            : ctx.getElementType(t.kind);
      return ctx.getTensorType(t.shape, element);
    };
    std::vector<Value *> operands;
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      if (step.inputs[i] < 0) {
        operands.push_back(nullptr);
        continue;
      }
      const PlanTensor &t = plan.tensors[step.inputs[i]];
      const TensorType *type = typeOf(t, op.getOperandQuantType(i));
      std::string name = "operand" + std::to_string(i);
      if (!t.constant || t.kind == ElementKind::String) {
        operands.push_back(graph.addInput(type, name));
        continue;
      }
      auto value = std::make_shared<const DenseElements>(
          t.kind, t.shape,
          std::string(t.constant->bytes(), t.constant->byteSize()));
      operands.push_back(
          graph
              .createNode(ops::Constant, {}, {{type, name}},
                          {{"value", Attribute(std::move(value))}})
              ->getResult());
    }
    std::vector<ResultSpec> results;
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] < 0) {
        results.push_back({ctx.getUnknownTensorType(), "", true});
        continue;
      }
      const PlanTensor &t = plan.tensors[step.outputs[i]];
      results.push_back(
          {typeOf(t, op.getResultQuantType(i)), "result" + std::to_string(i)});
    }
    Node *node =
        graph.createNode(op.op, operands, results, op.attributes, "step");
    for (unsigned i = 0; i < node->getNumResults(); ++i)
      if (!node->getResult(i)->isAbsent())
        graph.addOutput(node->getResult(i));
    return verifyGraph(graph);
  }

  llvm::Error verifyConv(const ConvStep &step) const {
    const Int8Conv &conv = step.getConv();
    const Int8ConvShape &c = conv.getShape();
    const Int8Epilogue &e = conv.getEpilogue();
    if (auto err = Int8Conv::checkParams(c, e))
      return err;
    bool paired = !e.pairTable.empty();
    if (auto err = checkOperands(step, 1 + e.hasResidual + paired, 1))
      return err;
    Shape out{c.batch, c.outC, c.outH(), c.outW()};
    if (auto err = expectNhwc(step.inputs[0], {c.batch, c.inC, c.inH, c.inW},
                              true, "its input"))
      return err;
    if (e.hasResidual)
      if (auto err = expectNhwc(step.inputs[1], out, true, "its residual"))
        return err;
    if (paired)
      if (auto err = expectNhwc(step.inputs.back(), out, true,
                                "its pair table's operand"))
        return err;
    return expectNhwc(step.outputs[0], out, e.outputScale != 0, "its result");
  }

  /// Tensor `id` is `rows` x `columns` in ONNX layout (its last dim the
  /// columns), int8 or f32.
  llvm::Error expectRows(int id, int64_t rows, int64_t columns, bool int8,
                         const llvm::Twine &role) const {
    const PlanTensor &t = plan.tensors[id];
    if (t.layout != PlanLayout::Onnx || t.shape.empty() ||
        t.shape.back() != columns || t.numElements() != rows * columns ||
        (int8 ? !isInt8Kind(t.kind) : t.kind != ElementKind::F32))
      return makeError(role + " '" + t.name + "' is " +
                       getElementKindName(t.kind) + shapeToString(t.shape) +
                       (t.layout == PlanLayout::Nhwc ? " nhwc" : "") +
                       "; the step needs " + llvm::Twine(rows) + " rows of " +
                       llvm::Twine(columns) + " " +
                       (int8 ? "i8 or u8" : "f32") + " in ONNX layout");
    return llvm::Error::success();
  }

  llvm::Error verifyGemm(const GemmStep &step) const {
    const Int8Conv &conv = step.getConv();
    const Int8ConvShape &c = conv.getShape();
    const Int8Epilogue &e = conv.getEpilogue();
    if (auto err = Int8Conv::checkParams(c, e))
      return err;
    if (!GemmStep::isGemmShape(c))
      return makeError("its kernel is not a 1x1 conv over rows");
    // The kernel's output bytes are u8 before an s8 result is flipped: no
    // table of stored bytes applies to them.
    if (!e.outputTable.empty() || !e.pairTable.empty())
      return makeError("a gemm step has no output or pair table");
    if (auto err = checkOperands(step, e.hasResidual ? 2 : 1, 1))
      return err;
    if (auto err = expectRows(step.inputs[0], c.inH, c.inC, true, "its input"))
      return err;
    if (e.hasResidual)
      if (auto err =
              expectRows(step.inputs[1], c.inH, c.outC, true, "its residual"))
        return err;
    return expectRows(step.outputs[0], c.inH, c.outC, e.outputScale != 0,
                      "its result");
  }

  llvm::Error verifyReformat(const ReformatStep &step) const {
    if (auto err = checkOperands(step, 1, 1))
      return err;
    const PlanTensor &from = plan.tensors[step.inputs[0]];
    const PlanTensor &to = plan.tensors[step.outputs[0]];
    unsigned size = getElementByteSize(from.kind);
    bool placed = step.rowStride != 0 || step.columnOffset != 0 ||
                  step.firstRow != 0 || step.batchRows != 0;
    if (step.shape.size() != 4 || from.shape != step.shape ||
        (!placed && to.shape != step.shape) || from.kind != to.kind ||
        from.layout == to.layout || (size != 1 && size != 4))
      return makeError("moves " + shapeToString(step.shape) + " from '" +
                       from.name + "' to '" + to.name +
                       "', which are not that shape in the two layouts with "
                       "one element kind of 1 or 4 bytes");
    if (!placed)
      return llvm::Error::success();
    // Rows of h * w elements, rowStride apart from columnOffset on, rows
    // firstRow to firstRow + C of batchRows an image, inside the result;
    // each product checked before the next uses it.
    const Shape &s = step.shape;
    int64_t batchRows = step.batchRows ? step.batchRows : s[1];
    int64_t rows, rowElements, total;
    bool fits = to.layout == PlanLayout::Onnx && step.rowStride > 0 &&
                step.columnOffset >= 0 && step.firstRow >= 0 &&
                step.batchRows >= 0 && s[1] <= batchRows - step.firstRow &&
                !llvm::MulOverflow(s[0], batchRows, rows) &&
                !llvm::MulOverflow(s[2], s[3], rowElements) &&
                rowElements <= step.rowStride - step.columnOffset &&
                !llvm::MulOverflow(rows, step.rowStride, total) &&
                total == to.numElements();
    if (!fits)
      return makeError("places the rows of " + shapeToString(s) + " " +
                       llvm::Twine(step.rowStride) + " elements apart from " +
                       llvm::Twine(step.columnOffset) + " on, from row " +
                       llvm::Twine(step.firstRow) + " of " +
                       llvm::Twine(batchRows) + " an image, in '" + to.name +
                       "', which they do not fit");
    return llvm::Error::success();
  }

  llvm::Error verifyTable(const TableStep &step) const {
    if (auto err = checkOperands(step, step.getArity(), 1))
      return err;
    const TableStep::Broadcast &b = step.getBroadcast();
    if (b.operand >= 0 &&
        (b.operand >= step.getArity() || b.inner < 1 || b.count < 1 ||
         b.inner > kMaxGeometry || b.count > kMaxGeometry))
      return makeError("broadcasts operand " + llvm::Twine(b.operand) +
                       " every " + llvm::Twine(b.inner) + " elements over " +
                       llvm::Twine(b.count));
    for (int k = 0; k < step.getArity(); ++k) {
      const PlanTensor &t = plan.tensors[step.inputs[k]];
      int64_t wanted = k == b.operand ? b.count : step.getNumElements();
      if (getElementByteSize(t.kind) != 1 || t.numElements() != wanted)
        return makeError("operand '" + t.name + "' is not " +
                         llvm::Twine(wanted) + " bytes");
    }
    const PlanTensor &y = plan.tensors[step.outputs[0]];
    if (y.numElements() != step.getNumElements() ||
        int(getElementByteSize(y.kind)) != step.getResultBytes())
      return makeError("result '" + y.name + "' is not " +
                       llvm::Twine(step.getNumElements()) + " elements of " +
                       llvm::Twine(step.getResultBytes()) + " bytes");
    return llvm::Error::success();
  }

  static llvm::Error checkWindow(const PoolStep::Window &w) {
    for (int64_t v :
         {w.batch, w.channels, w.inH, w.inW, w.outH, w.outW, w.kernelH,
          w.kernelW, w.strideH, w.strideW, w.dilationH, w.dilationW})
      if (v < 1 || v > kMaxGeometry)
        return makeError("a window parameter is out of range");
    if (w.padTop < 0 || w.padTop > kMaxGeometry || w.padLeft < 0 ||
        w.padLeft > kMaxGeometry)
      return makeError("a pad is out of range");
    return PoolStep::checkGeometry(w);
  }

  llvm::Error verifyAveragePool(const AveragePoolStep &step) const {
    if (auto err = checkOperands(step, 1, 1))
      return err;
    const AveragePoolStep::Params &p = step.getParams();
    const PoolStep::Window &w = p.window;
    if (auto err = checkWindow(w))
      return err;
    if (p.padBottom < 0 || p.padBottom > kMaxGeometry || p.padRight < 0 ||
        p.padRight > kMaxGeometry)
      return makeError("a pad is out of range");
    bool bytes = !p.values.empty();
    if (bytes && p.values.size() != 256)
      return makeError("its value table has " + llvm::Twine(p.values.size()) +
                       " entries, not 256");
    if (auto err =
            expectNhwc(step.inputs[0], {w.batch, w.channels, w.inH, w.inW},
                       bytes, "its input"))
      return err;
    // A 1 x 1 result is the same bytes in ONNX layout: [N, C] or
    // [N, C, 1, 1] (ReduceMean without or with keepdims).
    const PlanTensor &y = plan.tensors[step.outputs[0]];
    bool flat = w.outH == 1 && w.outW == 1 && y.layout == PlanLayout::Onnx &&
                !p.output && y.kind == ElementKind::F32 &&
                (y.shape == Shape{w.batch, w.channels} ||
                 y.shape == Shape{w.batch, w.channels, 1, 1});
    if (!flat)
      if (auto err =
              expectNhwc(step.outputs[0], {w.batch, w.channels, w.outH, w.outW},
                         p.output.has_value(), "its result"))
        return err;
    return p.output ? checkGrid(*p.output, y) : llvm::Error::success();
  }

  llvm::Error verifyPool(const PoolStep &step) const {
    if (auto err = checkOperands(step, 1, 1))
      return err;
    const PoolStep::Window &w = step.getWindow();
    if (auto err = checkWindow(w))
      return err;
    bool int8 = !step.isFloatPool();
    if (auto err =
            expectNhwc(step.inputs[0], {w.batch, w.channels, w.inH, w.inW},
                       int8, "its input"))
      return err;
    return expectNhwc(step.outputs[0], {w.batch, w.channels, w.outH, w.outW},
                      int8, "its result");
  }

  llvm::Error verifyChannelCopy(const ChannelCopyStep &step) const {
    if (auto err = checkIds(step, false))
      return err;
    for (const ChannelCopyStep::Piece &p : step.getPieces()) {
      if (!llvm::is_contained(step.inputs, p.from) ||
          !llvm::is_contained(step.outputs, p.to))
        return makeError("a piece copies from a tensor the step does not "
                         "read or into one it does not write");
      const PlanTensor &from = plan.tensors[p.from], &to = plan.tensors[p.to];
      if (p.grid) {
        if (from.kind != ElementKind::F32 || !isInt8Kind(to.kind) ||
            !p.table.empty())
          return makeError("a piece quantizes '" + from.name + "' into '" +
                           to.name + "', which is not f32 into int8 bytes");
        if (auto err = checkGrid(*p.grid, to))
          return err;
      }
      unsigned size = getElementByteSize(from.kind);
      int64_t rows = step.getNumTiles();
      // Each test only once the ones before it hold: no subtraction or
      // product below can overflow.
      auto fitsBoth = [&]() {
        if (size == 0 || (!p.grid && getElementByteSize(to.kind) != size) ||
            p.channels < 0 || p.fromChannel < 0 || p.toChannel < 0 ||
            !(p.table.empty() || (p.table.size() == 256 && size == 1)))
          return false;
        int64_t fromWidth, toWidth;
        if (from.layout == PlanLayout::Nhwc) {
          int64_t pixelRows;
          if (to.layout != PlanLayout::Nhwc || from.shape[0] != to.shape[0] ||
              from.shape[2] != to.shape[2] || from.shape[3] != to.shape[3] ||
              llvm::MulOverflow(from.shape[0], from.shape[2], pixelRows) ||
              rows != pixelRows)
            return false;
          fromWidth = from.shape[1];
          toWidth = to.shape[1];
        } else {
          // Rows in ONNX layout: each tensor's elements are whole rows.
          if (to.layout != PlanLayout::Onnx || rows <= 0 ||
              from.numElements() % rows || to.numElements() % rows)
            return false;
          fromWidth = from.numElements() / rows;
          toWidth = to.numElements() / rows;
        }
        return p.channels <= fromWidth - p.fromChannel &&
               p.channels <= toWidth - p.toChannel;
      };
      bool fits = fitsBoth();
      if (!fits)
        return makeError("a piece of " + llvm::Twine(p.channels) +
                         " channels from '" + from.name + "' to '" + to.name +
                         "' does not fit both tensors' pixels and channels "
                         "(or rows)");
    }
    return llvm::Error::success();
  }

  llvm::Error verifyResize(const ResizeStep &step) const {
    if (auto err = checkOperands(step, 1, 1))
      return err;
    const ResizeStep::Geometry &g = step.getGeometry();
    for (int64_t v : {g.batch, g.channels, g.inH, g.inW, g.outH, g.outW})
      if (v < 1 || v > kMaxGeometry)
        return makeError("a resize size is out of range");
    llvm::ArrayRef<int64_t> rows = step.getSourceRows();
    llvm::ArrayRef<int64_t> cols = step.getSourceCols();
    if (int64_t(rows.size()) != g.outH || int64_t(cols.size()) != g.outW ||
        llvm::any_of(rows, [&](int64_t r) { return r < 0 || r >= g.inH; }) ||
        llvm::any_of(cols, [&](int64_t c) { return c < 0 || c >= g.inW; }))
      return makeError("the resize maps do not take each output row and "
                       "column to one of the input's");
    const PlanTensor &x = plan.tensors[step.inputs[0]];
    bool int8 = isInt8Kind(x.kind);
    if (auto err =
            expectNhwc(step.inputs[0], {g.batch, g.channels, g.inH, g.inW},
                       int8, "its input"))
      return err;
    if (auto err =
            expectNhwc(step.outputs[0], {g.batch, g.channels, g.outH, g.outW},
                       int8, "its result"))
      return err;
    if (plan.tensors[step.outputs[0]].kind != x.kind)
      return makeError("resizes " + llvm::Twine(getElementKindName(x.kind)) +
                       " into another element type");
    return llvm::Error::success();
  }

  /// Operands of the result's rank, i8 or u8 in either layout, their last
  /// two dims M x K and K x N, every batch dim the result's or 1; the result
  /// in ONNX layout, f32 or int8 on the output grid; zero points of the
  /// operands' types and scales positive and finite.
  llvm::Error verifyMatMul(const MatMulStep &step) const {
    if (auto err = checkOperands(step, 2, 1))
      return err;
    const MatMulStep::Params &p = step.getParams();
    if (!MatMulStep::isGeometryInRange(p))
      return makeError("a size is out of range");
    const PlanTensor &a = plan.tensors[step.inputs[0]];
    const PlanTensor &b = plan.tensors[step.inputs[1]];
    const PlanTensor &y = plan.tensors[step.outputs[0]];
    size_t rank = y.shape.size();
    if (rank < 2 || a.shape.size() != rank || b.shape.size() != rank)
      return makeError("its operands and result are not of one rank >= 2");
    int64_t batches = 1;
    for (size_t i = 0; i + 2 < rank; ++i) {
      for (const PlanTensor *t : {&a, &b})
        if (t->shape[i] != 1 && t->shape[i] != y.shape[i])
          return makeError("'" + t->name + "' does not broadcast to '" +
                           y.name + "'");
      batches *= y.shape[i];
    }
    Shape lhs{p.m, p.k}, rhs{p.k, p.n}, result{p.m, p.n};
    auto lastTwo = [&](const PlanTensor &t) {
      return Shape(t.shape.end() - 2, t.shape.end());
    };
    if (batches != p.batches || lastTwo(a) != lhs || lastTwo(b) != rhs ||
        lastTwo(y) != result)
      return makeError("its geometry is not its tensors' " +
                       shapeToString(a.shape) + " x " + shapeToString(b.shape) +
                       " -> " + shapeToString(y.shape));
    for (const PlanTensor *t : {&a, &b}) {
      if (!isInt8Kind(t->kind))
        return makeError("operand '" + t->name + "' is not i8 or u8");
    }
    auto zeroFits = [](const PlanTensor &t, int32_t zero) {
      return t.kind == ElementKind::I8 ? zero >= -128 && zero <= 127
                                       : zero >= 0 && zero <= 255;
    };
    if (!zeroFits(a, p.lhsZero) || !zeroFits(b, p.rhsZero) ||
        !(p.lhsScale > 0) || !std::isfinite(p.lhsScale) || !(p.rhsScale > 0) ||
        !std::isfinite(p.rhsScale))
      return makeError("an operand's scale or zero point is out of range");
    if (y.layout != PlanLayout::Onnx)
      return makeError("its result '" + y.name + "' is not in ONNX layout");
    if (!p.output) {
      if (y.kind != ElementKind::F32)
        return makeError("its result '" + y.name + "' is not f32");
      return llvm::Error::success();
    }
    return checkGrid(*p.output, y);
  }

  /// A quantize grid onto int8 tensor `y`: a positive finite scale, a zero
  /// point of y's type, y's signedness and stored flip.
  llvm::Error checkGrid(const QuantizeGrid &g, const PlanTensor &y) const {
    int32_t lowest = g.isSigned ? -128 : 0, highest = g.isSigned ? 127 : 255;
    if (!(g.scale > 0) || !std::isfinite(g.scale) || g.zero < lowest ||
        g.zero > highest || g.isSigned != (y.kind == ElementKind::I8) ||
        g.flip != y.getStoredFlip())
      return makeError("its grid does not fit its result '" + y.name + "'");
    return llvm::Error::success();
  }

  llvm::Error verifyQuantize(const QuantizeStep &step) const {
    if (auto err = checkOperands(step, 1, 1))
      return err;
    const PlanTensor &x = plan.tensors[step.inputs[0]];
    const PlanTensor &y = plan.tensors[step.outputs[0]];
    const QuantizeGrid &g = step.getGrid();
    bool layoutsFit = step.isToNhwc() ? x.layout == PlanLayout::Onnx &&
                                            y.layout == PlanLayout::Nhwc
                                      : x.layout == y.layout;
    if (x.kind != ElementKind::F32 || !isInt8Kind(y.kind) ||
        x.shape != step.getShape() || y.shape != step.getShape() || !layoutsFit)
      return makeError("quantizes f32 '" + x.name + "' into int8 '" + y.name +
                       "' of shape " + shapeToString(step.getShape()) +
                       ", which they are not (or not in those layouts)");
    return checkGrid(g, y);
  }

  const Plan &plan;
  bool requirePlacement;
  std::vector<bool> referenced;
};

} // namespace

llvm::Error rt::verifyPlan(const Plan &plan, bool requirePlacement) {
  return PlanVerifier(plan, requirePlacement).verify();
}

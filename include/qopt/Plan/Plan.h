//===- Plan.h - The INT8 CPU execution plan --------------------*- C++ -*-===//
//
// A plan is a list of steps over numbered tensors, built once from a fused
// graph (lib/CodeGen) and run many times without the graph:
//
//   tensors  shape, element kind, layout, and where the bytes are: an
//            offset in one 64-byte-aligned arena (assigned by liveness, so
//            tensors that are never alive together share bytes) or a
//            constant held by the plan
//   steps    int8 conv units (Int8Conv: packed weights, the unit's epilogue,
//            a table step it feeds alone), int8 Gemm/MatMul units (the same
//            kernel over rows in ONNX layout), elementwise int8 ops as lookup
//            tables over the stored bytes (built at plan time by running the
//            reference kernel on every operand value), max pooling and channel
//            concat/split on NHWC tensors, layout changes between ONNX's NCHW
//            and the kernels' NHWC, and float steps that run the reference
//            interpreter's kernel of an op the plan has no kernel of its own
//            for (in NHWC too, for elementwise ops whose operands are NHWC)
//
// An int8 tensor in NHWC layout is stored as u8: s8 values + 128 (the
// kernels' one input kind); in ONNX layout it keeps its storage kind, as the
// interpreter's kernels expect.
//
// Steps run in order. A step splits its work into tiles (a conv's row
// groups and channel blocks, a gemm's rows), which TBB runs in parallel; tiles
// write disjoint bytes, so the result does not depend on the thread count.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_PLAN_PLAN_H
#define QOPT_PLAN_PLAN_H

#include "qopt/Interpreter/Kernel.h"
#include "qopt/Kernels/Int8Conv.h"
#include "qopt/Kernels/Int8MatMul.h"
#include "qopt/Kernels/Int8Quantize.h"

#include <array>
#include <cassert>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace qopt {
namespace rt {

enum class PlanLayout : uint8_t {
  /// The ONNX shape, row major, in the tensor's element kind.
  Onnx,
  /// A 4-D NCHW tensor stored NHWC; int8 kinds stored as u8 (s8 + 128).
  Nhwc,
};

struct PlanTensor {
  /// The graph value it holds (a value and its other-layout twin share it).
  std::string name;
  /// The element kind in the graph (i8 for an s8 tensor in either layout).
  ElementKind kind = ElementKind::Unknown;
  /// The ONNX (logical) shape.
  Shape shape;
  PlanLayout layout = PlanLayout::Onnx;
  /// Offset in the arena, or -1 for a constant.
  int64_t arenaOffset = -1;
  /// The value of a constant tensor (ONNX layout).
  std::shared_ptr<const Tensor> constant;

  int64_t numElements() const;
  size_t byteSize() const;
  /// What is XORed into each byte of an int8 value to store it: 0x80 for
  /// an s8 tensor in NHWC layout (stored as u8), else 0.
  uint8_t getStoredFlip() const {
    return layout == PlanLayout::Nhwc && kind == ElementKind::I8 ? 0x80 : 0;
  }
};

class PlanRun;

/// One step of the plan.
class PlanStep {
public:
  enum class Kind : uint8_t {
    Conv,
    Reformat,
    Float,
    Table,
    Pool,
    ChannelCopy,
    Quantize,
    Resize,
    Gemm,
    AveragePool,
    MatMul,
  };

  PlanStep(Kind kind, std::string name) : kind(kind), name(std::move(name)) {}
  virtual ~PlanStep();

  Kind getKind() const { return kind; }
  llvm::StringRef getKindName() const;
  /// The graph node the step comes from (or the tensor it converts).
  llvm::StringRef getName() const { return name; }

  /// Independent pieces of work; run() is called on disjoint ranges.
  virtual int64_t getNumTiles() const { return 1; }
  /// The same for a run, where a step's tiling depends on its tensors.
  virtual int64_t getNumTiles(const PlanRun & /*run*/) const {
    return getNumTiles();
  }
  /// Scratch bytes one caller of run() needs.
  virtual size_t getScratchBytes() const { return 0; }
  /// Multiply-accumulates the step does (0 where it does not count them).
  virtual int64_t getMacs() const { return 0; }
  virtual llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                          void *scratch) const = 0;

  /// Tensor ids read and written.
  std::vector<int> inputs, outputs;
  /// The graph op the step runs (empty for a reformat), for listings.
  std::string op;

private:
  Kind kind;
  std::string name;
};

/// An int8 conv unit: x (and the residual) NHWC u8, y NHWC u8 or float.
class ConvStep : public PlanStep {
public:
  ConvStep(std::string name, Int8Conv conv)
      : PlanStep(Kind::Conv, std::move(name)), conv(std::move(conv)) {}
  /// The shape of 2-D conv `op` on an NCHW input of `x` with OIHW weights of
  /// `w` (the interpreter's rules for group, strides, dilations, pads and
  /// auto_pad).
  static llvm::Expected<Int8ConvShape> getShape(const KernelOp &op,
                                                const Shape &x, const Shape &w);
  int64_t getNumTiles() const override { return conv.getNumTiles(); }
  size_t getScratchBytes() const override { return conv.getScratchBytes(); }
  int64_t getMacs() const override;
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  const Int8Conv &getConv() const { return conv; }
  /// Moves the kernel out, for a step that replaces this one.
  Int8Conv takeConv() { return std::move(conv); }
  static bool classof(const PlanStep *s) { return s->getKind() == Kind::Conv; }

private:
  Int8Conv conv;
};

/// An int8 Gemm/MatMul unit on row-major operands in ONNX layout:
/// y[M x N] = epilogue(x[M x K] * w), x's leading dims flattened into M. It
/// runs as a 1x1 conv over M pixels of K channels (batch 1, M x 1 pixels),
/// whose kernel takes u8: s8 operands (stored as they are in ONNX layout)
/// are flipped to u8 around it, a chunk of rows at a time in scratch.
class GemmStep : public PlanStep {
public:
  GemmStep(std::string name, Int8Conv conv)
      : PlanStep(Kind::Gemm, std::move(name)), conv(std::move(conv)) {}
  /// Whether `s` is the conv of a Gemm: 1x1 over an M x 1 image, batch 1,
  /// no stride, pad, dilation or groups.
  static bool isGemmShape(const Int8ConvShape &s);
  /// The shape of a product of M x K and K x N.
  static Int8ConvShape makeShape(int64_t m, int64_t k, int64_t n);
  /// The conv's: groups of x's rows (M) times, when they are few (a batch
  /// of one), blocks of output channels.
  int64_t getNumTiles() const override { return conv.getNumTiles(); }
  size_t getScratchBytes() const override;
  int64_t getMacs() const override;
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  const Int8Conv &getConv() const { return conv; }
  static bool classof(const PlanStep *s) { return s->getKind() == Kind::Gemm; }

private:
  Int8Conv conv;
};

/// The same 4-D tensor between the ONNX layout and NHWC (u8 for int8).
class ReformatStep : public PlanStep {
public:
  explicit ReformatStep(std::string name)
      : PlanStep(Kind::Reformat, std::move(name)) {}
  int64_t getNumTiles() const override;
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::Reformat;
  }
  /// Set by the builder: the logical NCHW shape.
  Shape shape;
  /// Into ONNX layout only: where the N * C rows of H * W elements lie in
  /// the result tensor (a part of a Concat, written in place). Row (n, c)
  /// is its row n * batchRows + firstRow + c (batchRows 0: C), rows
  /// rowStride elements apart, from element columnOffset of the row on.
  /// rowStride 0: the result is the NCHW tensor itself.
  int64_t rowStride = 0, columnOffset = 0, firstRow = 0, batchRows = 0;
};

/// An op the plan runs with the reference interpreter's kernel, on tensors
/// in ONNX layout; or, for an elementwise op whose operands all have the
/// result's shape (or one element), on NHWC tensors read as flat arrays
/// (int8 ones turned back into s8 around the kernel).
class FloatStep : public PlanStep {
public:
  FloatStep(std::string name, KernelOp op, KernelFn fn, int64_t opset);
  using PlanStep::getNumTiles;
  /// Runs of elements where its arithmetic runs without the kernel (see
  /// sameShapeElements), else 1.
  int64_t getNumTiles(const PlanRun &run) const override;
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  const KernelOp &getOp() const { return op; }
  int64_t getOpset() const { return opset; }
  static bool classof(const PlanStep *s) { return s->getKind() == Kind::Float; }

  /// The attribute (an int, 1) that puts a Relu after an Add, Sub, Mul or
  /// Div of the step (the plan pass fuse-relu-into-float-arithmetic sets
  /// it): each result element is relu of the op's f32 result, as the two
  /// steps would give it, in the same pass.
  static constexpr const char *kReluAfter = "qopt.relu_after";
  bool hasReluAfter() const { return reluAfter; }
  /// Removes kReluAfter from the op's attributes, wherever it is.
  static void removeReluAfter(KernelOp &op);

private:
  /// The elements of an Add, Sub, Mul or Div of two f32 tensors (of the
  /// result's shape and layout, or one of them a single value or, in ONNX
  /// layout, the result's trailing dims), or of a unary activation of one
  /// of the result's shape and layout, which runs as the kernel's
  /// arithmetic without its copies; 0 for any other step.
  int64_t sameShapeElements(const PlanRun &run) const;
  /// That arithmetic on elements [begin, end).
  void runSameShapeArithmetic(PlanRun &run, int64_t begin, int64_t end) const;
  /// For an Add, Sub, Mul or Div of an f32 NHWC tensor of the result's
  /// shape and an f32 [N, C, 1, 1] one (an SE block's scale), the index
  /// of the latter (0 or 1); -1 otherwise.
  int channelOperand(const PlanRun &run) const;
  /// That arithmetic on pixels [begin, end).
  void runChannelArithmetic(PlanRun &run, int channel, int64_t begin,
                            int64_t end) const;
  /// f(op), op the f32 operation of an Add, Sub, Mul or Div step (a
  /// std::plus<float>, ...: the bits of the reference's double operation
  /// rounded once); nothing for any other arithmetic.
  template <typename F> void withBinaryOp(F &&f) const;

  KernelOp op;
  KernelFn fn;
  int64_t opset;
  /// The op's arithmetic when it is one runSameShapeArithmetic knows: the
  /// reference kernel's function of each element's double, rounded once.
  enum class Arithmetic {
    None,
    Add,
    Sub,
    Mul,
    Div,
    Relu,
    LeakyRelu,
    Sigmoid,
    Tanh,
    HardSigmoid,
    HardSwish,
    Erf,
    Sqrt,
    Exp,
    LayerNorm,
    Transpose,
    Softmax,
    Gemm,
  } arithmetic;
  /// kReluAfter on an Add, Sub, Mul or Div.
  bool reluAfter = false;
  /// LeakyRelu's and HardSigmoid's attributes (LayerNormalization's
  /// epsilon in alpha, its axis in axis), as the kernels read them.
  double alpha = 0, beta = 0;
  int64_t axis = -1;
  /// For a LayerNormalization its loop takes: the rows (the dims before
  /// the axis) and each row's elements; 0 rows otherwise.
  std::pair<int64_t, int64_t> layerNormRows(const PlanRun &run) const;
  void runLayerNorm(PlanRun &run, int64_t inner, int64_t begin,
                    int64_t end) const;
  /// For a Softmax its loop takes (contiguous rows in ONNX layout): the
  /// rows and each row's elements; 0 rows otherwise.
  std::pair<int64_t, int64_t> softmaxRows(const PlanRun &run) const;
  /// For a Transpose of 4-byte elements in ONNX layout that swaps two
  /// blocks of trailing dims (perm [0..p), [q..r), [p..q)): the batch
  /// count, then the rows and columns of each batch's 2-D transpose; 0
  /// batches otherwise.
  std::array<int64_t, 3> transposeBlocks(const PlanRun &run) const;
  std::vector<int64_t> perm;
  /// For a Gemm of f32 A (not transposed) by a constant f32 B, C none or
  /// constant along the rows: its weights as gemmColumns reads them, made
  /// on first use; null otherwise.
  struct GemmWeights;
  const GemmWeights *gemmWeights(const PlanRun &run) const;
  bool gemmTransB = false;
  mutable std::once_flag gemmOnce;
  mutable std::shared_ptr<const GemmWeights> gemm;
};

/// One operand of a two-operand table read along one axis of the result as
/// it is stored: element i of the result reads element (i / inner) % count
/// of it (a per-channel scale of an NHWC tensor: inner 1, count C).
struct TableBroadcast {
  int operand = -1; ///< 0 or 1; -1: both operands have every element
  int64_t inner = 1, count = 1;
};

/// An elementwise op on one or two int8 operands as a table:
///   y[i] = table[a[i]]  or  table[a[i] * 256 + b[i]]
/// indexed by the bytes as stored (so the table absorbs the NHWC +128) and
/// holding the result as stored (1 byte, or 4 for a float result). The
/// operands have the result's elements, or one of two is read along one
/// axis (Broadcast), in ONNX layout as it is.
class TableStep : public PlanStep {
public:
  using Broadcast = TableBroadcast;
  TableStep(std::string name, int arity, int resultBytes,
            std::vector<uint8_t> table, int64_t elements,
            Broadcast broadcast = Broadcast())
      : PlanStep(Kind::Table, std::move(name)), arity(arity),
        resultBytes(resultBytes), table(std::move(table)), elements(elements),
        broadcast(broadcast) {
    assert((arity == 1 || (arity == 2 && resultBytes == 1)) &&
           this->table.size() == (size_t(1) << (8 * arity)) * resultBytes &&
           "a table of 256^arity results");
    assert((broadcast.operand < 0 || arity == 2) &&
           "a broadcast operand of a two-operand table");
  }
  int64_t getNumTiles() const override;
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  int getArity() const { return arity; }
  int getResultBytes() const { return resultBytes; }
  llvm::ArrayRef<uint8_t> getTable() const { return table; }
  int64_t getNumElements() const { return elements; }
  const Broadcast &getBroadcast() const { return broadcast; }
  /// A two-operand table's arithmetic, when the builder found it gives
  /// every entry: a conv that takes the table in its epilogue computes it
  /// there instead of looking it up. Not part of a plan file.
  const std::optional<RequantizedAdd> &getArithmetic() const {
    return arithmetic;
  }
  void setArithmetic(const RequantizedAdd &add) {
    assert(arity == 2 && add.reproduces(table) &&
           "the arithmetic of this two-operand table");
    arithmetic = add;
  }
  static bool classof(const PlanStep *s) { return s->getKind() == Kind::Table; }

private:
  int arity, resultBytes;
  std::vector<uint8_t> table;
  int64_t elements;
  Broadcast broadcast;
  std::optional<RequantizedAdd> arithmetic;
};

/// MaxPool over an NHWC tensor (u8 as stored, or f32); the window skips
/// padding, as ONNX's MaxPool does.
class PoolStep : public PlanStep {
public:
  struct Window {
    int64_t batch, channels, inH, inW, outH, outW;
    int64_t kernelH, kernelW, strideH, strideW, dilationH, dilationW;
    int64_t padTop, padLeft;
  };
  PoolStep(std::string name, Window window, bool isFloat)
      : PlanStep(Kind::Pool, std::move(name)), window(window),
        isFloat(isFloat) {}
  /// The window of MaxPool `op` on an NCHW input of `inShape` (the
  /// interpreter's rules for auto_pad, pads and ceil_mode), checked against
  /// the result shape `outShape`; the pads after the input go to `padEnd`
  /// when given.
  static llvm::Expected<Window> getWindow(const KernelOp &op,
                                          const Shape &inShape,
                                          const Shape &outShape,
                                          Shape *padEnd = nullptr);
  /// Whether every window of `w` (each parameter already in range) starts
  /// before the input ends and ends after it begins: none lies wholly in
  /// the padding, as ONNX Runtime requires (pads smaller than the window,
  /// no window starting in the end padding). getWindow and the plan
  /// verifier both check it.
  static llvm::Error checkGeometry(const Window &w);
  int64_t getNumTiles() const override { return window.batch * window.outH; }
  const Window &getWindow() const { return window; }
  bool isFloatPool() const { return isFloat; }
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  static bool classof(const PlanStep *s) { return s->getKind() == Kind::Pool; }

private:
  Window window;
  bool isFloat;
};

/// Average pooling of an NHWC tensor, int8 (q.pool's average and global
/// average modes) or f32 (AveragePool, GlobalAveragePool): each result is
/// the mean of the window's values (f32, or each stored byte's value from
/// `values`), summed in double in the reference's tap order and divided as
/// the reference divides, rounded to f32, then quantized onto `output` as
/// q.quantize does, or kept as f32. So the bytes are the reference's.
class AveragePoolStep : public PlanStep {
public:
  struct Params {
    PoolStep::Window window;
    /// The pads after the input (count_include_pad counts them).
    int64_t padBottom = 0, padRight = 0;
    bool countIncludePad = false;
    /// The value of each stored input byte (256), or none for f32 input.
    std::vector<float> values;
    /// The result's grid, or none for an f32 result.
    std::optional<QuantizeGrid> output;
  };
  AveragePoolStep(std::string name, Isa isa, Params params)
      : PlanStep(Kind::AveragePool, std::move(name)), isa(isa),
        params(std::move(params)) {}
  int64_t getNumTiles() const override {
    return params.window.batch * params.window.outH;
  }
  size_t getScratchBytes() const override {
    return size_t(params.window.channels) * (sizeof(double) + sizeof(float));
  }
  const Params &getParams() const { return params; }
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::AveragePool;
  }

private:
  Isa isa;
  Params params;
};

/// An int8 MatMul of two activations (attention's Q K^T and softmax V):
/// for each of `batches` products (the result's leading dims, each
/// operand's size-1 dims broadcast as numpy does), an M x K by K x N
/// product of the stored values minus their zero points, exact in s32
/// (qopt/Kernels/Int8MatMul.h), times lhs scale * rhs scale in double, rounded
/// to f32, then quantized onto `output` as q.quantize does or kept as f32. The
/// operands are i8 or u8 of the result's rank in either layout; the result is
/// in ONNX layout.
class MatMulStep : public PlanStep {
public:
  struct Params {
    int64_t batches = 1, m = 1, k = 1, n = 1;
    float lhsScale = 1, rhsScale = 1;
    int32_t lhsZero = 0, rhsZero = 0;
    /// The result's grid, or none for an f32 result.
    std::optional<QuantizeGrid> output;
  };
  /// Rows of one product a tile computes.
  static constexpr int64_t kRowsPerTile = 32;
  /// Largest K: the s32 sums cannot overflow (255 * 255 * K < 2^31).
  static constexpr int64_t kMaxDepth = int64_t(1) << 15;
  /// Whether each size is at least 1, K at most kMaxDepth, and the rest
  /// such that no size computed from them overflows (the verifier checks
  /// them against the tensors).
  static bool isGeometryInRange(const Params &p) {
    constexpr int64_t kMaxSize = int64_t(1) << 31;
    return p.batches >= 1 && p.m >= 1 && p.k >= 1 && p.n >= 1 &&
           p.batches <= kMaxSize && p.m <= kMaxSize && p.k <= kMaxDepth &&
           p.n <= kMaxSize;
  }

  MatMulStep(std::string name, Isa isa, Params params)
      : PlanStep(Kind::MatMul, std::move(name)), isa(isa), params(params),
        kernel(isa, params.k, params.n) {}
  const Params &getParams() const { return params; }
  int64_t getNumTiles() const override {
    return params.batches * ((params.m + kRowsPerTile - 1) / kRowsPerTile);
  }
  size_t getScratchBytes() const override;
  int64_t getMacs() const override {
    return params.batches * params.m * params.k * params.n;
  }
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::MatMul;
  }

private:
  Isa isa;
  Params params;
  Int8MatMul kernel;
};

/// Nearest-neighbour Resize (or Upsample) over NHWC tensors: output pixel
/// (oh, ow) of each image is input pixel (sourceRows[oh], sourceCols[ow]),
/// all its channels copied. The builder reads both maps off the reference
/// kernel, so every coordinate and rounding mode it runs is the same here.
class ResizeStep : public PlanStep {
public:
  struct Geometry {
    int64_t batch, channels, inH, inW, outH, outW;
  };
  ResizeStep(std::string name, Geometry geometry,
             std::vector<int64_t> sourceRows, std::vector<int64_t> sourceCols)
      : PlanStep(Kind::Resize, std::move(name)), geometry(geometry),
        sourceRows(std::move(sourceRows)), sourceCols(std::move(sourceCols)) {}
  /// Output rows (batch * outH).
  int64_t getNumTiles() const override {
    return geometry.batch * geometry.outH;
  }
  const Geometry &getGeometry() const { return geometry; }
  llvm::ArrayRef<int64_t> getSourceRows() const { return sourceRows; }
  llvm::ArrayRef<int64_t> getSourceCols() const { return sourceCols; }
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::Resize;
  }

private:
  Geometry geometry;
  std::vector<int64_t> sourceRows, sourceCols;
};

/// Concat or Split along the channels of NHWC tensors: each piece copies
/// `channels` channels of every pixel from one tensor to another, through
/// a 256-entry table of stored bytes where it requantizes (q.concat), or
/// onto a grid from f32. Tensors in ONNX layout (q.concat along any axis) are
/// `rows` rows, each index before the axis one, spanning the elements from the
/// axis on; a piece's channels are then elements of every row.
class ChannelCopyStep : public PlanStep {
public:
  struct Piece {
    int from, to; ///< tensor ids
    int64_t fromChannel, toChannel, channels;
    std::vector<uint8_t> table; ///< empty: a copy
    /// Set: f32 channels quantized onto int8 bytes (Int8Quantize.h), the
    /// quantize step that read a copy's result done in the copy. No table.
    std::optional<QuantizeGrid> grid;
  };
  ChannelCopyStep(std::string name, std::vector<Piece> pieces, int64_t rows);
  ~ChannelCopyStep() override;
  /// Rows of pixels (batch * height), or rows in ONNX layout.
  int64_t getNumTiles() const override { return rows; }
  llvm::ArrayRef<Piece> getPieces() const { return pieces; }
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::ChannelCopy;
  }

private:
  std::vector<Piece> pieces;
  int64_t rows;
  /// Many one-channel pieces (a Gather of channels, a channel shuffle) as
  /// per-result gathers with index lists, built once from the pieces
  /// (DataSteps.cpp); empty when they are not that.
  struct Gather;
  std::vector<Gather> gathers;
};

/// A per-tensor quantize of an f32 tensor onto int8 bytes (Int8Quantize.h):
/// element by element in one layout, or from an NCHW f32 tensor straight
/// into NHWC (one row of each channel quantized, then interleaved).
class QuantizeStep : public PlanStep {
public:
  /// `shape`: the logical shape; `toNhwc`: an NCHW input written NHWC.
  QuantizeStep(std::string name, Isa isa, QuantizeGrid grid, Shape shape,
               bool toNhwc)
      : PlanStep(Kind::Quantize, std::move(name)), isa(isa), grid(grid),
        shape(std::move(shape)), toNhwc(toNhwc) {
    assert((!toNhwc || this->shape.size() == 4) && "NCHW -> NHWC is 4-D");
    for (int64_t d : this->shape)
      elements *= d;
  }
  /// Rows of pixels (batch * height) to NHWC, else runs of elements.
  int64_t getNumTiles() const override;
  llvm::Error run(PlanRun &run, int64_t tileBegin, int64_t tileEnd,
                  void *scratch) const override;
  const QuantizeGrid &getGrid() const { return grid; }
  const Shape &getShape() const { return shape; }
  bool isToNhwc() const { return toNhwc; }
  static bool classof(const PlanStep *s) {
    return s->getKind() == Kind::Quantize;
  }

private:
  Isa isa;
  QuantizeGrid grid;
  Shape shape;
  bool toNhwc;
  int64_t elements = 1;
};

struct PlanRunOptions {
  PlanRunOptions() = default;
  explicit PlanRunOptions(unsigned threads) : threads(threads) {}
  /// Worker threads; 0 = every core.
  unsigned threads = 0;
  /// The threads a run with these options uses: `threads`, or for 0 every
  /// core this process may run on.
  unsigned getThreadCount() const;
  /// Called before and after each step (e.g. to feed a step the
  /// reference's inputs and compare its outputs, or to time it).
  std::function<void(const PlanStep &, PlanRun &)> beforeStep, afterStep;
};

class Plan {
public:
  Plan();
  ~Plan();
  Plan(const Plan &) = delete;
  Plan &operator=(const Plan &) = delete;

  /// One line per step: kind, name, the tensors it reads and writes with
  /// their layouts, and MACs for int8 convs; then the arena size.
  void print(llvm::raw_ostream &os) const;

  /// Whether every tensor a step or the caller reads or writes has its
  /// place in the arena or is a constant (assign-arena ran).
  bool isPlaced() const;

  /// Runs with inputs by graph-input name; returns the outputs in order.
  /// The arena and scratch come from the last run that finished, when it
  /// had enough: a run allocates nothing else but its outputs.
  llvm::Expected<std::vector<Tensor>>
  run(const std::map<std::string, Tensor> &inputs,
      const PlanRunOptions &options = {}) const;

  std::vector<PlanTensor> tensors;
  std::vector<std::unique_ptr<PlanStep>> steps;
  /// Graph inputs and outputs (ONNX layout), in order.
  std::vector<int> inputs, outputs;
  /// Arena bytes (64-byte aligned) a run needs.
  size_t arenaBytes = 0;
  /// The instruction set of the int8 kernels.
  Isa isa = Isa::Scalar;
  /// Owns the quantized types the float steps' KernelOps point to.
  Context types;

private:
  struct RunBuffers;
  /// A finished run's buffers, for the next run to take.
  mutable std::mutex spareLock;
  mutable std::unique_ptr<RunBuffers> spare;
};

/// Checks that every step's tensors are what its kernel assumes (ids in
/// range, layouts, kinds, shapes against its parameters, arena places inside
/// the arena), so that running the plan touches no byte outside its
/// tensors; an error names the step or tensor and the reason. Without
/// `requirePlacement`, tensors without an arena place (offset -1) pass: a
/// plan before the assign-arena plan pass.
llvm::Error verifyPlan(const Plan &plan, bool requirePlacement = true);

/// Checks that a verified plan's memory (arena, scratch, constants) and
/// work (each step's MACs or window taps) fit the process's
/// ResourceLimits; verifyPlan ends with it. The error names the step.
llvm::Error checkPlanBudget(const Plan &plan);

/// Refuses a plan whose float steps (reference kernels) do more of its
/// multiply-accumulates than its int8 steps: an fp32 model, or one quantized
/// around a few ops only, which the plan would run many times slower than a
/// float runtime. The error names the largest float step and the flag that
/// builds it anyway (PlanBuildOptions::allowFloatPlan).
llvm::Error checkMostlyInt8(const Plan &plan);

/// What a step sees of one run: the arena and the tensors' bytes.
class PlanRun {
public:
  PlanRun(const Plan &plan, char *arena) : plan(plan), arena(arena) {}
  const Plan &getPlan() const { return plan; }
  const PlanTensor &tensor(int id) const { return plan.tensors[id]; }
  /// The bytes of tensor `id`: its constant or its place in the arena.
  const char *read(int id) const;
  char *write(int id) const;
  /// Tensor `id` as a Tensor (a copy, for the float steps).
  Tensor copyOut(int id) const;
  /// The value of tensor `id` in ONNX layout and kind, whatever its layout.
  Tensor readValue(int id) const;
  /// Stores `value` (ONNX layout, the tensor's kind and shape) into tensor
  /// `id` in its layout; false when kind or shape differ.
  bool writeValue(int id, const Tensor &value) const;

private:
  const Plan &plan;
  char *arena;
};

} // namespace rt
} // namespace qopt

#endif // QOPT_PLAN_PLAN_H

//===- QuantMath.h - Quantization arithmetic for all layers -----*- C++ -*-===//
//
// The one implementation of the quantization math: the reference interpreter,
// the passes (weight folding, requantize fusion) and the op table use it, so a
// folded constant is bit-identical to what the interpreter computes at run
// time. Semantics are ONNX's, computed in float32 like the ONNX reference and
// ONNX Runtime:
//
//   Q(x)  = saturate(round_half_to_even(x / s) + zp)     (NaN -> 0)
//   DQ(q) = (q - zp) * s
//   RQ(q) = Q_out(DQ_in(q))                               (the fake-quant
//   chain)
//
// Also here: the gemmlowp-style fixed-point multiplier used by integer
// requantization, typed dense-constant builders, and the layout transforms
// (transpose, reshape) of constants together with the remapping of a per-axis
// quantization axis through them.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_IR_QUANTMATH_H
#define QOPT_IR_QUANTMATH_H

#include "qopt/IR/Attributes.h"
#include "qopt/IR/Types.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace qopt {
namespace quant {

//===----------------------------------------------------------------------===//
// One value
//===----------------------------------------------------------------------===//

/// Clamps an already rounded value to the range of the integer kind
/// `storage`; NaN becomes 0. `storage` must be an integer kind.
int64_t saturateToStorage(double v, ElementKind storage);

/// Q(x) = saturate(nearbyintf(x / scale) + zeroPoint): float32 division,
/// round half to even, saturation to `storage` (an integer kind), NaN -> 0.
int64_t quantizeValue(float x, float scale, int64_t zeroPoint,
                      ElementKind storage);

/// DQ(q) = float(q - zeroPoint) * scale in float32.
float dequantizeValue(int64_t q, float scale, int64_t zeroPoint);

/// Q_out(DQ_in(q)) with a float32 intermediate, bit-identical to the chain of
/// dequantizeValue and quantizeValue.
int64_t requantizeValue(int64_t q, float inScale, int64_t inZp, float outScale,
                        int64_t outZp, ElementKind outStorage);

/// saturate(nearbyintf(x * multiplier) + zeroPoint): the output step of the
/// QLinear* operators, whose multiplier is (s_a * s_b) / s_y in float32.
int64_t quantizeWithMultiplier(float x, float multiplier, int64_t zeroPoint,
                               ElementKind storage);

/// Scale and zero point of `channel` of `q`; the channel is ignored for a
/// per-tensor type.
float getChannelScale(const QuantType *q, int64_t channel);
int64_t getChannelZeroPoint(const QuantType *q, int64_t channel);

/// The same with the parameters of `channel` of `q` (ignored when per
/// tensor). `saturate` is ONNX QuantizeLinear's attribute: it only matters
/// for float8 storage (integers always saturate, float4 has no infinity).
int64_t quantizeValue(float x, const QuantType *q, int64_t channel = 0,
                      bool saturate = true);
float dequantizeValue(int64_t stored, const QuantType *q, int64_t channel = 0);
/// Q_to(DQ_from(stored)) as the fake-quant chain computes it: the
/// intermediate is a tensor of `from`'s expressed type, so it is rounded to
/// f16 / bf16 when that is the expressed type.
int64_t requantizeValue(int64_t stored, const QuantType *from,
                        int64_t fromChannel, const QuantType *to,
                        int64_t toChannel);

/// Rounds a float32 value to `kind` and back (f16, bf16; other kinds keep
/// it), as storing it into a tensor of that kind does.
float roundToKind(float v, ElementKind kind);

/// Channel of a flat row-major index along `axis` of `dims`; always 0 for a
/// negative axis (per tensor).
class ChannelIndexer {
public:
  /// Along `axis` (none when negative), in blocks of `blockSize` when it
  /// is positive.
  ChannelIndexer(llvm::ArrayRef<int64_t> dims, int64_t axis,
                 int64_t blockSize = 0);
  /// Per-axis along q's axis, per tensor otherwise; block-wise: the index
  /// of the element's parameters in q's scale tensor (QuantType::isBlocked).
  ChannelIndexer(llvm::ArrayRef<int64_t> dims, const QuantType *q);
  int64_t operator()(int64_t flatIndex) const {
    if (!block)
      return (flatIndex / inner) % channels;
    int64_t along = (flatIndex / inner) % channels;
    int64_t outer = flatIndex / (inner * channels);
    return (outer * blocks + along / block) * inner + flatIndex % inner;
  }

private:
  int64_t inner = 1;
  int64_t channels = 1;
  /// Block-wise: the block size and the blocks along the axis.
  int64_t block = 0;
  int64_t blocks = 1;
};

/// ceil(size / block) for size >= 0 and block >= 1, without overflow (a
/// block_size of INT64_MAX is valid input).
inline int64_t blocksAlong(int64_t size, int64_t block) {
  return size / block + (size % block != 0);
}

/// The shape of a block-wise type's scale tensor for a tensor of `dims`:
/// the axis's size divided by the block size, rounded up.
std::vector<int64_t> blockedScaleDims(llvm::ArrayRef<int64_t> dims,
                                      const QuantType *q);

/// Checks that the parameters of `q` fit a tensor of `dims`: a per-axis type
/// needs its axis within the rank and one (scale, zero point) per element of
/// that dimension.
llvm::Error checkQuantTypeFits(const QuantType *q,
                               llvm::ArrayRef<int64_t> dims);

//===----------------------------------------------------------------------===//
// Dense constants
//===----------------------------------------------------------------------===//
//
// Results keep the dims and the name of their input (the name only labels
// resources in the text form). Errors: a float input that is not f32, f16,
// bf16 or f64; stored data whose kind is not q's storage kind; a per-axis
// type that does not fit the dims (checkQuantTypeFits).

/// Q of every element with the parameters of its channel along q's axis;
/// the result has q's storage kind (`saturate` as quantizeValue's).
llvm::Expected<DenseElementsRef> quantizeDense(const DenseElements &floats,
                                               const QuantType *q,
                                               bool saturate = true);
/// DQ of every element, stored as `floatKind` (f32, f16, bf16 or f64): the
/// float32 result is rounded once to that kind, as the interpreter stores it.
llvm::Expected<DenseElementsRef> dequantizeDense(const DenseElements &stored,
                                                 const QuantType *q,
                                                 ElementKind floatKind);
/// Q_to(DQ_from(x)) of every element (see requantizeValue), stored as to's
/// storage kind.
llvm::Expected<DenseElementsRef> requantizeDense(const DenseElements &stored,
                                                 const QuantType *from,
                                                 const QuantType *to);

//===----------------------------------------------------------------------===//
// Fixed-point requantization (integer-only kernels)
//===----------------------------------------------------------------------===//

/// A real multiplier as multiplier * 2^(shift - 31) with multiplier in
/// [2^30, 2^31): shift > 0 is a left shift (real >= 1), shift <= 0 a right
/// shift (real < 1). 0 and reals below 2^-63 give {0, 0}.
struct FixedPointMultiplier {
  int32_t multiplier;
  int32_t shift;
};

/// Precondition (asserted): realMultiplier is finite, >= 0 and < 2^31.
FixedPointMultiplier computeFixedPointMultiplier(double realMultiplier);

/// acc * real for the multiplier above, gemmlowp style: a saturating
/// rounding doubling high multiply (round(acc * multiplier / 2^31), ties
/// toward +infinity) and then a rounding right shift by -shift (ties away
/// from zero); a left shift (shift > 0) is applied exactly, before the
/// multiply, in 64 bits. The result saturates to int32 and is within 1 of
/// round(acc * real) whenever that fits in int32 (see QuantMathTest).
int32_t applyFixedPointMultiplier(int32_t acc, FixedPointMultiplier m);

//===----------------------------------------------------------------------===//
// Typed dense-constant builders
//===----------------------------------------------------------------------===//
//
// Builder misuse is a programming error checked with assert: an element count
// that differs from the product of `dims`, a negative dim, a kind that is not
// numeric (string, unknown), or for integer kinds a value that is not an
// integer in the kind's range. Release builds stay well defined: missing
// elements are 0, extra ones are ignored, out-of-range integers saturate and
// fractions truncate toward zero (Tensor::setDouble's conversion).

/// Elements of any numeric kind from doubles; floats round once to nearest
/// even (f16/bf16 directly from the double).
DenseElementsRef makeDense(ElementKind kind, llvm::ArrayRef<int64_t> dims,
                           llvm::ArrayRef<double> values);
DenseElementsRef makeDenseF32(llvm::ArrayRef<int64_t> dims,
                              llvm::ArrayRef<float> values);
/// Integer (or bool) elements; every value must fit `kind`.
DenseElementsRef makeDenseInt(ElementKind kind, llvm::ArrayRef<int64_t> dims,
                              llvm::ArrayRef<int64_t> values);

//===----------------------------------------------------------------------===//
// Layout transforms and per-axis remapping
//===----------------------------------------------------------------------===//

/// Checks that `perm` is a permutation of [0, rank).
llvm::Error checkPermutation(llvm::ArrayRef<int64_t> perm, int64_t rank);

/// Where axis `axis` of the input ends up after Transpose(perm): its position
/// in perm. A negative axis counts from the end. Errors: perm is not a
/// permutation, or axis is out of range. An empty perm (ONNX's default
/// reversal) must be expanded by the caller.
llvm::Expected<int64_t> remapAxisThroughTranspose(llvm::ArrayRef<int64_t> perm,
                                                  int64_t axis);

/// Where axis `axis` of `inShape` ends up after a reshape to `outShape`
/// (actual dims, no 0 / -1 placeholders). The axis survives only when its
/// dimension stays intact: the product of the dims before it is the same in
/// both shapes and the output has a dimension of exactly its size there.
/// Otherwise the error says why, naming the sizes, e.g. "axis 0 of size 64
/// is merged with axis 1 of size 27 by the reshape from 64x27 to 1728".
/// Shapes must be static and hold the same number of elements. A negative
/// axis counts from the end.
llvm::Expected<int64_t>
remapAxisThroughReshape(llvm::ArrayRef<int64_t> inShape,
                        llvm::ArrayRef<int64_t> outShape, int64_t axis);

/// The elements transposed by `perm` (dims[i] of the result is
/// dims[perm[i]]). Any kind, strings included. Precondition (asserted): perm
/// is a permutation of the rank (see checkPermutation); release builds return
/// nullptr for an invalid perm.
DenseElementsRef transposeDense(const DenseElements &elements,
                                llvm::ArrayRef<int64_t> perm);

/// The same elements with other dims. Precondition (asserted): newDims are
/// non-negative and hold the same number of elements; release builds return
/// nullptr otherwise.
DenseElementsRef reshapeDense(const DenseElements &elements,
                              llvm::ArrayRef<int64_t> newDims);

/// `q` with its quantized axis moved to `newAxis` (scales and zero points
/// unchanged); a per-tensor type is returned unchanged.
const QuantType *withAxis(Context &ctx, const QuantType *q, int64_t newAxis);

//===----------------------------------------------------------------------===//
// Grid relations (QuantGrid.cpp)
//===----------------------------------------------------------------------===//
//
// Passes that move, merge or change quantization grids ask these whether a
// rewrite is exact and, when it is not, what it costs. Both enumerate every
// stored value of `from` (at most 65,536 per channel) through the fake-quant
// chain, so the answer is exactly what the interpreter computes.

/// True when Q_to(DQ_from(q)) dequantizes to DQ_from(q) for every stored
/// value q of every channel: putting values of `from` onto `to` loses
/// nothing (`to` contains `from`). Per-axis types must have the same axis
/// and channel count, or one of them must be per tensor.
bool gridContains(const QuantType *to, const QuantType *from);

/// The largest |DQ_to(Q_to(DQ_from(q))) - DQ_from(q)| over every stored
/// value q, in units of from's scale (LSB of the old grid): what moving
/// values stored on `from` onto `to` costs, clipping included. 0 when
/// gridContains(to, from).
double maxRegridErrorLsb(const QuantType *from, const QuantType *to);

/// The float range [lo, hi] a grid represents (per channel: the union).
std::pair<double, double> representableRange(const QuantType *q);

/// "i8 scale 0.031 zp 0" (per axis: "i8 scales {0.1,0.2} zps {0,0} axis 1").
std::string describeParams(const QuantType *q);

/// Relative tolerance of the bias rule: exporters compute the bias scale as
/// x_scale * w_scale in float32 or in double, which differ in the last bit.
constexpr double kBiasScaleTolerance = 1e-5;

/// The i32 bias rule of integer conv/GEMM kernels, which add the bias to
/// the accumulator as it is: `bias` is i32 with zero point 0 and scale
/// x_scale * w_scale for every output channel (per tensor, or per axis with
/// one scale per channel of a per-axis `w`). Returns what breaks it, or an
/// empty string.
std::string checkBiasGrid(const QuantType *bias, const QuantType *x,
                          const QuantType *w);

/// "64x27" (the scalar shape prints as "scalar").
std::string shapeString(llvm::ArrayRef<int64_t> dims);

} // namespace quant
} // namespace qopt

#endif // QOPT_IR_QUANTMATH_H

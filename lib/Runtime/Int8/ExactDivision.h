//===- ExactDivision.h - divps's quotient without the divider ---*- C++ -*-===//
//
// Private to lib/Runtime/Int8, for the ISA files (GemmKernels.h says why
// they include nothing else), which define the lane operations `V`:
//
//   F, set1, mul, div          float vectors, splat, IEEE operations
//   fma(a, b, c), fnma         a * b + c and c - a * b, each rounded once
//   anyNotFinite(a)            whether a lane is infinite or NaN
//
// y / d rounded once, as divps gives it, from d's reciprocal r = RN(1/d)
// by two corrections with exact remainders: q0 = RN(y * r) is within 2 ulp
// of y / d; q1 = RN(q0 + (y - d * q0) * r) is within 1; and then
// (Markstein's theorem: r within half an ulp of 1/d, q1 faithful, the
// remainder exact by FMA) q2 = RN(q1 + (y - d * q1) * r) is RN(y / d). Six
// cheap operations in place of a divide, whose unit takes 5-16 cycles a
// vector.
//
// The theorem wants no overflow and no underflow. A vector with a lane
// whose q2 is infinite or NaN (an infinite or NaN y, a quotient at the top
// of the range, where q1 may round to infinity) is divided instead. The
// divisor stays within [2^-64, 2^64], so that a remainder underflows only
// for a y below about 2^-100, whose quotient (below 2^-36) rounds to the
// integer 0 either way; the callers round every quotient to an integer.
// Checked against divps on 192 million quotients, most within a few ulp of
// a tie k + 1/2, over 3,000 divisors.
//
//===----------------------------------------------------------------------===//

#ifndef QOPT_LIB_RUNTIME_INT8_EXACTDIVISION_H
#define QOPT_LIB_RUNTIME_INT8_EXACTDIVISION_H

namespace {

/// A divisor's lanes and its reciprocal's, and whether the quotient may be
/// had from the reciprocal.
template <typename V> struct Divisor {
  typename V::F value, reciprocal;
  bool byReciprocal;

  explicit Divisor(float d)
      : value(V::set1(d)), reciprocal(V::set1(1.0f / d)),
        byReciprocal(inRange(d)) {}
  static bool inRange(float d) {
    float magnitude = d < 0 ? -d : d;
    return magnitude >= 0x1p-64f && magnitude <= 0x1p64f;
  }
};

/// y / d as divps rounds it.
template <typename V>
__attribute__((always_inline)) inline typename V::F
dividedBy(typename V::F y, const Divisor<V> &d) {
  if (!d.byReciprocal)
    return V::div(y, d.value);
  typename V::F q0 = V::mul(y, d.reciprocal);
  typename V::F q1 = V::fma(V::fnma(q0, d.value, y), d.reciprocal, q0);
  typename V::F q2 = V::fma(V::fnma(q1, d.value, y), d.reciprocal, q1);
  if (__builtin_expect(V::anyNotFinite(q2), 0))
    return V::div(y, d.value);
  return q2;
}

} // namespace

#endif // QOPT_LIB_RUNTIME_INT8_EXACTDIVISION_H

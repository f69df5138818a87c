//===- ElementwiseCast.cpp - Reference kernels: Cast and CastLike ---------===//
//
// Conversions between element kinds as ONNX (and numpy) define them,
// including to and from strings: floats print in numpy's shortest form and
// strings parse as integers or floats of the target kind.
//
//===----------------------------------------------------------------------===//

#include "ElementwiseUtil.h"
#include "qopt/IR/OpNames.h"
#include "qopt/Support/FloatFormat.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

using namespace qopt;
using namespace qopt::interp;
using namespace qopt::interp::elementwise;

using llvm::Error;

namespace {

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// Whether the decimal `text` reads back as v in the float kind k.
bool readsBackAs(const char *text, double v, ElementKind k) {
  switch (k) {
  case ElementKind::F32:
    return std::strtof(text, nullptr) == static_cast<float>(v);
  case ElementKind::F16:
    return halfToFloat(
               floatToHalf(roundToFloatOdd(std::strtod(text, nullptr)))) == v;
  case ElementKind::BF16:
    return bfloat16ToFloat(floatToBFloat16(
               roundToFloatOdd(std::strtod(text, nullptr)))) == v;
  default:
    return std::strtod(text, nullptr) == v;
  }
}

/// numpy's str() of a float scalar of kind k: the shortest digits that read
/// back, positional for 1e-4 <= |v| < 1e16 ("0.5", "3.0"), else scientific
/// ("1e-05", "1.5e+16"); "nan", "inf", "-inf".
std::string formatFloatLikeNumpy(double v, ElementKind k) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char buf[64];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof(buf), "%.*e", p - 1, v);
    if (readsBackAs(buf, v, k))
      break;
  }
  // buf is "[-]d[.ddd]e[+-]XX".
  std::string text = buf;
  bool neg = text[0] == '-';
  size_t ePos = text.find('e');
  std::string digits;
  for (size_t i = neg ? 1 : 0; i < ePos; ++i)
    if (text[i] != '.')
      digits += text[i];
  int exp = std::atoi(text.c_str() + ePos + 1);
  while (digits.size() > 1 && digits.back() == '0')
    digits.pop_back();
  std::string out = neg ? "-" : "";
  double a = std::fabs(v);
  if (a == 0 || (a >= 1e-4 && a < 1e16)) {
    if (a == 0) {
      out += "0.0";
    } else if (exp >= 0) {
      size_t intLen = static_cast<size_t>(exp) + 1;
      std::string ip = digits.substr(0, std::min(intLen, digits.size()));
      ip.resize(intLen, '0');
      std::string fp = digits.size() > intLen ? digits.substr(intLen) : "0";
      out += ip + "." + fp;
    } else {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1)
    out += "." + digits.substr(1);
  int ae = std::abs(exp);
  out += std::string("e") + (exp < 0 ? "-" : "+") + (ae < 10 ? "0" : "") +
         std::to_string(ae);
  return out;
}

std::string elementToString(const Tensor &t, int64_t i) {
  ElementKind k = t.kind();
  if (isFloatKind(k))
    return formatFloatLikeNumpy(t.getDouble(i), k);
  if (k == ElementKind::Bool)
    return t.getInt(i) ? "True" : "False";
  if (k == ElementKind::U64)
    return std::to_string(static_cast<uint64_t>(t.getInt(i)));
  return std::to_string(t.getInt(i));
}

/// Parses a string element into element i of `out` (a numeric or bool
/// tensor). Accepts plain and scientific notation, "inf", "-INF", "NaN";
/// integers parse exactly, other text is truncated like float-to-int.
bool parseStringElement(const std::string &s, Tensor &out, int64_t i) {
  std::string text = llvm::StringRef(s).trim().str();
  if (text.empty())
    return false;
  const char *begin = text.c_str();
  const char *end = begin + text.size();
  char *stop = nullptr;
  ElementKind k = out.kind();
  if (k == ElementKind::Bool) {
    std::string lower = llvm::StringRef(text).lower();
    if (lower == "true" || lower == "false") {
      out.setInt(i, lower == "true");
      return true;
    }
  }
  if (isIntegerKind(k) || k == ElementKind::Bool) {
    errno = 0;
    if (k == ElementKind::U64 && text[0] != '-') {
      unsigned long long u = std::strtoull(begin, &stop, 10);
      if (stop == end && errno == 0) {
        out.setInt(i, static_cast<int64_t>(u));
        return true;
      }
    } else {
      long long v = std::strtoll(begin, &stop, 10);
      if (stop == end && errno == 0) {
        out.setInt(i, v);
        return true;
      }
    }
  }
  if (k == ElementKind::F32) {
    float f = std::strtof(begin, &stop);
    if (stop != end)
      return false;
    out.setDouble(i, f);
    return true;
  }
  double d = std::strtod(begin, &stop);
  if (stop != end)
    return false;
  out.setDouble(i, d);
  return true;
}

Error castTo(KernelContext &ctx, const Tensor &x, ElementKind to) {
  ElementKind from = x.kind();
  if (from == ElementKind::Unknown)
    return ctx.error("input element type is unknown");
  if (Error e = ctx.allocateOutput(0, to, x.shape()))
    return e;
  Tensor &y = ctx.outputs[0];
  int64_t n = x.numElements();
  if (from == to) {
    y = x;
    return Error::success();
  }
  if (to == ElementKind::String) {
    for (int64_t i = 0; i < n; ++i)
      y.strings()[i] = elementToString(x, i);
    return Error::success();
  }
  if (from == ElementKind::String) {
    for (int64_t i = 0; i < n; ++i)
      if (!parseStringElement(x.strings()[i], y, i))
        return ctx.error("cannot parse '" + x.strings()[i] + "' as " +
                         kindName(to));
    return Error::success();
  }
  bool intFrom = isIntegerKind(from) || from == ElementKind::Bool;
  for (int64_t i = 0; i < n; ++i) {
    if (intFrom && (isIntegerKind(to) || to == ElementKind::Bool)) {
      // Integer to integer wraps (two's complement), like numpy's astype.
      y.setInt(i, x.getInt(i));
    } else if (intFrom && to == ElementKind::F32 &&
               (from == ElementKind::I64 || from == ElementKind::U64)) {
      // One rounding from 64-bit integers.
      int64_t v = x.getInt(i);
      y.data<float>()[i] = from == ElementKind::U64
                               ? static_cast<float>(static_cast<uint64_t>(v))
                               : static_cast<float>(v);
    } else {
      // Float to integer truncates toward zero; floats round once.
      y.setDouble(i, x.getDouble(i));
    }
  }
  return Error::success();
}

Error castKernel(KernelContext &ctx) {
  const Tensor *x;
  if (Error e = requireInput(ctx, 0, x))
    return e;
  if (!ctx.hasAttr("to"))
    return ctx.error("missing attribute 'to'");
  int64_t t = ctx.getInt("to", 0);
  auto to = elementKindFromOnnxDataType(t);
  if (!to)
    return ctx.error("unsupported Cast target type " + llvm::Twine(t));
  // To float8 the values saturate (qopt/IR/Float8.h), ONNX's default.
  if (isFloat8Kind(*to) && ctx.getInt("saturate", 1) == 0)
    return ctx.error("Cast to " + getElementKindName(*to) +
                     " with saturate = 0 is not supported");
  return castTo(ctx, *x, *to);
}

Error castLikeKernel(KernelContext &ctx) {
  const Tensor *x, *like;
  if (Error e = requireInput(ctx, 0, x))
    return e;
  if (Error e = requireInput(ctx, 1, like))
    return e;
  return castTo(ctx, *x, like->kind());
}

} // namespace

void elementwise::registerCastKernels(KernelRegistry &r) {
  // Conversion.
  r.add(ops::Cast, castKernel);
  r.add(ops::CastLike, castLikeKernel);
}

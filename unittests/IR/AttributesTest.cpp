//===- AttributesTest.cpp - Attribute equality and hashing ----------------===//
//
// hash_value(Attribute) must agree with operator== (equal attributes hash
// alike) and tell values apart: cse buckets nodes by it, and hashing only
// attribute names made N LeakyRelus with N alphas quadratic.
//
//===----------------------------------------------------------------------===//

#include "qopt/IR/Attributes.h"

#include "gtest/gtest.h"

#include <set>

using namespace qopt;

namespace {

DenseElementsRef dense(ElementKind kind, std::vector<int64_t> dims,
                       std::string bytes) {
  return std::make_shared<DenseElements>(kind, std::move(dims),
                                         std::move(bytes));
}

void expectSameHashWhenEqual(const Attribute &a, const Attribute &b) {
  ASSERT_TRUE(a == b);
  EXPECT_EQ(hash_value(a), hash_value(b));
}

} // namespace

TEST(AttributesTest, EqualValuesHashAlike) {
  expectSameHashWhenEqual(Attribute(int64_t(7)), Attribute(int64_t(7)));
  expectSameHashWhenEqual(Attribute(0.25f), Attribute(0.25f));
  expectSameHashWhenEqual(Attribute("reflect"),
                          Attribute(std::string("reflect")));
  expectSameHashWhenEqual(Attribute(std::vector<int64_t>{1, 2}),
                          Attribute(std::vector<int64_t>{1, 2}));
  // Float lists compare with ==, so 0 and -0 are equal and must hash alike.
  expectSameHashWhenEqual(Attribute(std::vector<float>{0.0f, 1.5f}),
                          Attribute(std::vector<float>{-0.0f, 1.5f}));
  expectSameHashWhenEqual(Attribute(std::vector<std::string>{"a", "b"}),
                          Attribute(std::vector<std::string>{"a", "b"}));
  expectSameHashWhenEqual(Attribute(std::vector<int64_t>{}),
                          Attribute(std::vector<int64_t>{}));
  expectSameHashWhenEqual(Attribute(OpaqueAttr{"graph", "bytes"}),
                          Attribute(OpaqueAttr{"graph", "bytes"}));
  // Dense data: a shared payload, and two copies of the same bytes.
  DenseElementsRef w = dense(ElementKind::I8, {4}, "\x01\x02\x03\x04");
  expectSameHashWhenEqual(Attribute(w), Attribute(w));
  expectSameHashWhenEqual(
      Attribute(w), Attribute(dense(ElementKind::I8, {4}, "\x01\x02\x03\x04")));
  expectSameHashWhenEqual(
      Attribute(std::vector<DenseElementsRef>{w, w}),
      Attribute(std::vector<DenseElementsRef>{
          w, dense(ElementKind::I8, {4}, "\x01\x02\x03\x04")}));
  // Large payloads hash a bounded part, still consistently.
  std::string big(1 << 20, '\x05');
  expectSameHashWhenEqual(Attribute(dense(ElementKind::U8, {1 << 20}, big)),
                          Attribute(dense(ElementKind::U8, {1 << 20}, big)));
}

TEST(AttributesTest, DifferentValuesHashApart) {
  // The cse case: many nodes differing only in one float attribute.
  std::set<size_t> hashes;
  for (int i = 0; i < 10000; ++i)
    hashes.insert(hash_value(Attribute(0.001f * static_cast<float>(i))));
  EXPECT_GE(hashes.size(), 9990u);

  EXPECT_NE(hash_value(Attribute(int64_t(1))),
            hash_value(Attribute(int64_t(2))));
  EXPECT_NE(hash_value(Attribute(0.0f)), hash_value(Attribute(-0.0f)))
      << "scalar floats compare bitwise";
  EXPECT_NE(hash_value(Attribute("edge")), hash_value(Attribute("reflect")));
  EXPECT_NE(hash_value(Attribute(std::vector<int64_t>{0, 1})),
            hash_value(Attribute(std::vector<int64_t>{1, 0})));
  // Same bytes, other dims or kind.
  EXPECT_NE(hash_value(Attribute(dense(ElementKind::I8, {4}, "abcd"))),
            hash_value(Attribute(dense(ElementKind::I8, {2, 2}, "abcd"))));
  EXPECT_NE(hash_value(Attribute(dense(ElementKind::I8, {4}, "abcd"))),
            hash_value(Attribute(dense(ElementKind::U8, {4}, "abcd"))));
  // Large payloads differing at either end.
  std::string big(1 << 20, '\x05'), first = big, last = big;
  first.front() = 6;
  last.back() = 6;
  size_t h = hash_value(Attribute(dense(ElementKind::U8, {1 << 20}, big)));
  EXPECT_NE(h, size_t(hash_value(
                   Attribute(dense(ElementKind::U8, {1 << 20}, first)))));
  EXPECT_NE(h, size_t(hash_value(
                   Attribute(dense(ElementKind::U8, {1 << 20}, last)))));
  // Names count in NamedAttribute.
  EXPECT_NE(hash_value(NamedAttribute{"alpha", Attribute(0.5f)}),
            hash_value(NamedAttribute{"beta", Attribute(0.5f)}));
}

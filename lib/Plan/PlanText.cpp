//===- PlanText.cpp - The plan's text form --------------------------------===//
//
// The fields of PlanEncoder.cpp as text, one line per run of fields that
// share a label; records (tensors, steps) start lines of their own, steps
// after a blank line. Blobs of up to 32 bytes are written in place as hex;
// larger ones (weights, tables, constants) are named resources after a
// `resources:` line, as a .qir keeps large constants apart:
//
//   qopt plan: 6
//   arena: 4096
//   tensors: 3
//   tensor: "x" f32 onnx [1, 8, 4, 4] 0 0  # %0
//   ...
//   step: table "relu" "q.activation" [1] [2]
//   table: 1 1 128
//   table entries: blob0
//   table broadcast: -1 0 0
//
//   resources:
//     blob0: 0x000102...
//
// `#` starts a comment outside strings. Strings are C-escaped; floats
// print in their shortest round-tripping form; enums by name (or number).
// A text plan reads back to the same plan: the same decoder reads it, field
// by field and label by label, and verifies it.
//
//===----------------------------------------------------------------------===//

#include "PlanFields.h"
#include "qopt/Plan/PlanFile.h"
#include "qopt/Support/Error.h"
#include "qopt/Support/FloatFormat.h"

#include "llvm/ADT/StringExtras.h"

#include <deque>
#include <map>

using namespace qopt;
using namespace qopt::plan;
using namespace qopt::interp;
using namespace qopt::kernels;
using namespace qopt::plan::planfile;

namespace {

constexpr llvm::StringLiteral kHeaderLabel = "qopt plan";
constexpr llvm::StringLiteral kResourcesLine = "resources:";
/// Blobs up to this size stay in place.
constexpr size_t kInlineBlobBytes = 32;

std::string quote(llvm::StringRef s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      out += "\\x";
      out += llvm::hexdigit(c >> 4, /*LowerCase=*/true);
      out += llvm::hexdigit(c & 15, /*LowerCase=*/true);
    }
  }
  return out + "\"";
}

std::string hex(llvm::ArrayRef<uint8_t> bytes) {
  return "0x" + llvm::toHex(bytes, /*LowerCase=*/true);
}

class TextSink final : public FieldSink {
public:
  TextSink() { u64(kPlanFileVersion, kHeaderLabel.data()); }

  void u8(uint8_t v, const char *label) override {
    value(label, std::to_string(v));
  }
  void enumByte(uint8_t v, EnumNames names, const char *label) override {
    value(label, v < names.size() ? names[v].str() : std::to_string(v));
  }
  void i32(int32_t v, const char *label) override {
    value(label, std::to_string(v));
  }
  void u64(uint64_t v, const char *label) override {
    value(label, std::to_string(v));
  }
  void i64(int64_t v, const char *label) override {
    value(label, std::to_string(v));
  }
  void f32(float v, const char *label) override {
    value(label, formatFloat(v));
  }
  void string(llvm::StringRef s, const char *label) override {
    value(label, quote(s));
  }
  void blob(llvm::ArrayRef<uint8_t> bytes, const char *label) override {
    if (bytes.size() <= kInlineBlobBytes)
      return value(label, hex(bytes));
    std::string name = "blob" + std::to_string(resources.size());
    resources.push_back({name, hex(bytes)});
    value(label, name);
  }
  void ints(llvm::ArrayRef<int64_t> v, const char *label) override {
    list(label, v, [](int64_t x) { return std::to_string(x); });
  }
  void i32s(llvm::ArrayRef<int> v, const char *label) override {
    list(label, v, [](int x) { return std::to_string(x); });
  }
  void floats(llvm::ArrayRef<float> v, const char *label) override {
    list(label, v, [](float x) { return formatFloat(x); });
  }
  void strings(llvm::ArrayRef<std::string> v, const char *label) override {
    list(label, v, [](const std::string &x) { return quote(x); });
  }
  void beginRecord() override { endLine(); }
  void note(const llvm::Twine &text) override { pendingNote = text.str(); }

  std::string finish() {
    endLine();
    if (!resources.empty()) {
      out += "\n";
      out += kResourcesLine;
      out += "\n";
      for (const auto &[name, bytes] : resources)
        out += "  " + name + ": " + bytes + "\n";
    }
    return std::move(out);
  }

private:
  void value(const char *label, const std::string &token) {
    if (!lineOpen || label != lineLabel) {
      endLine();
      if (llvm::StringRef(label) == "step")
        out += "\n";
      out += label;
      out += ":";
      lineLabel = label;
      lineOpen = true;
    }
    out += " ";
    out += token;
  }
  template <typename T, typename F>
  void list(const char *label, llvm::ArrayRef<T> v, F format) {
    std::string text = "[";
    for (size_t i = 0; i < v.size(); ++i)
      text += (i ? ", " : "") + format(v[i]);
    value(label, text + "]");
  }
  void endLine() {
    if (!lineOpen)
      return;
    if (!pendingNote.empty())
      out += "  # " + pendingNote;
    out += "\n";
    lineOpen = false;
    pendingNote.clear();
  }

  std::string out;
  std::string lineLabel;
  bool lineOpen = false;
  std::string pendingNote;
  std::vector<std::pair<std::string, std::string>> resources;
};

struct Token {
  enum Kind { Word, String, Open, Close, Comma } kind;
  std::string text; // a word, or a string's decoded bytes
};

class TextSource final : public FieldSource {
public:
  explicit TextSource(llvm::StringRef text) : text(text) {
    for (llvm::StringRef rest = text; !rest.empty();) {
      auto [line, tail] = rest.split('\n');
      lines.push_back(line.rtrim("\r"));
      rest = tail;
    }
    end = lines.size();
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].trim() == kResourcesLine) {
        end = i;
        readResources(i + 1);
        break;
      }
  }

  uint8_t u8(const char *what) override {
    return uint8_t(integer(what, 0, 255));
  }
  uint8_t enumByte(EnumNames names, const char *what) override {
    Token t;
    if (!word(what, t))
      return 0;
    for (size_t i = 0; i < names.size(); ++i)
      if (t.text == names[i])
        return uint8_t(i);
    int64_t v = 0;
    if (llvm::StringRef(t.text).getAsInteger(10, v) || v < 0 ||
        size_t(v) >= names.size()) {
      fail(llvm::Twine(what) + ": " + names.kind + " '" + t.text +
           "' is not one this reader knows");
      return 0;
    }
    return uint8_t(v);
  }
  int32_t i32(const char *what) override {
    return int32_t(integer(what, INT32_MIN, INT32_MAX));
  }
  uint64_t u64(const char *what) override {
    Token t;
    uint64_t v = 0;
    if (word(what, t) && llvm::StringRef(t.text).getAsInteger(10, v))
      fail(llvm::Twine(what) + ": '" + t.text + "' is not an unsigned number");
    return failed ? 0 : v;
  }
  int64_t i64(const char *what) override {
    return integer(what, INT64_MIN, INT64_MAX);
  }
  float f32(const char *what) override {
    Token t;
    if (!word(what, t))
      return 0;
    std::optional<float> v = parseFloat(t.text);
    if (!v)
      fail(llvm::Twine(what) + ": '" + t.text + "' is not a float");
    return v.value_or(0);
  }
  std::string string(const char *what) override {
    Token t;
    if (!next(what, t))
      return {};
    if (t.kind != Token::String) {
      fail(llvm::Twine(what) + ": expected a string");
      return {};
    }
    return t.text;
  }
  llvm::StringRef blob(const char *what) override {
    Token t;
    if (!word(what, t))
      return {};
    llvm::StringRef w = t.text;
    if (w.consume_front("0x")) {
      std::string bytes;
      if (!llvm::tryGetFromHex(w, bytes) || w.size() % 2) {
        fail(llvm::Twine(what) + ": malformed hex bytes");
        return {};
      }
      return inlineBlobs.emplace_back(std::move(bytes));
    }
    auto it = resources.find(t.text);
    if (it == resources.end()) {
      fail(llvm::Twine(what) + ": no resource '" + t.text + "'");
      return {};
    }
    return it->second;
  }
  size_t count(size_t minBytes, const char *what) override {
    uint64_t n = u64(what);
    // A record takes at least half the bytes in text that it takes in the
    // file (a tensor: 26 characters, 27 bytes), so a short text cannot ask
    // for millions of records.
    if (!failed && n > text.size() / std::max<size_t>(1, minBytes / 2))
      fail(llvm::Twine(what) + ": " + llvm::Twine(n) +
           " elements cannot fit the text");
    return failed ? 0 : size_t(n);
  }
  std::vector<int64_t> ints(const char *what) override {
    return list<int64_t>(what, [&] { return i64(what); });
  }
  std::vector<int> i32s(const char *what) override {
    return list<int>(what, [&] { return i32(what); });
  }
  std::vector<float> floats(const char *what) override {
    return list<float>(what, [&] { return f32(what); });
  }
  std::vector<std::string> strings(const char *what) override {
    return list<std::string>(what, [&] { return string(what); });
  }
  void beginRecord() override {
    if (!failed && at < tokens.size())
      fail("'" + label + "' has more values than its record");
    at = tokens.size();
  }
  std::string where() const override {
    return "line " + std::to_string(line + 1);
  }

  /// Whether every field was read: nothing but comments before the
  /// resources.
  bool atEnd() {
    if (at < tokens.size())
      return false;
    while (line + 1 < end) {
      llvm::StringRef next = lines[line + 1].trim();
      if (!next.empty() && !next.startswith("#"))
        return false;
      ++line;
    }
    return true;
  }

private:
  void readResources(size_t from) {
    for (size_t i = from; i < lines.size() && !failed; ++i) {
      llvm::StringRef l = stripComment(lines[i]).trim();
      if (l.empty())
        continue;
      auto [name, bytes] = l.split(':');
      name = name.trim();
      bytes = bytes.trim();
      std::string decoded;
      if (!bytes.consume_front("0x") || bytes.size() % 2 ||
          !llvm::tryGetFromHex(bytes, decoded) || name.empty()) {
        line = i;
        fail("a resource is not 'name: 0x<hex bytes>'");
        return;
      }
      if (!resources.emplace(name.str(), std::move(decoded)).second) {
        line = i;
        fail("resource '" + name + "' is defined twice");
        return;
      }
    }
  }

  /// The line without a `#` comment (outside strings).
  static llvm::StringRef stripComment(llvm::StringRef l) {
    bool inString = false;
    for (size_t i = 0; i < l.size(); ++i) {
      if (inString && l[i] == '\\')
        ++i;
      else if (l[i] == '"')
        inString = !inString;
      else if (!inString && l[i] == '#')
        return l.take_front(i);
    }
    return l;
  }

  /// Moves to the next line with a label; false at the end.
  bool advance() {
    tokens.clear();
    at = 0;
    for (size_t i = started ? line + 1 : 0; i < end; ++i) {
      llvm::StringRef l = stripComment(lines[i]).trim();
      if (l.empty())
        continue;
      started = true;
      line = i;
      size_t colon = l.find(':');
      if (colon == llvm::StringRef::npos)
        return fail("expected 'label: values'");
      label = l.take_front(colon).trim().str();
      return lex(l.drop_front(colon + 1));
    }
    started = true;
    line = end ? end - 1 : 0;
    return false;
  }

  bool lex(llvm::StringRef l) {
    while (!(l = l.ltrim()).empty()) {
      char c = l.front();
      if (c == '[' || c == ']' || c == ',') {
        tokens.push_back({c == '['   ? Token::Open
                          : c == ']' ? Token::Close
                                     : Token::Comma,
                          std::string(1, c)});
        l = l.drop_front();
        continue;
      }
      if (c != '"') {
        size_t n = l.find_first_of(" \t[],\"");
        tokens.push_back({Token::Word, l.take_front(n).str()});
        l = l.drop_front(std::min(n, l.size()));
        continue;
      }
      std::string s;
      size_t i = 1;
      for (; i < l.size() && l[i] != '"'; ++i) {
        if (l[i] != '\\') {
          s += l[i];
          continue;
        }
        if (i + 1 < l.size() && (l[i + 1] == '"' || l[i + 1] == '\\')) {
          s += l[++i];
          continue;
        }
        unsigned byte = 0;
        if (i + 3 >= l.size() || l[i + 1] != 'x' ||
            l.substr(i + 2, 2).getAsInteger(16, byte))
          return fail("a string has a malformed escape");
        s += char(byte);
        i += 3;
      }
      if (i >= l.size())
        return fail("a string is not closed");
      tokens.push_back({Token::String, std::move(s)});
      l = l.drop_front(i + 1);
    }
    return true;
  }

  /// The next token of field `what`, moving to the next line (which must
  /// be labelled `what`) when this one is used up.
  bool next(const char *what, Token &t) {
    if (failed)
      return false;
    if (at < tokens.size() && label != what)
      return fail("'" + label + "' has more values than expected (reading " +
                  what + ")");
    while (at == tokens.size()) {
      if (!advance())
        return failed ? false
                      : fail(llvm::Twine("the text ends before ") + what);
      if (label != what)
        return fail("expected '" + llvm::Twine(what) + "', found '" + label +
                    "'");
    }
    t = tokens[at++];
    return true;
  }
  bool word(const char *what, Token &t) {
    if (!next(what, t))
      return false;
    if (t.kind != Token::Word)
      return fail(llvm::Twine(what) + ": expected a value, found '" + t.text +
                  "'");
    return true;
  }
  int64_t integer(const char *what, int64_t lo, int64_t hi) {
    Token t;
    int64_t v = 0;
    if (!word(what, t))
      return 0;
    if (llvm::StringRef(t.text).getAsInteger(10, v) || v < lo || v > hi) {
      fail(llvm::Twine(what) + ": '" + t.text + "' is not an integer in [" +
           llvm::Twine(lo) + ", " + llvm::Twine(hi) + "]");
      return 0;
    }
    return v;
  }
  /// `[a, b, ...]`.
  template <typename T, typename F>
  std::vector<T> list(const char *what, F element) {
    std::vector<T> v;
    Token t;
    if (!next(what, t))
      return v;
    if (t.kind != Token::Open) {
      fail(llvm::Twine(what) + ": expected '['");
      return v;
    }
    if (at < tokens.size() && tokens[at].kind == Token::Close) {
      ++at;
      return v;
    }
    while (!failed) {
      if (v.size() >= text.size()) {
        fail(llvm::Twine(what) + ": too many elements");
        break;
      }
      v.push_back(element());
      if (failed || !next(what, t))
        break;
      if (t.kind == Token::Close)
        break;
      if (t.kind != Token::Comma)
        fail(llvm::Twine(what) + ": expected ',' or ']'");
    }
    if (failed)
      v.clear();
    return v;
  }

  llvm::StringRef text;
  std::vector<llvm::StringRef> lines;
  size_t end = 0;
  size_t line = 0;
  bool started = false;
  std::string label;
  std::vector<Token> tokens;
  size_t at = 0;
  std::map<std::string, std::string> resources;
  std::deque<std::string> inlineBlobs;
};

llvm::Error textError(const llvm::Twine &msg) {
  return makeOneLineError("plan text: " + msg);
}

} // namespace

bool plan::isPlanText(llvm::StringRef bytes) {
  while (!bytes.empty()) {
    auto [line, rest] = bytes.split('\n');
    llvm::StringRef l = line.trim();
    if (!l.empty() && !l.startswith("#"))
      return l.startswith(kHeaderLabel) &&
             l.drop_front(kHeaderLabel.size()).ltrim().startswith(":");
    bytes = rest;
  }
  return false;
}

llvm::Expected<std::string> plan::printPlanText(const Plan &plan) {
  TextSink sink;
  if (auto err = encodePlan(plan, sink))
    return std::move(err);
  return sink.finish();
}

llvm::Expected<std::unique_ptr<Plan>> plan::parsePlanText(llvm::StringRef text,
                                                          Isa isa) {
  TextSource in(text);
  uint64_t version = in.u64(kHeaderLabel.data());
  if (!in.failed &&
      (version < kOldestPlanFileVersion || version > kPlanFileVersion))
    in.fail("format version " + llvm::Twine(version) +
            "; this qopt reads versions " +
            llvm::Twine(kOldestPlanFileVersion) + " to " +
            llvm::Twine(kPlanFileVersion));
  std::unique_ptr<Plan> plan;
  if (!in.failed)
    plan = decodePlan(in, uint32_t(version), isa);
  if (plan && !in.atEnd())
    in.fail("values after the last step");
  if (in.failed)
    return textError(in.reason);
  if (auto err = verifyPlan(*plan, /*requirePlacement=*/plan->isPlaced()))
    return textError(llvm::toString(std::move(err)));
  return std::move(plan);
}

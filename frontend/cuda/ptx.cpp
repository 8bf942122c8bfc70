#include "frontend/cuda/ptx.h"

#include <fmt/format.h>

#include <regex>

namespace shardproof::frontend::cuda {

namespace {

// "%3" -> 3; "{%0, %1}" -> {0, 1}; nullopt for anything else.
std::optional<std::vector<int>> operands(const std::string &text) {
  static const std::regex list(R"(^\{?\s*(%\d+(\s*,\s*%\d+)*)\s*\}?$)");
  std::smatch m;
  if (!std::regex_match(text, m, list))
    return std::nullopt;
  std::vector<int> out;
  static const std::regex number(R"(%(\d+))");
  std::string inner = m[1].str();
  for (std::sregex_iterator it(inner.begin(), inner.end(), number), end; it != end; ++it)
    out.push_back(std::stoi((*it)[1].str()));
  return out;
}

std::optional<PtxInstruction> instruction(const std::string &line) {
  static const std::regex memory(
      R"(^(@p\s+)?(ld|st)\.(global|shared)((?:\.(?:ca|cg|cs|lu|cv|wb|wt|nc))*)\.(?:(v2|v4)\.)?([usb])(16|32|64)\s+(.+)$)");
  static const std::regex zero(R"(^mov\.[bus]32\s+%(\d+)\s*,\s*0$)");
  static const std::regex setp(R"(^setp\.ne\.[bus]32\s+p\s*,\s*%(\d+)\s*,\s*0$)");
  std::smatch m;
  PtxInstruction out;
  if (std::regex_match(line, m, zero)) {
    out.op = PtxInstruction::Op::Zero;
    out.values = {std::stoi(m[1].str())};
    return out;
  }
  if (std::regex_match(line, m, setp)) {
    out.op = PtxInstruction::Op::SetPredicate;
    out.tested = std::stoi(m[1].str());
    return out;
  }
  if (!std::regex_match(line, m, memory))
    return std::nullopt;
  out.op = m[2].str() == "ld" ? PtxInstruction::Op::Load : PtxInstruction::Op::Store;
  out.predicated = m[1].matched;
  out.bytes = std::stoi(m[7].str()) / 8;
  std::size_t words = m[5].str() == "v4" ? 4 : m[5].str() == "v2" ? 2 : 1;
  std::string rest = m[8].str();
  static const std::regex load(R"(^(.+?)\s*,\s*\[\s*%(\d+)\s*\]$)");
  static const std::regex store(R"(^\[\s*%(\d+)\s*\]\s*,\s*(.+)$)");
  std::smatch parts;
  bool is_load = out.op == PtxInstruction::Op::Load;
  if (!std::regex_match(rest, parts, is_load ? load : store))
    return std::nullopt;
  auto values = operands(parts[is_load ? 1 : 2].str());
  if (!values || values->size() != words)
    return std::nullopt;
  out.values = *values;
  out.address = std::stoi(parts[is_load ? 2 : 1].str());
  return out;
}

std::string trimmed(std::string_view text) {
  auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos)
    return "";
  auto last = text.find_last_not_of(" \t");
  return std::string(text.substr(first, last - first + 1));
}

} // namespace

std::optional<std::vector<PtxInstruction>> parse_ptx(std::string_view text,
                                                     std::string &why) {
  std::vector<PtxInstruction> program;
  std::string statement;
  auto flush = [&]() -> bool {
    std::string line = trimmed(statement);
    statement.clear();
    if (line.empty() || line == "{" || line == "}" || line == ".reg .pred p")
      return true;
    auto parsed = instruction(line);
    if (!parsed) {
      why = fmt::format("the PTX instruction '{}'", line);
      return false;
    }
    program.push_back(*parsed);
    return true;
  };
  for (char c : text) {
    if (c == ';' || c == '\n') { // a block's braces stand on lines of their own
      if (!flush())
        return std::nullopt;
      continue;
    }
    statement += c == '\t' ? ' ' : c;
  }
  if (!flush())
    return std::nullopt;
  if (program.empty()) {
    why = "an asm statement with no instruction";
    return std::nullopt;
  }
  return program;
}

} // namespace shardproof::frontend::cuda

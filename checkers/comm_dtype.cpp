// SP008 comm-dtype: a collective that carries a value in a narrower or a
// different floating-point format than the value it stands for (bf16
// gradients reduced in fp16 overflow at 65504; fp32 reduced in bf16 loses
// bits), or a reduction in 16 bits where the configuration asks for fp32.
// The proofs see exact reals, so only this check sees the format.
#include "checkers/check.h"
#include "checkers/check_factories.h"

#include <fmt/format.h>

#include <set>
#include <string_view>

namespace shardproof::checkers {

namespace {
bool is_float(ir::DType d) {
  return d == ir::DType::Float64 || d == ir::DType::Float32 || d == ir::DType::Float16 ||
         d == ir::DType::BFloat16;
}

int bits(ir::DType d) {
  switch (d) {
  case ir::DType::Float64:
    return 64;
  case ir::DType::Float32:
    return 32;
  default:
    return 16;
  }
}

// Ops that move or re-format values without computing new ones: the
// precision a payload stands for is found through them, however the
// narrowing happened (a cast, a copy into a narrower buffer, a flattened
// bucket, an in-place write into a 16-bit tensor).
bool carries_values(const ir::Node &node) {
  static const std::set<std::string_view> movers = {
      "to",         "copy_",      "clone", "contiguous", "cpu",   "positive",
      "index_put",  "copy_slices", "cat",  "stack",      "view",  "reshape",
      "flatten",    "index",      "narrow", "select",    "split", "chunk"};
  return node.category == ir::OpCategory::View || movers.count(node.op) > 0;
}

// Where a payload's values changed format on their way to the collective:
// the op that wrote them in its format and the format they had before,
// found back through value-carrying ops (the payload itself included).
struct Narrowing {
  ir::DType from;
  const ir::Node *at;
};

std::vector<Narrowing> narrowings(const ir::Trace &trace, ir::NodeId payload) {
  std::vector<Narrowing> found;
  std::set<ir::NodeId> seen = {payload};
  std::vector<ir::NodeId> stack = {payload};
  while (!stack.empty()) {
    const ir::Node &node = trace.node(stack.back());
    stack.pop_back();
    if (!carries_values(node))
      continue;
    for (ir::NodeId input : node.inputs) {
      const ir::Node &from = trace.node(input);
      if (from.op == "fill_" || from.category == ir::OpCategory::Leaf)
        continue; // an empty buffer's old contents are overwritten, not carried
      if (is_float(from.dtype) && from.dtype != node.dtype)
        found.push_back({from.dtype, &node});
      if (seen.insert(input).second)
        stack.push_back(input);
    }
  }
  return found;
}

// The single-device run narrows there too (a model that computes in fp32
// and keeps bf16 activations): the format is the model's, not the
// communication's.
bool reference_narrows_too(const ir::Trace &reference, const Narrowing &n) {
  for (const ir::Node &node : reference.nodes)
    if (node.loc == n.at->loc && node.op == n.at->op && node.dtype == n.at->dtype)
      for (ir::NodeId input : node.inputs)
        if (reference.node(input).dtype == n.from)
          return true;
  return false;
}

class CommDtypeCheck final : public Check {
public:
  explicit CommDtypeCheck(std::optional<ir::DType> reduce_dtype)
      : reduce_dtype_(reduce_dtype) {}

  std::string_view name() const override { return "comm-dtype"; }

  std::span<const RuleCode> rules() const override {
    static constexpr RuleCode kEmits[] = {RuleCode::CommDtype};
    return kEmits;
  }

  void run(CheckContext &context) override {
    std::set<std::pair<std::string, int>> reported; // one finding per call site
    for (int r = 0; r < context.program.world(); ++r) {
      const ir::Trace &trace = context.program.rank(r);
      for (const ir::Collective &c : trace.collectives) {
        auto message = problem(context.program.reference(), trace, c);
        if (message && reported.insert({c.loc.file, c.loc.line}).second)
          context.findings.push_back(Finding::of(RuleCode::CommDtype, c.loc, *message));
      }
    }
  }

private:
  std::optional<std::string> problem(const ir::Trace &reference, const ir::Trace &trace,
                                     const ir::Collective &c) const {
    const ir::Node &node = trace.node(c.node);
    const std::string_view kind = ir::collective_name(c.kind);
    if (!node.inputs.empty() && is_float(c.dtype)) {
      // The formats of the values the payload stands for: the widest
      // narrower one, or another 16-bit format, is the problem.
      std::optional<ir::DType> from;
      for (const Narrowing &n : narrowings(trace, node.inputs[0])) {
        ir::DType d = n.from;
        if (d != c.dtype && bits(c.dtype) <= bits(d) && (!from || bits(d) > bits(*from)) &&
            !reference_narrows_too(reference, n))
          from = d;
      }
      if (from)
        return fmt::format(
            "{} carries {} values cast from {}: {}", kind, ir::dtype_name(c.dtype),
            ir::dtype_name(*from),
            bits(c.dtype) < bits(*from)
                ? (ir::is_reduction(c.kind)
                       ? "the reduction loses the precision the values had"
                       : "the values lose the precision they had")
                : "a different 16-bit format with a different range (fp16 "
                  "overflows at 65504, where bf16 does not)");
    }
    if (reduce_dtype_ && ir::is_reduction(c.kind) && is_float(c.dtype) &&
        bits(c.dtype) < bits(*reduce_dtype_))
      return fmt::format("{} reduces in {} but the configuration asks for reductions "
                         "in {}",
                         kind, ir::dtype_name(c.dtype), ir::dtype_name(*reduce_dtype_));
    return std::nullopt;
  }

  std::optional<ir::DType> reduce_dtype_;
};
} // namespace

std::unique_ptr<Check> make_comm_dtype_check(std::optional<ir::DType> reduce_dtype) {
  return std::make_unique<CommDtypeCheck>(reduce_dtype);
}

} // namespace shardproof::checkers

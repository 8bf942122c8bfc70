// SP008 comm-dtype: a collective that carries a value in a narrower or a
// different floating-point format than the value it stands for (bf16
// gradients reduced in fp16 overflow at 65504; fp32 reduced in bf16 loses
// bits), or a reduction in 16 bits where the configuration asks for fp32.
// The proofs see exact reals, so only this check sees the format.
#include "checkers/check.h"
#include "checkers/check_factories.h"

#include <fmt/format.h>

#include <algorithm>

#include <map>
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
      "to",        "copy_",       "clone",  "contiguous", "cpu",   "positive",
      "index_put", "copy_slices", "cat",    "stack",      "view",  "reshape",
      "flatten",   "index",       "narrow", "select",     "split", "chunk"};
  return node.category == ir::OpCategory::View || movers.count(node.op) > 0;
}

// Where a payload's values changed format on their way to the collective:
// the op that wrote them in its format and the format they had before,
// found back through value-carrying ops (the payload itself included) and
// through elementwise arithmetic in the narrow format (gradients cast to
// fp16, then pre-divided by the world size, then reduced): `computed` says
// the values were computed on after the narrowing.
struct Narrowing {
  ir::DType from;
  const ir::Node *at;
  bool computed = false;
  // Every use of the narrowed values is on the way to the collective: the
  // cast was made for the communication, not by the model.
  bool for_the_collective = false;
};

std::vector<Narrowing> narrowings(const ir::Trace &trace, ir::NodeId payload) {
  std::vector<Narrowing> found;
  std::map<ir::NodeId, bool> seen = {{payload, false}}; // node -> computed on since
  std::vector<ir::NodeId> stack = {payload};
  while (!stack.empty()) {
    const ir::NodeId id = stack.back();
    const ir::Node &node = trace.node(id);
    stack.pop_back();
    const bool moves = carries_values(node);
    const bool computes = !moves && node.category == ir::OpCategory::Elementwise;
    if (!moves && !computes)
      continue;
    const bool computed = seen[id] || computes;
    for (ir::NodeId input : node.inputs) {
      const ir::Node &from = trace.node(input);
      if (from.op == "fill_" || from.category == ir::OpCategory::Leaf)
        continue; // an empty buffer's old contents are overwritten, not carried
      // Arithmetic reads its other operands (a scale, a 0-dim tensor that
      // does not take part in type promotion) in their own format: only a
      // copy or a cast narrows.
      if (moves && is_float(from.dtype) && from.dtype != node.dtype)
        found.push_back({from.dtype, &node, seen[id]});
      if (computes && from.dtype != node.dtype)
        continue;
      if (seen.emplace(input, computed).second)
        stack.push_back(input);
    }
  }
  for (Narrowing &n : found)
    n.for_the_collective =
        std::none_of(trace.nodes.begin(), trace.nodes.end(), [&](const ir::Node &user) {
          return !seen.count(user.id) && std::find(user.inputs.begin(), user.inputs.end(),
                                                   n.at->id) != user.inputs.end();
        });
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

// Values cast for a reduction over several ranks are summed in the narrow
// format, which the single-device run never does even where it makes the
// same cast (its group is one rank).
bool reduced_narrow_by_choice(const ir::Collective &c, const Narrowing &n) {
  return n.for_the_collective && ir::is_reduction(c.kind) && c.group.size() > 1;
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
        auto found = problem(context.program.reference(), trace, c);
        if (found && reported.insert({c.loc.file, c.loc.line}).second) {
          Finding finding = Finding::of(RuleCode::CommDtype, c.loc, found->message);
          if (found->warning)
            finding.severity = Severity::Warning;
          context.findings.push_back(std::move(finding));
        }
      }
    }
  }

private:
  struct Problem {
    std::string message;
    // Narrowed, then computed on in the narrow format before the
    // collective: the format is a choice the code made on the way (a
    // pre-division in fp16), said as a warning unless --reduce-dtype asks
    // for wider reductions.
    bool warning = false;
  };

  std::optional<Problem> problem(const ir::Trace &reference, const ir::Trace &trace,
                                 const ir::Collective &c) const {
    std::optional<Problem> narrowed = narrowing_problem(reference, trace, c);
    if (narrowed && !narrowed->warning)
      return narrowed;
    if (reduce_dtype_ && ir::is_reduction(c.kind) && is_float(c.dtype) &&
        bits(c.dtype) < bits(*reduce_dtype_))
      return Problem{fmt::format("{} reduces in {} but the configuration asks for "
                                 "reductions in {}",
                                 ir::collective_name(c.kind), ir::dtype_name(c.dtype),
                                 ir::dtype_name(*reduce_dtype_))};
    return narrowed;
  }

  static std::optional<Problem> narrowing_problem(const ir::Trace &reference,
                                                  const ir::Trace &trace,
                                                  const ir::Collective &c) {
    const ir::Node &node = trace.node(c.node);
    if (node.inputs.empty() || !is_float(c.dtype))
      return std::nullopt;
    // The formats of the values the payload stands for: the widest narrower
    // one, or another 16-bit format, is the problem (a cast straight into
    // the payload before one computed on since).
    std::optional<Narrowing> widest;
    for (const Narrowing &n : narrowings(trace, node.inputs[0]))
      if (n.from != c.dtype && bits(c.dtype) <= bits(n.from) &&
          (!widest || bits(n.from) > bits(widest->from) ||
           (bits(n.from) == bits(widest->from) && widest->computed && !n.computed)) &&
          (!reference_narrows_too(reference, n) || reduced_narrow_by_choice(c, n)))
        widest = n;
    if (!widest)
      return std::nullopt;
    const std::string_view kind = ir::collective_name(c.kind);
    const bool narrower = bits(c.dtype) < bits(widest->from);
    std::string what =
        narrower ? (ir::is_reduction(c.kind) ? "the reduction loses the precision the "
                                               "values had"
                                             : "the values lose the precision they had")
                 : "a different 16-bit format with a different range (fp16 "
                   "overflows at 65504, where bf16 does not)";
    const bool same_cast_in_reference = reference_narrows_too(reference, *widest);
    std::string carries =
        widest->computed
            ? fmt::format("{} carries {} values computed from {} ones cast on line {}",
                          kind, ir::dtype_name(c.dtype), ir::dtype_name(widest->from),
                          widest->at->loc.line)
            : fmt::format("{} carries {} values cast from {}", kind,
                          ir::dtype_name(c.dtype), ir::dtype_name(widest->from));
    if (same_cast_in_reference)
      what += fmt::format(" (the single-device run makes the same cast but sums nothing "
                          "in {})",
                          ir::dtype_name(c.dtype));
    return Problem{fmt::format("{}: {}", carries, what),
                   widest->computed || same_cast_in_reference};
  }

  std::optional<ir::DType> reduce_dtype_;
};
} // namespace

std::unique_ptr<Check> make_comm_dtype_check(std::optional<ir::DType> reduce_dtype) {
  return std::make_unique<CommDtypeCheck>(reduce_dtype);
}

} // namespace shardproof::checkers

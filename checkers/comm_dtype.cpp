// SP008 comm-dtype: a collective that carries a value in a narrower or a
// different floating-point format than the value it stands for (bf16
// gradients reduced in fp16 overflow at 65504; fp32 reduced in bf16 loses
// bits), or a reduction in 16 bits where the configuration asks for fp32.
// The proofs see exact reals, so only this check sees the format.
#include "checkers/check.h"
#include "checkers/check_factories.h"

#include <fmt/format.h>

#include <set>

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

bool is_reduction(ir::CollectiveKind kind) {
  return kind == ir::CollectiveKind::AllReduce ||
         kind == ir::CollectiveKind::ReduceScatter;
}

class CommDtypeCheck final : public Check {
public:
  explicit CommDtypeCheck(std::optional<ir::DType> reduce_dtype)
      : reduce_dtype_(reduce_dtype) {}

  std::string_view name() const override { return "comm-dtype"; }

  void run(CheckContext &context) override {
    std::set<std::pair<std::string, int>> reported; // one finding per call site
    for (int r = 0; r < context.program.world(); ++r) {
      const ir::Trace &trace = context.program.rank(r);
      for (const ir::Collective &c : trace.collectives) {
        auto message = problem(trace, c);
        if (message && reported.insert({c.loc.file, c.loc.line}).second)
          context.findings.push_back(Finding::of("SP008", c.loc, *message));
      }
    }
  }

private:
  std::optional<std::string> problem(const ir::Trace &trace,
                                     const ir::Collective &c) const {
    const ir::Node &node = trace.node(c.node);
    const std::string_view kind = ir::collective_name(c.kind);
    if (!node.inputs.empty()) {
      // The tensor handed to the collective, and what it was cast from.
      const ir::Node &sent = trace.node(node.inputs[0]);
      if (sent.op == "to" && !sent.inputs.empty()) {
        ir::DType from = trace.node(sent.inputs[0]).dtype;
        if (is_float(from) && is_float(c.dtype) && from != c.dtype &&
            bits(c.dtype) <= bits(from))
          return fmt::format(
              "{} carries {} values cast from {}: {}", kind, ir::dtype_name(c.dtype),
              ir::dtype_name(from),
              bits(c.dtype) < bits(from)
                  ? "the reduction loses the precision the values had"
                  : "a different 16-bit format with a different range (fp16 "
                    "overflows at 65504, where bf16 does not)");
      }
    }
    if (reduce_dtype_ && is_reduction(c.kind) && is_float(c.dtype) &&
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

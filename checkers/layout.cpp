#include "checkers/layout.h"

#include "checkers/prover/prover.h"
#include "frontend/python/linker.h"

#include "models/terms/evaluate.h"

#include <fmt/format.h>

#include <cmath>

namespace shardproof::checkers {

std::pair<int, int> DistributedValue::shard_of(int k, Layout::Over over) const {
  if (auto it = axis_groups.find(over); it != axis_groups.end())
    for (const auto &group : it->second)
      for (std::size_t i = 0; i < group.size(); ++i)
        if (group[i] == rank_id(k))
          return {static_cast<int>(i), static_cast<int>(group.size())};
  return {k, world()};
}

std::vector<Layout::Over> DistributedValue::groupings() const {
  std::vector<Layout::Over> out{Layout::Over::World};
  for (const auto &[over, groups] : axis_groups)
    out.push_back(over);
  return out;
}

namespace {
std::string_view axis_name(Layout::Over over) {
  switch (over) {
  case Layout::Over::TensorParallel:
    return "tensor-parallel";
  case Layout::Over::DataParallel:
    return "data-parallel";
  case Layout::Over::World:
    break;
  }
  return "";
}
} // namespace

std::string Layout::str() const {
  std::string group =
      over == Over::World ? "" : fmt::format(" over the {} group", axis_name(over));
  switch (kind) {
  case Kind::Replicated:
    return "replicated";
  case Kind::Sharded:
    return (stride == 1
                ? fmt::format("sharded along dim {}", dim)
                : fmt::format("sharded along dim {} with stride {}", dim, stride)) +
           group;
  case Kind::Scaled:
    return dim < 0 ? fmt::format("the reference times {} on every rank", factor.get_str())
                   : fmt::format("the rank's shard of the reference (dim {}{}) times {}",
                                 dim, group, factor.get_str());
  case Kind::PartialSum:
    return over == Over::World
               ? "a partial sum over ranks"
               : fmt::format("a partial sum over each {} group", axis_name(over));
  case Kind::None:
    return "unrelated to the reference";
  }
  return "?";
}

std::vector<Layout> candidate_layouts(const DistributedValue &value) {
  std::vector<Layout> out;
  bool all_same = true;
  for (const auto &shape : value.rank_shapes)
    all_same = all_same && shape == value.reference_shape;
  if (all_same) {
    out.push_back({Layout::Kind::Replicated});
    out.push_back({Layout::Kind::Scaled}); // even on one holder: wrongly averaged
    if (value.world() > 1)
      for (Layout::Over over : value.groupings())
        out.push_back({Layout::Kind::PartialSum, over});
    return out;
  }
  std::size_t sharded_from = out.size();
  const auto &ref = value.reference_shape;
  for (std::size_t d = 0; d < ref.size(); ++d)
    for (Layout::Over over : value.groupings()) {
      bool fits = true;
      for (int r = 0; r < value.world() && fits; ++r) {
        const auto &shape = value.rank_shapes[r];
        int count = value.shard_of(r, over).second;
        fits = shape.size() == ref.size();
        for (std::size_t e = 0; e < ref.size() && fits; ++e)
          fits = e == d ? shape[e] * count == ref[e] : shape[e] == ref[e];
      }
      if (fits)
        out.push_back({Layout::Kind::Sharded, over, static_cast<int>(d)});
    }
  for (std::size_t i = sharded_from, n = out.size(); i < n; ++i) {
    Layout scaled = out[i];
    scaled.kind = Layout::Kind::Scaled;
    out.push_back(scaled);
  }
  return out;
}

std::optional<Layout> expected_layout(const DistributedValue &value) {
  for (const Layout &l : candidate_layouts(value))
    if (l.acceptable())
      return l;
  return std::nullopt;
}

LayoutEquation layout_equation(terms::TermStore &store, const DistributedValue &value,
                               Layout layout) {
  LayoutEquation eq;
  switch (layout.kind) {
  case Layout::Kind::Scaled: {
    Layout base = layout;
    base.kind = layout.dim < 0 ? Layout::Kind::Replicated : Layout::Kind::Sharded;
    eq = layout_equation(store, value, base);
    TermId factor = store.constant(layout.factor);
    for (TermId &rhs : eq.rhs)
      rhs = store.mul(factor, rhs);
    break;
  }
  case Layout::Kind::Replicated:
    for (int r = 0; r < value.world(); ++r)
      for (std::size_t i = 0; i < value.reference.size(); ++i) {
        eq.lhs.push_back(value.ranks[r][i]);
        eq.rhs.push_back(value.reference[i]);
        eq.rows.push_back({r, i, i});
      }
    break;
  case Layout::Kind::Sharded:
    for (int r = 0; r < value.world(); ++r)
      for (std::size_t i = 0; i < value.ranks[r].size(); ++i) {
        auto [shard, count] = value.shard_of(r, layout.over);
        std::size_t ref = frontend::shard_to_reference_index(
            value.rank_shapes[r], layout.dim, layout.stride, shard, count, i);
        eq.lhs.push_back(value.ranks[r][i]);
        eq.rhs.push_back(value.reference.at(ref)); // a forced layout may not fit
        eq.rows.push_back({r, i, ref});
      }
    break;
  case Layout::Kind::PartialSum: {
    std::vector<std::vector<int>> groups{{}};
    for (int r = 0; r < value.world(); ++r)
      groups[0].push_back(r);
    if (value.has_axis(layout.over))
      groups = value.axis_groups.at(layout.over);
    for (const auto &group : groups)
      for (std::size_t i = 0; i < value.reference.size(); ++i) {
        TermId sum = store.zero();
        for (int r : group)
          sum = store.add(sum, value.ranks[r][i]);
        eq.lhs.push_back(sum);
        eq.rhs.push_back(value.reference[i]);
        eq.rows.push_back({-1, i, i});
      }
    break;
  }
  case Layout::Kind::None:
    break;
  }
  return eq;
}

std::optional<mpq_class> small_fraction(double value) {
  if (!std::isfinite(value))
    return std::nullopt;
  for (long den = 1; den <= 1024; ++den) {
    double num = std::round(value * static_cast<double>(den));
    if (std::fabs(num / static_cast<double>(den) - value) <=
        1e-9 * std::max(1.0, std::fabs(value)))
      return mpq_class(static_cast<long>(num), den);
  }
  return std::nullopt;
}

namespace {
// The constant c with rank value = c * (what `base` says it should be), read
// off the first element whose expected value is clearly nonzero; verified by
// the caller.
std::optional<mpq_class> measure_factor(terms::TermStore &store,
                                        const DistributedValue &value, Layout base) {
  base.kind = base.dim < 0 ? Layout::Kind::Replicated : Layout::Kind::Sharded;
  LayoutEquation eq = layout_equation(store, value, base);
  terms::DoubleEvaluator eval(
      store, [](TermId v) { return prover::sample_value(0xfac7, 0, v); });
  for (std::size_t i = 0; i < eq.lhs.size(); ++i) {
    auto ref = eval(eq.rhs[i]), got = eval(eq.lhs[i]);
    if (ref && got && std::fabs(*ref) > 1e-6) {
      auto factor = small_fraction(*got / *ref);
      if (factor && *factor != 1 && *factor != 0) // 0 is a lost value, not a scale
        return factor;
      return std::nullopt;
    }
  }
  return std::nullopt;
}
} // namespace

Layout infer_layout(terms::TermStore &store, const DistributedValue &value,
                    unsigned points) {
  for (Layout candidate : candidate_layouts(value)) {
    if (candidate.kind == Layout::Kind::Scaled) {
      auto factor = measure_factor(store, value, candidate);
      if (!factor)
        continue;
      candidate.factor = *factor;
    }
    LayoutEquation eq = layout_equation(store, value, candidate);
    bool holds = true;
    for (unsigned k = 0; k < points && holds; ++k)
      holds = !prover::first_difference(store, eq.lhs, eq.rhs, [&](TermId v) {
                 return prover::sample_value(0x1a7047, k, v);
               }).has_value();
    if (holds)
      return candidate;
  }
  return {Layout::Kind::None};
}

} // namespace shardproof::checkers

#include "checkers/layout.h"

#include "checkers/prover/prover.h"
#include "models/ir/linker.h"

#include "models/terms/evaluate.h"

#include <fmt/format.h>

#include <algorithm>
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

std::optional<std::vector<std::vector<int>>>
DistributedValue::summand_groups(Layout::Over over) const {
  std::vector<std::vector<int>> out;
  if (!has_axis(over)) {
    out.emplace_back();
    for (int k = 0; k < world(); ++k)
      out.back().push_back(k);
    return out;
  }
  for (const auto &group : axis_groups.at(over)) {
    auto &entries = out.emplace_back();
    for (int rank : group) {
      int k = 0;
      while (k < world() && rank_id(k) != rank)
        ++k;
      if (k == world())
        return std::nullopt;
      entries.push_back(k);
    }
  }
  return out;
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
  if (second_dim >= 0)
    group += fmt::format(" and along dim {} over the {} group", second_dim,
                         axis_name(second_over));
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
  case Kind::PartialSum: {
    std::string sum =
        over == Over::World
            ? "a partial sum over ranks"
            : fmt::format("a partial sum over each {} group", axis_name(over));
    if (dim >= 0)
      sum += fmt::format(" of the rank's shard along dim {} over the {} group", dim,
                         axis_name(shard_over));
    if (factor != 1)
      sum += fmt::format(" (the sum is {} times the reference)", factor.get_str());
    return sum;
  }
  case Kind::Rows:
    return reordered()
               ? "the reference's rows in another order"
               : "a block of the reference's rows, not the one this rank should hold";
  case Kind::None:
    return "unrelated to the reference";
  }
  return "?";
}

namespace {
// Whether every rank's shape is the reference's split along `dim` into the
// groups of `over`, and also along `second_dim` (if >= 0) into those of
// `second_over`.
bool shards_fit(const DistributedValue &value, int dim, Layout::Over over,
                int second_dim = -1, Layout::Over second_over = Layout::Over::World) {
  const auto &ref = value.reference_shape;
  for (int r = 0; r < value.world(); ++r) {
    const auto &shape = value.rank_shapes[r];
    if (shape.size() != ref.size())
      return false;
    for (int e = 0; e < static_cast<int>(ref.size()); ++e) {
      int count = e == dim          ? value.shard_of(r, over).second
                  : e == second_dim ? value.shard_of(r, second_over).second
                                    : 1;
      if (shape[e] * count != ref[e])
        return false;
    }
  }
  return true;
}

// Shards of shards: split along one dim over one parallel axis and along
// another dim over another axis (never the world, which holds both).
void add_two_axis_shards(const DistributedValue &value, std::vector<Layout> &out) {
  const int dims = static_cast<int>(value.reference_shape.size());
  for (const auto &[first, first_groups] : value.axis_groups)
    for (const auto &[second, second_groups] : value.axis_groups)
      for (int d1 = 0; d1 < dims; ++d1)
        for (int d2 = 0; d2 < dims; ++d2) {
          if (first == second || d1 == d2 || (first > second && d1 > d2))
            continue; // each (dim, axis) pair once
          if (!shards_fit(value, d1, first, d2, second))
            continue;
          Layout layout{Layout::Kind::Sharded, first, d1};
          layout.second_dim = d2;
          layout.second_over = second;
          out.push_back(layout);
        }
}
} // namespace

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
        if (value.summand_groups(over))
          out.push_back({Layout::Kind::PartialSum, over});
    return out;
  }
  std::size_t sharded_from = out.size();
  for (int d = 0; d < static_cast<int>(value.reference_shape.size()); ++d)
    for (Layout::Over over : value.groupings())
      if (shards_fit(value, d, over))
        out.push_back({Layout::Kind::Sharded, over, d});
  if (out.size() == sharded_from)
    add_two_axis_shards(value, out);
  std::size_t sharded_to = out.size();
  for (std::size_t i = sharded_from; i < sharded_to; ++i) {
    Layout scaled = out[i];
    scaled.kind = Layout::Kind::Scaled;
    out.push_back(scaled);
  }
  // Shards over one axis that still have to be summed over another.
  for (std::size_t i = sharded_from; i < sharded_to; ++i)
    for (const auto &[over, groups] : value.axis_groups) {
      const Layout &shard = out[i];
      if (shard.second_dim >= 0 || shard.over == Layout::Over::World ||
          over == shard.over || !value.summand_groups(over))
        continue;
      Layout partial{Layout::Kind::PartialSum, over, shard.dim, shard.stride};
      partial.shard_over = shard.over;
      out.push_back(partial);
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
        if (!value.owns(r, i))
          continue;
        eq.lhs.push_back(value.ranks[r][i]);
        eq.rhs.push_back(value.reference[i]);
        eq.rows.push_back({r, i, i});
      }
    break;
  case Layout::Kind::Sharded:
    for (int r = 0; r < value.world(); ++r) {
      auto [shard, count] = value.shard_of(r, layout.over);
      auto [second_shard, second_count] = value.shard_of(r, layout.second_over);
      ir::Shape shape = value.rank_shapes[r];
      if (layout.second_dim >= 0)
        shape[layout.second_dim] *= second_count;
      for (std::size_t i = 0; i < value.ranks[r].size(); ++i) {
        if (!value.owns(r, i))
          continue;
        std::size_t local = i; // first to the whole of the second dim
        if (layout.second_dim >= 0)
          local = ir::shard_to_reference_index(value.rank_shapes[r], layout.second_dim, 1,
                                               second_shard, second_count, i);
        std::size_t ref = ir::shard_to_reference_index(shape, layout.dim, layout.stride,
                                                       shard, count, local);
        eq.lhs.push_back(value.ranks[r][i]);
        eq.rhs.push_back(value.reference.at(ref)); // a forced layout may not fit
        eq.rows.push_back({r, i, ref});
      }
    }
    break;
  case Layout::Kind::PartialSum: {
    auto groups = value.summand_groups(layout.over);
    if (!groups) { // a group with members that do not hold the value: never holds
      eq.lhs.push_back(store.one());
      eq.rhs.push_back(store.zero());
      eq.rows.push_back({});
    }
    for (const auto &group : groups.value_or(std::vector<std::vector<int>>{})) {
      // A sum of shards: every member holds the same shard (the axes are
      // orthogonal), read off the group's first member.
      int first = group.front();
      auto [shard, count] = value.shard_of(first, layout.shard_over);
      for (std::size_t i = 0; i < value.ranks.at(first).size(); ++i) {
        std::size_t ref = i;
        if (layout.dim >= 0)
          ref = ir::shard_to_reference_index(value.rank_shapes[first], layout.dim,
                                             layout.stride, shard, count, i);
        TermId sum = store.zero();
        for (int r : group)
          sum = store.add(sum, value.ranks[r].at(i));
        eq.lhs.push_back(sum);
        eq.rhs.push_back(layout.factor == 1 ? value.reference.at(ref)
                                            : store.mul(store.constant(layout.factor),
                                                        value.reference.at(ref)));
        eq.rows.push_back({-1, i, ref});
      }
    }
    break;
  }
  case Layout::Kind::Rows: // a relation to locate bugs by, not an obligation
  case Layout::Kind::None:
    break;
  }
  return eq;
}

bool Layout::reordered() const {
  for (const auto &rank_rows : rows)
    for (std::size_t i = 1; i < rank_rows.size(); ++i)
      if (rank_rows[i] != rank_rows[i - 1] + 1)
        return true;
  return false;
}

std::optional<Layout> rows_of_reference(terms::TermStore &store,
                                        const DistributedValue &value,
                                        const prover::Seeds &seeds) {
  const ir::Shape &ref_shape = value.reference_shape;
  if (ref_shape.empty() || ref_shape[0] <= 0 || value.reference.empty())
    return std::nullopt;
  auto trailing_dims_match = [&](const ir::Shape &shape) {
    return shape.size() == ref_shape.size() &&
           std::equal(shape.begin() + 1, shape.end(), ref_shape.begin() + 1);
  };
  if (!std::all_of(value.rank_shapes.begin(), value.rank_shapes.end(),
                   trailing_dims_match))
    return std::nullopt;
  const std::size_t row = value.reference.size() / static_cast<std::size_t>(ref_shape[0]);
  constexpr unsigned kPoints = 2;
  std::vector<terms::DoubleEvaluator> evals;
  for (unsigned k = 0; k < kPoints; ++k)
    evals.emplace_back(
        store, [&, k](TermId v) { return prover::sample_value(seeds.rows, k, v); });
  auto same_row = [&](const std::vector<TermId> &local, std::size_t i, std::size_t j) {
    for (auto &eval : evals)
      for (std::size_t e = 0; e < row; ++e) {
        auto a = eval(local[i * row + e]), b = eval(value.reference[j * row + e]);
        if (!a || !b || !terms::nearly_equal(*a, *b))
          return false;
      }
    return true;
  };
  Layout layout{Layout::Kind::Rows};
  for (const auto &local : value.ranks) {
    auto &rank_rows = layout.rows.emplace_back();
    for (std::size_t i = 0; i * row < local.size(); ++i) {
      std::size_t j = 0;
      while (j < static_cast<std::size_t>(ref_shape[0]) && !same_row(local, i, j))
        ++j;
      if (j == static_cast<std::size_t>(ref_shape[0]))
        return std::nullopt;
      rank_rows.push_back(j);
    }
  }
  return layout;
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
                                        const DistributedValue &value, Layout base,
                                        std::uint64_t seed) {
  if (base.kind == Layout::Kind::Scaled)
    base.kind = base.dim < 0 ? Layout::Kind::Replicated : Layout::Kind::Sharded;
  base.factor = 1;
  LayoutEquation eq = layout_equation(store, value, base);
  terms::DoubleEvaluator eval(
      store, [seed](TermId v) { return prover::sample_value(seed, 0, v); });
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
                    const prover::Seeds &seeds, unsigned points) {
  auto holds = [&](const Layout &candidate) {
    LayoutEquation eq = layout_equation(store, value, candidate);
    for (unsigned k = 0; k < points; ++k)
      if (prover::first_difference(store, eq.lhs, eq.rhs, [&](TermId v) {
            return prover::sample_value(seeds.layout, k, v);
          }))
        return false;
    return true;
  };
  std::vector<Layout> sums;
  for (Layout candidate : candidate_layouts(value)) {
    if (candidate.kind == Layout::Kind::Scaled) {
      auto factor = measure_factor(store, value, candidate, seeds.scale);
      if (!factor)
        continue;
      candidate.factor = *factor;
    }
    if (holds(candidate))
      return candidate;
    if (candidate.kind == Layout::Kind::PartialSum)
      sums.push_back(candidate);
  }
  // Local means summed: a group's sum is the reference times a factor. Every
  // exact relation is tried first.
  for (Layout candidate : sums)
    if (auto factor = measure_factor(store, value, candidate, seeds.scale)) {
      candidate.factor = *factor;
      if (holds(candidate))
        return candidate;
    }
  return {Layout::Kind::None};
}

} // namespace shardproof::checkers

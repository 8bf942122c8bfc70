#include "analyzer/layout_inference.h"
#include "models/ir/linker.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace shardproof::analyzer {

using prover::Verdict;

bool CheckRun::refutes() const {
  return std::any_of(findings.begin(), findings.end(), [](const auto &f) {
    return f.severity == checkers::Severity::Error;
  });
}

namespace {
std::size_t refuted_count(const CheckRun &run) {
  return static_cast<std::size_t>(
      std::count_if(run.obligations.begin(), run.obligations.end(), [](const auto &o) {
        return o.verdict.kind == Verdict::Kind::Refuted;
      }));
}

std::string module_of(const std::string &parameter) {
  auto dot = parameter.rfind('.');
  return dot == std::string::npos ? "" : parameter.substr(0, dot);
}

// The sharded parameters one layout choice covers: a module's parameters
// sharded along the same dim with the same extent (a column-parallel
// linear's weight and bias split the same output features).
struct ShardGroup {
  std::string module;
  int dim = 0;
  std::int64_t extent = 0;
  auto operator<=>(const ShardGroup &) const = default;
};

std::optional<ShardGroup> group_of(const ir::Leaf &leaf) {
  if (leaf.role != ir::LeafRole::Parameter || leaf.partition_dim < 0 ||
      leaf.partition_dim >= static_cast<int>(leaf.shape.size()) || leaf.shard_count < 2)
    return std::nullopt;
  return ShardGroup{module_of(leaf.name), leaf.partition_dim,
                    leaf.shape[leaf.partition_dim]};
}

// Groups of the sharded parameters whose gradients are refuted
// ("gradient: 'fc1.weight' is ..."), in the order of the obligations.
std::vector<ShardGroup> suspect_groups(const CheckRun &run, const ir::Trace &rank) {
  std::vector<ShardGroup> groups;
  const std::string prefix = "gradient: '";
  for (const auto &o : run.obligations) {
    if (o.verdict.kind != Verdict::Kind::Refuted || !o.name.starts_with(prefix))
      continue;
    std::string name =
        o.name.substr(prefix.size(), o.name.find('\'', prefix.size()) - prefix.size());
    for (const auto &leaf : rank.leaves)
      if (auto group = group_of(leaf);
          group && leaf.name == name &&
          std::find(groups.begin(), groups.end(), *group) == groups.end())
        groups.push_back(*group);
  }
  return groups;
}

// Strides 2..4 other than the declared one that split the group evenly.
std::vector<int> candidate_strides(const ir::Trace &rank, const ShardGroup &group) {
  std::vector<int> out;
  for (int stride = 2; stride <= 4; ++stride) {
    bool taken =
        std::any_of(rank.leaves.begin(), rank.leaves.end(), [&](const auto &leaf) {
          return group_of(leaf) == group && leaf.partition_stride == stride;
        });
    if (group.extent % stride == 0 && !taken)
      out.push_back(stride);
  }
  return out;
}

std::vector<ir::Trace> with_stride(std::vector<ir::Trace> ranks, const ShardGroup &group,
                                   int stride) {
  for (auto &trace : ranks)
    for (auto &leaf : trace.leaves)
      if (group_of(leaf) == group)
        leaf.partition_stride = stride;
  return ranks;
}
} // namespace

std::optional<LayoutInference> infer_parameter_layouts(std::vector<ir::Trace> ranks,
                                                       const CheckRun &first,
                                                       const RunChecks &run,
                                                       int max_tries) {
  if (ranks.empty())
    return std::nullopt;
  const std::vector<ir::Trace> declared = ranks;
  CheckRun best = first;
  std::set<ShardGroup> changed;
  int tries = 0;
  for (const ShardGroup &group : suspect_groups(first, ranks[0])) {
    for (int stride : candidate_strides(ranks[0], group)) {
      if (tries++ >= max_tries)
        break;
      auto trial = with_stride(ranks, group, stride);
      CheckRun result = run(trial);
      if (refuted_count(result) < refuted_count(best)) {
        ranks = std::move(trial);
        best = std::move(result);
        changed.insert(group);
        break;
      }
    }
    if (!best.refutes() || tries >= max_tries)
      break;
  }
  if (changed.empty() || best.refutes())
    return std::nullopt;
  LayoutInference inference{{}, std::move(best)};
  for (std::size_t i = 0; i < ranks[0].leaves.size(); ++i) {
    const ir::Leaf &leaf = ranks[0].leaves[i];
    if (auto group = group_of(leaf); group && changed.contains(*group))
      inference.layouts.push_back({leaf.name, leaf.partition_dim,
                                   declared[0].leaves[i].partition_stride,
                                   leaf.partition_stride, leaf.loc});
  }
  return inference;
}

checkers::Finding inferred_layout_finding(const InferredLayout &layout) {
  auto describe = [&](int stride) {
    return stride == 1
               ? fmt::format("one contiguous block per rank along dim {}", layout.dim)
               : fmt::format("{} interleaved pieces per rank along dim {}", stride,
                             layout.dim);
  };
  checkers::Finding f = checkers::Finding::of(
      checkers::RuleCode::InferredLayout, layout.loc,
      fmt::format("parameter '{}' is declared as {} (partition_stride {}), but the "
                  "ranks compute the reference only with {} (partition_stride {})",
                  layout.parameter, describe(layout.declared_stride),
                  layout.declared_stride, describe(layout.stride), layout.stride));
  f.details.push_back(fmt::format(
      "The obligations are proved under partition_stride {}; a checkpoint converter or "
      "an initialisation from a single-device model must shard it that way",
      layout.stride));
  return f;
}

namespace {
std::size_t unproved_count(const CheckRun &run) {
  return static_cast<std::size_t>(
      std::count_if(run.obligations.begin(), run.obligations.end(), [](const auto &o) {
        return o.verdict.kind != Verdict::Kind::Proved;
      }));
}

using Shard = ir::ShardFit;

std::vector<ir::Trace> with_shard(std::vector<ir::Trace> ranks, const std::string &name,
                                  Shard shard) {
  for (auto &trace : ranks)
    for (auto &leaf : trace.leaves)
      if (leaf.role == ir::LeafRole::Parameter && leaf.name == name) {
        leaf.partition_dim = shard.dim;
        leaf.partition_stride = shard.stride;
      }
  return ranks;
}
} // namespace

std::optional<BoundByTrace>
bind_unmatched_parameters(std::vector<ir::Trace> ranks, const ir::Trace &reference,
                          const CheckRun &first, const RunChecks &run, int max_tries) {
  if (ranks.empty() || first.refutes())
    return std::nullopt;
  // The unmatched parameters, by name, with the shards their shape fits (the
  // same on every rank that holds them, or the parameter is left alone).
  std::vector<std::pair<const ir::Leaf *, std::vector<Shard>>> unmatched;
  std::set<std::string> seen;
  for (const auto &trace : ranks)
    for (const auto &leaf : trace.leaves) {
      // partition_dim -2: made from a part of a whole that is not its shard
      // (the driver's reading of its initialisation), which no binding fixes.
      if (leaf.role != ir::LeafRole::Parameter || leaf.partition_dim != -1 ||
          !seen.insert(leaf.name).second)
        continue;
      auto ref = std::find_if(
          reference.leaves.begin(), reference.leaves.end(),
          [&](const ir::Leaf &r) { return r.role == leaf.role && r.name == leaf.name; });
      if (ref == reference.leaves.end() || ref->shape == leaf.shape)
        continue;
      auto fits = ir::shards_fitting(leaf, ref->shape);
      if (!fits.empty())
        unmatched.push_back({&leaf, std::move(fits)});
    }
  if (unmatched.empty())
    return std::nullopt;
  BoundByTrace bound{ranks, {}};
  CheckRun current = first;
  int tries = 0;
  for (const auto &[leaf, fits] : unmatched) {
    std::vector<Shard> consistent;
    std::optional<CheckRun> chosen;
    std::size_t best = unproved_count(current);
    for (const Shard &shard : fits) {
      if (tries++ >= max_tries)
        return std::nullopt; // not every choice was tried: nothing is unique
      CheckRun result = run(with_shard(bound.ranks, leaf->name, shard));
      if (result.refutes() || unproved_count(result) > best)
        continue;
      if (unproved_count(result) < best) {
        best = unproved_count(result);
        consistent.clear();
      }
      if (best < unproved_count(current)) {
        consistent.push_back(shard);
        chosen = std::move(result);
      }
    }
    if (consistent.size() != 1)
      continue; // none, or not unique: the parameter stays unmatched
    bound.ranks = with_shard(bound.ranks, leaf->name, consistent[0]);
    current = std::move(*chosen);
    checkers::Finding f = checkers::Finding::of(
        checkers::RuleCode::InferredLayout, leaf->loc,
        fmt::format(
            "parameter '{}' carries nothing that says which shard of the "
            "reference's it holds; {} dim {} with partition_stride {} makes the "
            "step compute the reference: it is bound so",
            leaf->name,
            fits.size() == 1
                ? std::string("its shape fits one shard, and")
                : fmt::format("of the {} shards its shape fits, only", fits.size()),
            consistent[0].dim, consistent[0].stride));
    f.details.push_back(
        "a checkpoint converter or an initialisation from a single-device model must "
        "shard it that way");
    bound.notes.push_back(std::move(f));
  }
  if (bound.notes.empty())
    return std::nullopt;
  return bound;
}

} // namespace shardproof::analyzer

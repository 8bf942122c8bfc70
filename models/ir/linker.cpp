#include "models/ir/linker.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <unordered_map>

namespace shardproof::ir {

using terms::TermId;

namespace {
struct PlaceholderSite {
  const ir::Collective *call; // on the rank that owns the placeholder
  std::size_t element;
  bool resolvable; // false past a mismatch in its group
};
} // namespace

// A group's collectives, or the point-to-point messages from group[0] to
// group[1]: each numbered on its own.
using Channel = std::pair<std::vector<int>, bool>;
Channel channel_of(const ir::Collective &c) {
  return {c.group, c.kind == ir::CollectiveKind::SendRecv};
}

struct LinkedProgram::Impl {
  std::vector<std::unique_ptr<terms::Substitution>> substitutions;
  std::unordered_map<TermId, PlaceholderSite> placeholders;
  // channel -> per rank (by global rank) -> its calls on it, in order
  std::map<Channel, std::map<int, std::vector<const ir::Collective *>>> calls;
};

std::size_t shard_to_reference_index(const ir::Shape &local_shape, int dim, int stride,
                                     int shard, int count, std::size_t local) {
  std::vector<std::int64_t> index(local_shape.size());
  std::size_t rest = local;
  for (std::size_t d = local_shape.size(); d-- > 0;) {
    index[d] = static_cast<std::int64_t>(rest % local_shape[d]);
    rest /= static_cast<std::size_t>(local_shape[d]);
  }
  std::int64_t local_extent = local_shape[dim];
  std::int64_t piece = local_extent / std::max(stride, 1);
  std::int64_t j = index[dim];
  // The local extent is `stride` pieces: piece c of rank r is global piece c*count + r.
  index[dim] = ((j / piece) * count + shard) * piece + j % piece;
  std::size_t flat = 0;
  for (std::size_t d = 0; d < local_shape.size(); ++d) {
    std::int64_t extent =
        d == static_cast<std::size_t>(dim) ? local_extent * count : local_shape[d];
    flat = flat * static_cast<std::size_t>(extent) + static_cast<std::size_t>(index[d]);
  }
  return flat;
}

LinkedProgram::LinkedProgram(terms::TermStore &store, const ir::Trace &reference,
                             const std::vector<ir::Trace> &ranks)
    : store_(store), reference_(reference), ranks_(ranks),
      impl_(std::make_unique<Impl>()) {
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    auto sub = std::make_unique<terms::Substitution>(store);
    int rank = static_cast<int>(r);
    sub->set_resolver([this, rank](TermId var) {
      return store_.variable(var).kind == terms::VarKind::Placeholder ? resolve(rank, var)
                                                                      : var;
    });
    impl_->substitutions.push_back(std::move(sub));
    bind_leaves(rank);
  }
  match_collectives();
}

LinkedProgram::~LinkedProgram() = default;

namespace {
const Leaf *same_leaf(const Trace &reference, const Leaf &leaf) {
  for (const Leaf &ref : reference.leaves)
    if (ref.role == leaf.role && ref.name == leaf.name)
      return &ref;
  return nullptr;
}

// Whether `leaf` is one shard of a reference leaf of shape `whole` along its
// partition_dim.
bool is_shard_of(const Leaf &leaf, const Shape &whole) {
  if (leaf.partition_dim < 0 ||
      leaf.partition_dim >= static_cast<int>(leaf.shape.size()) ||
      leaf.shape.size() != whole.size())
    return false;
  for (std::size_t d = 0; d < leaf.shape.size(); ++d) {
    auto count = static_cast<int>(d) == leaf.partition_dim ? leaf.shard_count : 1;
    if (leaf.shape[d] * count != whole[d])
      return false;
  }
  return true;
}
} // namespace

std::vector<ShardFit> shards_fitting(const Leaf &leaf, const Shape &whole) {
  std::vector<ShardFit> fits;
  if (leaf.shape.size() != whole.size() || leaf.shard_count < 2)
    return fits;
  for (std::size_t d = 0; d < whole.size(); ++d) {
    bool rest_equal = true;
    for (std::size_t e = 0; e < whole.size(); ++e)
      rest_equal = rest_equal && (e == d || leaf.shape[e] == whole[e]);
    if (!rest_equal || leaf.shape[d] * leaf.shard_count != whole[d])
      continue;
    for (std::int64_t stride = 1; stride <= leaf.shape[d]; ++stride)
      if (leaf.shape[d] % stride == 0)
        fits.push_back({static_cast<int>(d), static_cast<int>(stride)});
  }
  return fits;
}

namespace {
// The shards (dim, stride) of `whole` a leaf's shape alone fits, as a note:
// with more than one, which the rank holds is not known.
std::string shards_that_fit(const Leaf &leaf, const Shape &whole) {
  std::vector<std::string> fits;
  for (const ShardFit &fit : shards_fitting(leaf, whole))
    fits.push_back(fmt::format("dim {} stride {}", fit.dim, fit.stride));
  if (fits.empty())
    return "";
  return fmt::format("; its shape fits {} shard{} of {} ({})", fits.size(),
                     fits.size() == 1 ? "" : "s", leaf.shard_count,
                     fmt::join(fits, ", "));
}
} // namespace

LeafCounterpart counterpart_in(const Trace &reference, const Leaf &leaf) {
  LeafCounterpart found{same_leaf(reference, leaf), std::nullopt};
  if (!found.reference)
    return found;
  const bool same_shape = leaf.shape == found.reference->shape;
  if (!same_shape && !is_shard_of(leaf, found.reference->shape))
    return found;
  auto &positions = found.positions.emplace(leaf.elements.size());
  for (std::size_t i = 0; i < positions.size(); ++i)
    positions[i] = same_shape
                       ? i
                       : shard_to_reference_index(leaf.shape, leaf.partition_dim,
                                                  leaf.partition_stride, leaf.shard_index,
                                                  leaf.shard_count, i);
  return found;
}

void LinkedProgram::bind_leaves(int rank) {
  terms::Substitution &sub = *impl_->substitutions[rank];
  for (const ir::Leaf &leaf : ranks_[rank].leaves) {
    const LeafCounterpart counterpart = counterpart_in(reference_, leaf);
    if (counterpart.positions) {
      for (std::size_t i = 0; i < leaf.elements.size(); ++i)
        sub.bind(leaf.elements[i],
                 counterpart.reference->elements[(*counterpart.positions)[i]]);
      continue;
    }
    // Inputs created at a rank-local shape stay free: proofs that need them
    // become "could not prove", never "proved".
    if (leaf.role != ir::LeafRole::Parameter)
      continue;
    const ir::Leaf *ref = counterpart.reference;
    unbound_.push_back(
        {rank, leaf.loc,
         !ref ? fmt::format("rank {}: parameter '{}' has no counterpart in the reference",
                            rank, leaf.name)
         : leaf.partition_dim == -2
             ? fmt::format("rank {}: parameter '{}' has shape {} but {} in the "
                           "reference, and the part of a whole tensor it was made "
                           "from (its initialisation) is not this rank's shard of it",
                           rank, leaf.name, ir::shape_str(leaf.shape),
                           ir::shape_str(ref->shape))
         : leaf.partition_dim >= 0
             ? fmt::format("rank {}: parameter '{}' has shape {} but {} in the "
                           "reference, and its partition_dim does not explain it",
                           rank, leaf.name, ir::shape_str(leaf.shape),
                           ir::shape_str(ref->shape))
             : fmt::format("rank {}: parameter '{}' has shape {} but {} in the "
                           "reference, and nothing says which shard of it it holds "
                           "(no partition_dim, no metadata of the framework's "
                           "naming its slices, not re-pointed at part of a tensor "
                           "the entry made whole){}",
                           rank, leaf.name, ir::shape_str(leaf.shape),
                           ir::shape_str(ref->shape),
                           shards_that_fit(leaf, ref->shape))});
  }
}

namespace {
// A shape without its dimensions of size 1: two shapes that agree on it
// hold the same elements in the same row-major order.
ir::Shape squeezed(const ir::Shape &shape) {
  ir::Shape kept;
  std::copy_if(shape.begin(), shape.end(), std::back_inserter(kept),
               [](std::int64_t d) { return d != 1; });
  return kept;
}

// Collectives that combine or copy their buffers element by element, in flat
// order, whatever shape each rank views them in (a scalar and a [1] tensor
// all-reduce as one element: NCCL sees counts, not shapes).
bool elementwise(ir::CollectiveKind kind) {
  using K = ir::CollectiveKind;
  return kind == K::AllReduce || kind == K::Broadcast || kind == K::Reduce ||
         kind == K::SendRecv;
}

// Members of a group must carry the same dtype and shape (an elementwise
// collective the same elements); an all-to-all with uneven splits sends a
// different number of rows from each member, so only its rows' shape must
// agree.
bool same_payload(const ir::Collective &a, const ir::Collective &b) {
  if (a.dtype != b.dtype)
    return false;
  // A message moves its elements in flat order, as many as the receive
  // buffer holds, whatever shape each side views them in (gloo and NCCL
  // count elements: nanotron receives into a flat buffer it then views at
  // the sent shape).
  if (a.kind == ir::CollectiveKind::SendRecv && b.kind == a.kind)
    return ir::element_count(a.input_shape) == ir::element_count(b.input_shape);
  if (elementwise(a.kind) && a.kind == b.kind)
    return squeezed(a.input_shape) == squeezed(b.input_shape);
  // Only a scatter's root sends: the members agree on what each receives.
  if (a.kind == ir::CollectiveKind::Scatter)
    return a.output_shape == b.output_shape;
  bool uneven = !a.input_splits.empty() || !b.input_splits.empty();
  if (a.kind != ir::CollectiveKind::AllToAll || !uneven)
    return a.input_shape == b.input_shape;
  return a.input_shape.size() == b.input_shape.size() &&
         std::equal(
             a.input_shape.begin() + std::min<std::size_t>(1, a.input_shape.size()),
             a.input_shape.end(),
             b.input_shape.begin() + std::min<std::size_t>(1, b.input_shape.size()));
}

// Collectives with one root, which every member must name alike.
bool rooted(ir::CollectiveKind kind) {
  using K = ir::CollectiveKind;
  return kind == K::Broadcast || kind == K::Reduce || kind == K::Gather ||
         kind == K::Scatter || kind == K::SendRecv;
}

// Rows member i sends to member j of an all-to-all (even splits when none
// were given).
std::int64_t rows_sent(const ir::Collective &call, std::size_t to, std::size_t members) {
  if (!call.input_splits.empty())
    return call.input_splits.at(to);
  return call.input_shape.empty()
             ? 0
             : call.input_shape[0] / static_cast<std::int64_t>(members);
}
std::int64_t rows_received(const ir::Collective &call, std::size_t from,
                           std::size_t members) {
  if (!call.output_splits.empty())
    return call.output_splits.at(from);
  return call.output_shape.empty()
             ? 0
             : call.output_shape[0] / static_cast<std::int64_t>(members);
}

// Why call #k of an all-to-all does not fit together: a member expects other
// row counts than its peers send. Empty when it does. A member whose trace
// stopped before call #k (a partial pass) is compared once it has it.
std::string split_mismatch(const std::vector<int> &group,
                           std::map<int, std::vector<const ir::Collective *>> &per_rank,
                           std::size_t k) {
  for (std::size_t i = 0; i < group.size(); ++i)
    for (std::size_t j = 0; j < group.size(); ++j) {
      if (k >= per_rank[group[i]].size() || k >= per_rank[group[j]].size())
        continue;
      const ir::Collective &from = *per_rank[group[i]].at(k);
      const ir::Collective &to = *per_rank[group[j]].at(k);
      std::int64_t sent = rows_sent(from, j, group.size());
      std::int64_t expected = rows_received(to, i, group.size());
      if (sent != expected)
        return fmt::format("all_to_all #{} on group {}: rank {} sends {} rows to rank "
                           "{}, which expects {}",
                           k, group, group[i], sent, group[j], expected);
    }
  return "";
}
} // namespace

void LinkedProgram::match_collectives() {
  for (const ir::Trace &trace : ranks_)
    for (const ir::Collective &c : trace.collectives)
      impl_->calls[channel_of(c)][trace.rank].push_back(&c);

  for (auto &[channel, per_rank] : impl_->calls) {
    const std::vector<int> &group = channel.first;
    const bool messages = channel.second;
    // Every member must issue the same sequence: kind, reduce op, shapes, dtype.
    std::size_t agreed = SIZE_MAX;
    for (int member : group) {
      if (member < 0 || member >= world()) {
        mismatches_.push_back({group,
                               0,
                               member,
                               member,
                               {},
                               {},
                               fmt::format("group {} names rank {}, outside the "
                                           "world of {}",
                                           group, member, world())});
        agreed = 0;
      }
    }
    const int first = group.front();
    const auto &base = per_rank[first];
    for (int member : group) {
      if (member < 0 || member >= world())
        continue;
      const auto &mine = per_rank[member];
      std::size_t n = std::max(base.size(), mine.size());
      for (std::size_t k = 0; k < n && k < agreed; ++k) {
        const ir::Collective *a = k < base.size() ? base[k] : nullptr;
        const ir::Collective *b = k < mine.size() ? mine[k] : nullptr;
        std::string why;
        if (messages && (!a || !b))
          why = a ? fmt::format("rank {} sends message #{} to rank {}, which never "
                                "receives it",
                                first, k, member)
                  : fmt::format("rank {} waits for message #{} from rank {}, which never "
                                "sends it",
                                member, k, first);
        else if (!a || !b)
          why = fmt::format("rank {} issues collective #{} on group {} but rank {} "
                            "does not",
                            a ? first : member, k, group, a ? member : first);
        else if (messages && !same_payload(*a, *b))
          why = fmt::format("message #{} from rank {} to rank {} is {} {} as sent but "
                            "{} {} in the receive buffer",
                            k, first, member, ir::dtype_name(a->dtype),
                            ir::shape_str(a->input_shape), ir::dtype_name(b->dtype),
                            ir::shape_str(b->input_shape));
        else if (a->kind != b->kind || a->op != b->op)
          why = fmt::format(
              "collective #{} on group {} is {}({}) on rank {} but "
              "{}({}) on rank {}",
              k, group, ir::collective_name(a->kind), ir::reduce_op_name(a->op), first,
              ir::collective_name(b->kind), ir::reduce_op_name(b->op), member);
        else if (!same_payload(*a, *b))
          why = fmt::format(
              "collective #{} on group {} carries {} {} on rank {} but "
              "{} {} on rank {}",
              k, group, ir::dtype_name(a->dtype), ir::shape_str(a->input_shape), first,
              ir::dtype_name(b->dtype), ir::shape_str(b->input_shape), member);
        else if (rooted(a->kind) && a->src != b->src)
          why = fmt::format("{} #{} on group {} has root {} on rank {} but {} on "
                            "rank {}",
                            ir::collective_name(a->kind), k, group, a->src, first, b->src,
                            member);
        else if (a->kind == ir::CollectiveKind::AllToAll)
          why = split_mismatch(group, per_rank, k);
        if (!why.empty()) {
          const ir::Collective *site = a ? a : b;
          const ir::Collective *other = a && b ? b : nullptr;
          mismatches_.push_back({group, static_cast<int>(k), a ? first : member,
                                 a ? member : first, site->loc,
                                 other ? other->loc : ir::SourceLoc{}, why});
          agreed = k;
        }
      }
    }
    for (auto &[rank, calls] : per_rank)
      for (std::size_t k = 0; k < calls.size(); ++k)
        for (std::size_t e = 0; e < calls[k]->outputs.size(); ++e)
          impl_->placeholders[calls[k]->outputs[e]] = {calls[k], e, k < agreed};
  }
}

TermId LinkedProgram::resolve(int rank, TermId placeholder) {
  auto it = impl_->placeholders.find(placeholder);
  if (it == impl_->placeholders.end() || !it->second.resolvable)
    return placeholder; // stays a placeholder: blocks any proof that needs it
  const ir::Collective &call = *it->second.call;
  const std::size_t e = it->second.element;
  const auto &group = call.group;
  const auto &per_rank = impl_->calls[channel_of(call)];
  const int k = static_cast<int>(group.size());
  const int me =
      static_cast<int>(std::find(group.begin(), group.end(), rank) - group.begin());
  auto input_of = [&](int member_index, std::size_t element) {
    int member = group[member_index];
    const ir::Collective &theirs = *per_rank.at(member)[call.sequence];
    return linked(member, theirs.inputs.at(element));
  };
  auto reduce = [&](std::size_t element) {
    TermId acc = input_of(0, element);
    for (int j = 1; j < k; ++j) {
      TermId x = input_of(j, element);
      switch (call.op) {
      case ir::ReduceOp::Sum:
      case ir::ReduceOp::Avg:
        acc = store_.add(acc, x);
        break;
      case ir::ReduceOp::Max:
        acc = store_.max(acc, x);
        break;
      case ir::ReduceOp::Min:
        acc = store_.min(acc, x);
        break;
      case ir::ReduceOp::Product:
        acc = store_.mul(acc, x);
        break;
      }
    }
    if (call.op == ir::ReduceOp::Avg)
      acc = store_.mul(store_.constant(mpq_class(1, k)), acc);
    return acc;
  };
  const std::size_t n_in = call.inputs.size();
  switch (call.kind) {
  case ir::CollectiveKind::AllReduce:
    return reduce(e);
  case ir::CollectiveKind::AllGather:
    return input_of(static_cast<int>(e / n_in), e % n_in);
  case ir::CollectiveKind::ReduceScatter: {
    std::size_t n_out = call.outputs.size();
    return reduce(static_cast<std::size_t>(me) * n_out + e);
  }
  case ir::CollectiveKind::AllToAll: {
    // Output rows come from each member in group order; member j's rows for
    // this rank follow the rows it sends to the members before it.
    std::size_t row_size = 1;
    for (std::size_t d = 1; d < call.output_shape.size(); ++d)
      row_size *= static_cast<std::size_t>(call.output_shape[d]);
    std::size_t row = e / row_size, first = 0;
    for (int j = 0; j < k; ++j) {
      auto received = static_cast<std::size_t>(rows_received(call, j, group.size()));
      if (row < first + received) {
        const ir::Collective &theirs = *per_rank.at(group[j])[call.sequence];
        std::size_t offset = 0;
        for (int m = 0; m < me; ++m)
          offset += static_cast<std::size_t>(rows_sent(theirs, m, group.size()));
        return input_of(j, (offset + row - first) * row_size + e % row_size);
      }
      first += received;
    }
    return placeholder;
  }
  case ir::CollectiveKind::Reduce: // only the root has outputs
    return reduce(e);
  case ir::CollectiveKind::Gather: // only the root has outputs
    return input_of(static_cast<int>(e / n_in), e % n_in);
  case ir::CollectiveKind::Broadcast:
  case ir::CollectiveKind::SendRecv: // only the receiver has outputs
  case ir::CollectiveKind::Scatter: {
    auto src = std::find(group.begin(), group.end(), call.src);
    if (src == group.end())
      return placeholder;
    std::size_t offset = call.kind == ir::CollectiveKind::Scatter
                             ? static_cast<std::size_t>(me) * call.outputs.size()
                             : 0;
    return input_of(static_cast<int>(src - group.begin()), offset + e);
  }
  }
  return placeholder;
}

TermId LinkedProgram::linked(int rank, TermId term) {
  return impl_->substitutions[rank]->apply(term);
}

std::vector<TermId> LinkedProgram::linked(int rank, std::span<const TermId> terms) {
  std::vector<TermId> out;
  out.reserve(terms.size());
  for (TermId t : terms)
    out.push_back(linked(rank, t));
  return out;
}

} // namespace shardproof::ir

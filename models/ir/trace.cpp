#include "models/ir/trace.h"

#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <utility>

namespace shardproof::ir {

namespace {
template <typename E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N> &table,
                         E value) {
  for (const auto &[e, name] : table)
    if (e == value)
      return name;
  return "?";
}
template <typename E, std::size_t N>
std::optional<E> value_of(const std::array<std::pair<E, std::string_view>, N> &table,
                          std::string_view name) {
  for (const auto &[e, n] : table)
    if (n == name)
      return e;
  return std::nullopt;
}

constexpr std::array<std::pair<DType, std::string_view>, 8> kDTypes{{
    {DType::Float64, "float64"},
    {DType::Float32, "float32"},
    {DType::Float16, "float16"},
    {DType::BFloat16, "bfloat16"},
    {DType::Int64, "int64"},
    {DType::Int32, "int32"},
    {DType::Bool, "bool"},
    {DType::Other, "other"},
}};
constexpr std::array<std::pair<OpCategory, std::string_view>, 11> kCategories{{
    {OpCategory::Leaf, "leaf"},
    {OpCategory::Elementwise, "elementwise"},
    {OpCategory::Matmul, "matmul"},
    {OpCategory::Reduction, "reduction"},
    {OpCategory::View, "view"},
    {OpCategory::Index, "index"},
    {OpCategory::Softmax, "softmax"},
    {OpCategory::Activation, "activation"},
    {OpCategory::Collective, "collective"},
    {OpCategory::Custom, "custom"},
    {OpCategory::Other, "other"},
}};
constexpr std::array<std::pair<CollectiveKind, std::string_view>, 9> kCollectives{{
    {CollectiveKind::AllReduce, "all_reduce"},
    {CollectiveKind::AllGather, "all_gather"},
    {CollectiveKind::ReduceScatter, "reduce_scatter"},
    {CollectiveKind::AllToAll, "all_to_all"},
    {CollectiveKind::Broadcast, "broadcast"},
    {CollectiveKind::Reduce, "reduce"},
    {CollectiveKind::Gather, "gather"},
    {CollectiveKind::Scatter, "scatter"},
    {CollectiveKind::SendRecv, "send_recv"},
}};
constexpr std::array<std::pair<ReduceOp, std::string_view>, 5> kReduceOps{{
    {ReduceOp::Sum, "sum"},
    {ReduceOp::Avg, "avg"},
    {ReduceOp::Max, "max"},
    {ReduceOp::Min, "min"},
    {ReduceOp::Product, "product"},
}};
template <typename E, std::size_t N>
std::vector<std::string_view>
names_of(const std::array<std::pair<E, std::string_view>, N> &table) {
  std::vector<std::string_view> names;
  for (const auto &entry : table)
    names.push_back(entry.second);
  return names;
}
} // namespace

std::vector<std::string_view> dtype_names() { return names_of(kDTypes); }
std::vector<std::string_view> category_names() { return names_of(kCategories); }
std::vector<std::string_view> collective_names() { return names_of(kCollectives); }
std::vector<std::string_view> reduce_op_names() { return names_of(kReduceOps); }

std::string SourceLoc::str() const {
  if (line <= 0)
    return file;
  return column > 0 ? fmt::format("{}:{}:{}", file, line, column)
                    : fmt::format("{}:{}", file, line);
}

std::string_view dtype_name(DType dtype) { return name_of(kDTypes, dtype); }
DType dtype_from_name(std::string_view name) {
  return value_of(kDTypes, name).value_or(DType::Other);
}
std::string_view category_name(OpCategory c) { return name_of(kCategories, c); }
std::optional<OpCategory> category_from_name(std::string_view name) {
  return value_of(kCategories, name);
}
std::string_view collective_name(CollectiveKind k) { return name_of(kCollectives, k); }

bool is_reduction(CollectiveKind k) {
  return k == CollectiveKind::AllReduce || k == CollectiveKind::ReduceScatter ||
         k == CollectiveKind::Reduce;
}
std::optional<CollectiveKind> collective_from_name(std::string_view name) {
  return value_of(kCollectives, name);
}
std::string_view reduce_op_name(ReduceOp op) { return name_of(kReduceOps, op); }
std::optional<ReduceOp> reduce_op_from_name(std::string_view name) {
  return value_of(kReduceOps, name);
}

KnownCollectiveKey known_collective_key(std::vector<int> group, int sequence,
                                        bool message) {
  if (message)
    group.insert(group.begin(), -1);
  return {std::move(group), sequence};
}

NodeId Trace::add_node(Node node) {
  node.id = static_cast<NodeId>(nodes.size());
  nodes.push_back(std::move(node));
  return nodes.back().id;
}

std::int64_t element_count(const Shape &shape) {
  std::int64_t n = 1;
  for (auto d : shape)
    n *= d;
  return n;
}

std::string shape_str(const Shape &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string index_str(const Shape &shape, std::size_t flat) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = static_cast<std::int64_t>(flat) % shape[d];
    flat /= static_cast<std::size_t>(shape[d]);
  }
  return fmt::format("[{}]", fmt::join(index, ","));
}

} // namespace shardproof::ir

// The tensor IR: what one simulated rank (or the reference) executed. Every
// value is a node with shape, dtype, the user source line that created it and
// its elements as terms; collectives are recorded with their group and their
// per-group sequence number, and resolved when ranks are linked.
#pragma once

#include "models/terms/term_store.h"
#include "models/terms/witness.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace shardproof::ir {

using terms::TermId;
using NodeId = std::uint32_t;
using Shape = std::vector<std::int64_t>;

struct SourceLoc {
  std::string file;
  int line = 0;
  int column = 0; // 1-based; 0 when unknown
  std::string function;
  // A line of the recipe that drives an analysed framework tree, not of the
  // tree: never a finding's primary location (the frontend marks it).
  bool harness = false;
  std::string str() const; // "file:line" or "file:line:col"
  bool operator==(const SourceLoc &) const = default;
};

enum class DType { Float64, Float32, Float16, BFloat16, Int64, Int32, Bool, Other };
std::string_view dtype_name(DType dtype);
DType dtype_from_name(std::string_view name);

enum class OpCategory {
  Leaf,        // parameter, input or constant
  Elementwise, // arithmetic, comparisons, where, masked fill
  Matmul,      // matmul, linear, bmm, einsum
  Reduction,   // sum, mean, max, norm
  View,        // view, reshape, transpose, permute, slice, split, chunk, expand
  Index,       // gather by index, embedding, cat, stack
  Softmax,     // softmax, log_softmax
  Activation,  // gelu, tanh, exp, ... (uninterpreted in proofs)
  Collective,  // resolved across ranks by the linker
  Custom,      // the output of an autograd.Function
  Other,
};
std::string_view category_name(OpCategory category);
// nullopt for a name that is none of the categories.
std::optional<OpCategory> category_from_name(std::string_view name);

struct Node {
  NodeId id = 0;
  std::string op; // the torch-level name: "linear", "gelu", "all_reduce", ...
  OpCategory category = OpCategory::Other;
  std::vector<NodeId> inputs;
  Shape shape;
  DType dtype = DType::Float32;
  SourceLoc loc;
  std::vector<TermId> elements; // row-major
};

enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Broadcast,
  Reduce,  // only the root (`src`) gets the reduction
  Gather,  // only the root gets every member's input
  Scatter, // only the root sends: chunk i of its input to member i
  // send/recv: group is [sender, receiver] and src the sender; the receiver
  // gets the sender's input. Numbered apart from the collectives of a group
  // of the same ranks, per direction (a channel of its own).
  SendRecv,
};
std::string_view collective_name(CollectiveKind kind);
// Whether the collective reduces its members' values (sum, average, ...).
bool is_reduction(CollectiveKind kind);
std::optional<CollectiveKind> collective_from_name(std::string_view name);

enum class ReduceOp { Sum, Avg, Max, Min, Product };
std::string_view reduce_op_name(ReduceOp op);
std::optional<ReduceOp> reduce_op_from_name(std::string_view name);

// One collective call on one rank. Inputs and outputs are flat, row-major,
// and chunked along dim 0, as the torch.distributed tensor APIs are. A rank
// that is not the root of a reduce or gather has no outputs; one that is not
// the root of a scatter has no inputs.
struct Collective {
  CollectiveKind kind = CollectiveKind::AllReduce;
  ReduceOp op = ReduceOp::Sum;
  std::vector<int> group; // global ranks, ascending
  int sequence = 0;       // index among this rank's calls on this group
  int src = -1;           // the root of a broadcast, reduce, gather or scatter (global)
  Shape input_shape, output_shape;
  DType dtype = DType::Float32;
  std::vector<TermId> inputs;
  std::vector<TermId> outputs; // placeholder variables
  // An all-to-all with uneven splits: rows (along dim 0) sent to and received
  // from each member of the group, in group order; empty when even.
  std::vector<std::int64_t> input_splits, output_splits;
  // A point-to-point call that returns only once its message is matched
  // (`send`, `recv`); false for one that posts and returns (`isend`,
  // `irecv`, `batch_isend_irecv`) and for every collective.
  bool blocking = false;
  // An isend's or irecv's first wait(): the number of the rank's calls
  // recorded before it (it blocks there until the peer has posted the
  // matching call); -1 when never waited on.
  int waited = -1;
  SourceLoc loc;
  NodeId node = 0;
};

// Results of a rank's collectives, by (group, sequence), that an earlier
// tracing pass linked to constants: a later pass runs with these values, so
// code that turns them into Python numbers (split sizes, token counts) goes on.
using KnownCollectiveKey = std::pair<std::vector<int>, int>;
using KnownCollectives = std::map<KnownCollectiveKey, std::vector<TermId>>;

// The key of a call's known result: its group and sequence. Point-to-point
// messages are numbered per (sender, receiver), apart from the collectives of
// a group of the same ranks, so their group is marked with a leading -1.
KnownCollectiveKey known_collective_key(std::vector<int> group, int sequence,
                                        bool message);

enum class LeafRole { Parameter, Input };

struct Leaf {
  LeafRole role = LeafRole::Input;
  std::string name; // qualified parameter name, or "input#k" by creation order
  Shape shape;
  std::vector<TermId> elements;
  int partition_dim = -1; // >= 0: this rank holds a shard along that dim
  int partition_stride = 1;
  int shard_index = 0, shard_count = 1;
  SourceLoc loc;
};

struct Output {
  // Forward outputs of the model; gradients after backward and
  // finalize_grads, of a parameter (subject: its qualified name) or of an
  // input (subject: "input<k>").
  // ParameterAfterStep: a parameter's values after the entry's optimizer
  // step (subject: its qualified name). GradientNorm: the one-element norm
  // the entry's grad_norm computed for clipping.
  enum class Role { Forward, ParameterGrad, InputGrad, ParameterAfterStep, GradientNorm };
  Role role = Role::Forward;
  std::string subject;
  std::string path; // "out", "out[1]", "out['logits']", "grad(fc1.weight)"
  NodeId node = 0;
  Shape shape;
  DType dtype = DType::Float32;
  std::vector<TermId> elements;
  // The (start, end) ranges of flat elements this rank answers for (a
  // distributed optimizer's shard of a gradient: the rest is never read);
  // none: every element.
  std::optional<std::vector<std::pair<std::size_t, std::size_t>>> owned;
};

// One call of a module of the model during the forward, recorded when it
// returns (so a module's submodules come before it): the tensors it was
// given and the tensors it returned.
struct ModuleCall {
  std::string name;      // qualified name in the model ("decoder.layers.3")
  std::string type_name; // its class
  SourceLoc loc;         // its forward's definition
  struct Value {
    NodeId node = 0;
    Shape shape;
    std::vector<TermId> elements;
  };
  std::vector<Value> inputs, outputs;
  // The whole gradient each output received in backward (empty elements
  // where it got none).
  std::vector<Value> output_gradients;
};

// A value-dependent decision the run made at its path's witness
// (models/terms/witness.h): the boolean term `condition` held there, or did
// not. The run's terms mean what they say only where every one of its
// decisions comes out the same.
struct PathCondition {
  TermId condition = 0;
  bool holds = true;
  SourceLoc loc;
  std::string what; // "topk", "argmax", "a mask of a comparison", ...
};

struct Trace {
  int rank = 0;
  int world = 1;
  // The entry's tensor-parallel group (global ranks), over which sharded
  // parameters are split; empty when it is the whole world.
  std::vector<int> tensor_parallel_group;
  // The entry's data-parallel group (global ranks), over which each rank
  // takes its slice of the batch; empty when the entry names none.
  std::vector<int> data_parallel_group;
  std::vector<Node> nodes;
  std::vector<Leaf> leaves;
  std::vector<Collective> collectives;
  std::vector<Output> outputs;
  std::vector<ModuleCall> module_calls;
  std::vector<PathCondition> path; // in the order the decisions were made
  // How the witness values this run's variables that are not named as the
  // reference's (a leaf element: the reference element it is bound to).
  terms::WitnessNames witness_names;
  // Collective placeholders whose linked value the run asked for before any
  // pass gave it (a decision's witness value, whether it is finite): the
  // next pass gives their calls' linked results as terms where it can.
  std::set<TermId> needs_linked;
  // The calls whose result this run took as guessed, not as an earlier pass
  // linked it (a broadcast from a source traced before it in this pass, an
  // all-reduce of concrete flags): the tracing passes confirm every guess
  // (frontend/python/python_frontend.cpp) or trust nothing.
  std::set<KnownCollectiveKey> guessed;
  // Whether the run was given a collective's linked result as terms over the
  // reference's variables (not constants only): its terms then hold the
  // other ranks' values as the leaves were bound when they were linked.
  bool given_linked_terms = false;

  NodeId add_node(Node node);
  const Node &node(NodeId id) const { return nodes.at(id); }
};

// Every name of each enumeration, in declaration order: the Python frontend
// exports them and may record no other.
std::vector<std::string_view> dtype_names();
std::vector<std::string_view> category_names();
std::vector<std::string_view> collective_names();
std::vector<std::string_view> reduce_op_names();

std::int64_t element_count(const Shape &shape);
std::string shape_str(const Shape &shape);
// "[i,j,k]" for a row-major flat index.
std::string index_str(const Shape &shape, std::size_t flat);

} // namespace shardproof::ir

// Hash-consed terms over the reals: the element-level meaning of every tensor
// value shardproof traces. Construction only folds constants and units; the
// canonical polynomial form lives in normal_form.h so that tracing stays cheap.
#pragma once

#include <gmpxx.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shardproof::terms {

using TermId = std::uint32_t;

enum class Op : std::uint8_t {
  Const, // payload: index into constants
  Var,   // payload: index into variables
  Add,   // n-ary sum
  Mul,   // n-ary product
  Inv,   // 1/x, with inv(0) = 0 (total, so every identity we use is sound)
  App,   // payload: Fn; an uninterpreted function with known real semantics
  Lt,    // boolean: args[0] < args[1]
  Le,    // boolean: args[0] <= args[1]
  Ite,   // args[0] ? args[1] : args[2], args[0] boolean
  Max,   // n-ary maximum: associative, commutative, idempotent
  Min,   // n-ary minimum
  Ext,   // payload: Extended; a value outside the reals, see below
};

// The values of IEEE arithmetic beyond the reals, as PyTorch computes with
// them (masked_fill(mask, -inf), a fully masked softmax row). Variables are
// finite reals, so every other term is finite: the constructors fold an
// extended operand away by rules valid for every value of the variables
// (x + -inf = -inf, exp(-inf) = 0, max(x, -inf) = x, -inf * 2 = -inf), and
// an Ext node is therefore only ever a whole element, never inside
// arithmetic. What no such rule decides (-inf * x for a symbolic x of unknown
// sign, where(symbolic, x, -inf)) becomes Unmodelled: absorbing, and never
// proved or refuted.
enum class Extended : std::uint8_t { NegInf, PosInf, NaN, Unmodelled };

// Nonlinear functions. The prover treats them as uninterpreted (sound for
// proofs); the falsifier evaluates their real meaning (sound for refutations).
enum class Fn : std::uint8_t {
  Gelu,
  GeluTanh,
  Tanh,
  Exp,
  Log,
  Erf,
  Sqrt,
  Rsqrt,
  Sigmoid,
  Silu,
  Relu,
  Sin,
  Cos,
  GeluGrad,     // d/dx gelu(x)
  GeluTanhGrad, // d/dx gelu_tanh(x)
};

std::string_view fn_name(Fn fn);
bool fn_from_name(std::string_view name, Fn &out);
double fn_eval(Fn fn, double x);
long double fn_eval(Fn fn, long double x);

enum class VarKind : std::uint8_t {
  Reference,   // a leaf of the reference program: the universally quantified input
  RankLocal,   // a rank's leaf with no counterpart in the reference
  Placeholder, // a collective's result, resolved when ranks are linked
  Opaque,      // a value we do not model; reaching an output blocks a proof
};

struct Variable {
  std::string name;
  VarKind kind;
  std::string origin; // file:line that created it, for reports
};

struct Node {
  Op op;
  std::uint32_t payload = 0;
  std::vector<TermId> args;
  bool operator==(const Node &) const = default;
};

class TermStore {
public:
  TermStore();

  TermId constant(const mpq_class &value);
  TermId constant(long value) { return constant(mpq_class(value)); }
  TermId constant_from_double(double value); // exact binary value, or Ext
  TermId extended(Extended value);
  TermId var(std::string name, VarKind kind, std::string origin = {});

  TermId add(TermId a, TermId b);
  TermId add(std::span<const TermId> args); // canonical n-ary node, no folding
  TermId mul(TermId a, TermId b);
  TermId mul(std::span<const TermId> args);
  TermId neg(TermId a);
  TermId sub(TermId a, TermId b);
  TermId inv(TermId a);
  TermId div(TermId a, TermId b);
  TermId app(Fn fn, TermId arg);
  TermId lt(TermId a, TermId b);
  TermId le(TermId a, TermId b);
  TermId ite(TermId cond, TermId then_term, TermId else_term);
  TermId max(TermId a, TermId b);
  TermId min(TermId a, TermId b);
  // The canonical n-ary node (op is Max or Min), args as given.
  TermId lattice(Op op, std::span<const TermId> args);

  const Node &node(TermId id) const { return nodes_[id]; }
  bool is_const(TermId id) const { return nodes_[id].op == Op::Const; }
  const mpq_class &const_value(TermId id) const;
  bool is_var(TermId id) const { return nodes_[id].op == Op::Var; }
  const Variable &variable(TermId id) const;
  Variable &variable(TermId id);
  bool is_bool(TermId id) const;
  bool is_extended(TermId id) const { return nodes_[id].op == Op::Ext; }
  Extended extended_value(TermId id) const {
    return static_cast<Extended>(nodes_[id].payload);
  }
  bool is_unmodelled(TermId id) const {
    return is_extended(id) && extended_value(id) == Extended::Unmodelled;
  }
  // Concrete: a rational constant or an extended value PyTorch can hold.
  bool is_concrete(TermId id) const {
    return is_const(id) || (is_extended(id) && !is_unmodelled(id));
  }
  std::size_t size() const { return nodes_.size(); }

  TermId zero() const { return zero_; }
  TermId one() const { return one_; }

  // The term as text, cut after `limit` characters (with "...").
  std::string to_string(TermId id, std::size_t limit = SIZE_MAX) const;

private:
  TermId intern(Node node);
  void append_text(TermId id, std::string &out, std::size_t limit) const;
  // The result when an operand is extended, or nullopt when none is.
  std::optional<TermId> extended_add(TermId a, TermId b);
  std::optional<TermId> extended_mul(TermId a, TermId b);
  std::optional<TermId> extended_compare(bool strict, TermId a, TermId b);
  std::optional<TermId> extended_lattice(bool is_max, TermId a, TermId b);
  std::optional<TermId> extended_app(Fn fn, TermId arg);
  bool infinite_value(TermId id) const {
    return extended_value(id) == Extended::NegInf ||
           extended_value(id) == Extended::PosInf;
  }

  struct NodeHash {
    std::size_t operator()(const Node &n) const;
  };
  std::vector<Node> nodes_;
  std::unordered_map<Node, TermId, NodeHash> index_;
  std::vector<mpq_class> constants_;
  std::unordered_map<std::string, std::uint32_t> constant_index_;
  std::vector<Variable> variables_;
  TermId zero_ = 0, one_ = 0;
};

// Applies a substitution var -> term over a DAG, memoised; terms not mapped
// are rebuilt through the folding constructors.
class Substitution {
public:
  explicit Substitution(TermStore &store) : store_(store) {}
  // Replaces `term` (a variable, or any subterm: modular proofs abstract
  // values whose layout is proved) by `value`.
  void bind(TermId term, TermId value) { binding_[term] = value; }
  bool binds(TermId term) const { return binding_.count(term) > 0; }
  TermId binding(TermId term) const { return binding_.at(term); }
  // Forgets rewritten terms, so that bindings added since apply to them.
  void clear_memo() { memo_.clear(); }
  // Called for a variable without a binding; may return the variable itself.
  // Lets the linker resolve collective placeholders lazily.
  void set_resolver(std::function<TermId(TermId)> resolver) {
    resolver_ = std::move(resolver);
  }
  TermId apply(TermId term);

private:
  TermStore &store_;
  std::unordered_map<TermId, TermId> binding_;
  std::unordered_map<TermId, TermId> memo_;
  std::function<TermId(TermId)> resolver_;
};

// A key equal for two lists of terms exactly when they are the same DAG up to
// a renaming of variables (of the same kind): equations with equal keys are
// equally valid, so one proof serves both.
std::string alpha_key(const TermStore &store, std::span<const TermId> roots);

// A key equal for two lists of terms exactly when they are the same DAG over
// variables of the same names and kinds, in whichever store or trace they
// were built; linear in the DAG's size, where to_string unfolds it to a tree.
std::string named_key(const TermStore &store, std::span<const TermId> roots);

// Every variable a term depends on, in first-seen order.
std::vector<TermId> variables_of(const TermStore &store, std::span<const TermId> roots);

// True where `t` is > 0 for every value of its variables: positive
// constants, exp and sigmoid, and sums, products and inverses of such (a
// softmax probability). False means unknown, not negative. `memo` keeps
// the answers for subterms (shared subterms are asked once).
bool provably_positive(const TermStore &store, TermId t,
                       std::unordered_map<TermId, bool> *memo = nullptr);

// True where `t` is >= 0 for every value of its variables: what
// provably_positive accepts, zero, a square (a product with every factor
// twice), relu, the square root of such, and sums, products, inverses and
// maxima of such (a sum of squared gradients). False means unknown.
bool provably_nonnegative(const TermStore &store, TermId t);

} // namespace shardproof::terms

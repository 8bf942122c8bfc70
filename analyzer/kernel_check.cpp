#include "analyzer/kernel_check.h"
#include "analyzer/kernel_check_internal.h"

#include "frontend/python/python_frontend.h"
#include "models/terms/evaluate.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <span>
#include <unistd.h>
#include <unordered_map>
#include <unordered_set>

namespace shardproof::analyzer {

namespace fs = std::filesystem;
namespace cuda = frontend::cuda;
using checkers::Finding;
using checkers::RuleCode;
using frontend::TraceFailure;
using prover::Verdict;
using terms::TermId;

bool is_cuda_target(const Target &target) {
  std::string extension = fs::path(target.path).extension().string();
  return extension == ".cu" || extension == ".cuh";
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

TargetResult failed(const Target &target, TraceFailure::Kind kind, cuda::Diagnostic why) {
  TargetResult result;
  result.target = target;
  result.world = 1;
  result.failure = TraceFailure{kind, std::move(why.loc), std::move(why.message)};
  if (kind == TraceFailure::Kind::Unsupported) {
    Verdict blocked;
    blocked.why = result.failure->message;
    result.obligations.push_back(
        {"kernel " + target.function, result.failure->loc, std::move(blocked)});
  }
  return result;
}

namespace {

// A folder of its own for the generated reference module, removed after.
class ScratchFolder {
public:
  ScratchFolder() {
    std::string pattern =
        (fs::temp_directory_path() / "shardproof-kernel-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw std::runtime_error("cannot create a scratch folder for the reference");
    path_ = pattern;
  }
  ~ScratchFolder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path &path() const { return path_; }

private:
  fs::path path_;
};

// The reference as an entry of the Python frontend's contract: every buffer
// a symbolic tensor of its shape (created in the launch's argument order, so
// the reference's leaf k is buffer arg k), every scalar a Python constant,
// the expression the module's output.
std::string reference_module(const cuda::KernelLaunch &launch) {
  std::vector<std::string> buffers, scalars, creations;
  for (const cuda::KernelArg &arg : launch.args) {
    if (arg.is_rank || arg.is_pointer_table() || (arg.per_rank && arg.is_concrete()))
      continue;              // a rank's own: its rank, its peers' addresses, its flags
    if (arg.is_concrete()) { // a profile's mask: a constant of the reference
      scalars.push_back(fmt::format("        {} = torch.tensor([{}]).reshape({})",
                                    arg.name, fmt::join(arg.concrete, ", "),
                                    fmt::join(arg.shape, ", ")));
    } else if (arg.is_buffer()) {
      buffers.push_back(arg.name);
      creations.push_back(fmt::format("    {} = torch.randn({})", arg.name,
                                      fmt::join(launch.reference_shape(arg), ", ")));
    } else {
      scalars.push_back(fmt::format("        {} = {}", arg.name, arg.scalar));
    }
  }
  return fmt::format("import torch\n\n\n"
                     "class KernelReference(torch.nn.Module):\n"
                     "    def forward(self, {}):\n{}\n"
                     "        return {}\n\n\n"
                     "def entry():\n{}\n"
                     "    return {{'model': KernelReference(), 'inputs': ({},), "
                     "'backward': lambda loss: None}}\n",
                     fmt::join(buffers, ", "), fmt::join(scalars, "\n"), launch.reference,
                     fmt::join(creations, "\n"), fmt::join(buffers, ", "));
}

struct Reference {
  std::map<std::string, std::vector<TermId>> inputs; // by buffer arg
  std::map<TermId, std::string> element_names;       // "x[1,3]"
  std::vector<TermId> output;
  ir::Shape output_shape;
  std::optional<TraceFailure> failure;
};

// A per-rank output whose reference has one rank's shape: every rank's
// output equals it (an all-reduce), so the reference is stacked N times.
void replicate_over_ranks(const cuda::KernelLaunch &launch, Reference &reference) {
  const cuda::KernelArg &out = *launch.arg(launch.output);
  if (!out.per_rank ||
      ir::element_count(reference.output_shape) != ir::element_count(out.shape))
    return;
  std::vector<TermId> one = std::move(reference.output);
  reference.output.clear();
  for (int rank = 0; rank < launch.ranks; ++rank)
    reference.output.insert(reference.output.end(), one.begin(), one.end());
  reference.output_shape = launch.reference_shape(out);
}

// Runs the reference expression on the stand-in torch (the Python frontend
// at world 1) and names its input variables after the buffers.
Reference evaluate_reference(terms::TermStore &store, const cuda::KernelLaunch &launch,
                             const SessionOptions &options) {
  ScratchFolder scratch;
  fs::path module = scratch.path() / "kernel_reference.py";
  std::ofstream(module) << reference_module(launch);
  frontend::PythonFrontend python;
  Target target{module.string(), "entry"};
  frontend::TracedProgram traced = python.trace(store, target,
                                                {.world = 1,
                                                 .time_limit = options.trace_time_limit,
                                                 .python_path = options.python_path});
  Reference reference;
  auto fail = [&](TraceFailure::Kind kind, std::string message) {
    reference.failure = TraceFailure{kind, launch.reference_loc, std::move(message)};
    return reference;
  };
  if (traced.failure)
    return fail(traced.failure->kind,
                fmt::format("the reference expression '{}' could not be evaluated: {}",
                            launch.reference, traced.failure->message));
  const ir::Trace &trace = traced.reference;
  std::size_t k = 0;
  for (const cuda::KernelArg &arg : launch.args) {
    if (!arg.is_buffer() || arg.is_concrete())
      continue;
    ir::Shape shape = launch.reference_shape(arg);
    if (k >= trace.leaves.size() || trace.leaves[k].shape != shape)
      return fail(TraceFailure::Kind::BadInput,
                  fmt::format("the reference expression did not keep buffer '{}' as "
                              "created",
                              arg.name));
    const ir::Leaf &leaf = trace.leaves[k++];
    reference.inputs[arg.name] = leaf.elements;
    for (std::size_t i = 0; i < leaf.elements.size(); ++i)
      reference.element_names[leaf.elements[i]] = arg.name + ir::index_str(shape, i);
  }
  const ir::Output *out = nullptr;
  for (const ir::Output &o : trace.outputs)
    if (o.role == ir::Output::Role::Forward)
      out = out ? nullptr : &o;
  if (!out)
    return fail(TraceFailure::Kind::BadInput,
                fmt::format("the reference expression '{}' must give one tensor",
                            launch.reference));
  reference.output = out->elements;
  reference.output_shape = out->shape;
  replicate_over_ranks(launch, reference);
  return reference;
}

// The refutation as the Python checks report one: the inputs that show it,
// the reference's element and the kernel's (rank 0: the one launch).
Finding mismatch_finding(const terms::TermStore &store, const cuda::KernelLaunch &launch,
                         const Reference &reference, const cuda::LiftedLaunch &lifted,
                         const std::string &obligation,
                         const prover::Counterexample &cex) {
  std::size_t i = cex.element;
  const std::vector<TermId> &kernel = lifted.buffers.at(launch.output);
  const cuda::KernelArg &out = *launch.arg(launch.output);
  ir::Shape shape = launch.reference_shape(out);
  std::string element = launch.output + ir::index_str(shape, i);
  const auto &write = lifted.writes.at(launch.output)[i];
  Finding f = Finding::of(
      RuleCode::KernelMismatch, write ? write->loc : launch.loc,
      write ? fmt::format("the value kernel '{}' writes here into {} differs from the "
                          "reference '{}'",
                          launch.callee(), element, launch.reference)
            : fmt::format("kernel '{}' never writes {}, which the reference '{}' defines",
                          launch.callee(), element, launch.reference));
  auto values = [&](TermId v) {
    auto it = cex.values.find(v);
    return it == cex.values.end() ? 0.0 : it->second;
  };
  terms::DoubleEvaluator eval(store, values);
  checkers::Example example;
  example.world = std::max(launch.ranks, 1);
  example.obligation = obligation;
  example.layout = "equal";
  for (const auto &[var, v] : cex.values)
    if (v != 0) {
      auto name = reference.element_names.find(var);
      example.inputs.push_back({name != reference.element_names.end()
                                    ? name->second
                                    : store.variable(var).name,
                                v});
    }
  example.element = element;
  example.reference = eval(reference.output[i]).value_or(NAN);
  int rank = out.per_rank ? static_cast<int>(i / ir::element_count(out.shape)) : 0;
  checkers::Example::RankValue value{rank, element, eval(kernel[i]).value_or(NAN),
                                     std::nullopt};
  if (!terms::nearly_equal(value.value, example.reference))
    value.expected = example.reference;
  example.ranks.push_back(value);
  f.example = std::move(example);
  if (write && launch.ranks > 0)
    f.details.push_back(fmt::format("Rank {} is the kernel's launch on rank {}: {} was "
                                    "written by {}",
                                    rank, rank, element, write->thread.str()));
  else if (write)
    f.details.push_back(fmt::format("Rank 0 is the kernel's launch: {} was written by {}",
                                    element, write->thread.str()));
  f.notes.push_back({launch.reference_loc, "the reference is given here"});
  return f;
}

Finding kernel_finding(const cuda::KernelFinding &found) {
  RuleCode rule = RuleCode::OutOfBounds;
  switch (found.kind) {
  case cuda::KernelFinding::Kind::SharedMemoryRace:
    rule = RuleCode::MemoryRace;
    break;
  case cuda::KernelFinding::Kind::UninitialisedRead:
    rule = RuleCode::UninitialisedRead;
    break;
  case cuda::KernelFinding::Kind::UndefinedShuffleValue:
    rule = RuleCode::UndefinedShuffleValue;
    break;
  case cuda::KernelFinding::Kind::DivergentBarrier:
    rule = RuleCode::DivergentBarrier;
    break;
  case cuda::KernelFinding::Kind::CrossRankRace:
    rule = RuleCode::CrossRankRace;
    break;
  case cuda::KernelFinding::Kind::OutOfBounds:
    break;
  }
  Finding f = Finding::of(rule, found.loc, found.message);
  if (found.other_loc)
    f.notes.push_back({*found.other_loc, found.other_note});
  return f;
}

// The proofs are over the reals: 16-bit buffers are said, so that "proved"
// never hides their rounding.
std::string sixteen_bit_note(const cuda::KernelLaunch &launch) {
  std::vector<std::string> narrow;
  for (const cuda::KernelArg &arg : launch.args)
    if (arg.buffer_type == ir::DType::Float16 || arg.buffer_type == ir::DType::BFloat16)
      narrow.push_back(
          fmt::format("{} ({})", arg.name, ir::dtype_name(*arg.buffer_type)));
  if (narrow.empty())
    return "";
  return fmt::format("; over the reals: the rounding of {} is not modelled",
                     fmt::join(narrow, ", "));
}

// The output elements whose obligations are the same up to a renaming of
// the input variables (one row of each batch, the rows of a softmax): the
// prover gets the first of each kind only, for every one of them, since
// lhs = rhs for all values of the variables holds for any renaming of them.
// Every element is still compared: each is in the class of an element proved.
struct DistinctPairs {
  std::vector<TermId> lhs, rhs;
  std::vector<std::size_t> element; // the output element of each pair given
};

// A pair's DAG with its variables numbered by first appearance: equal for
// two pairs exactly when one is the other with its variables renamed.
class RenamedShapes {
public:
  explicit RenamedShapes(const terms::TermStore &store)
      : store_(store), stamp_(store.size(), 0), number_(store.size(), 0) {}

  std::vector<std::uint64_t> of(TermId lhs, TermId rhs) {
    ++pair_;
    shape_.clear();
    nodes_ = variables_ = 0;
    visit(lhs);
    visit(rhs);
    return shape_;
  }

private:
  std::uint64_t visit(TermId t) {
    if (stamp_[t] == pair_)
      return number_[t];
    const terms::Node &n = store_.node(t);
    std::vector<std::uint64_t> args;
    args.reserve(n.args.size());
    for (TermId a : n.args)
      args.push_back(visit(a));
    shape_.push_back(static_cast<std::uint64_t>(n.op) << 32 | n.args.size());
    if (n.op == terms::Op::Var)
      shape_.push_back(variables_++ << 8 |
                       static_cast<std::uint64_t>(store_.variable(t).kind));
    else // a constant by its (hash-consed) term, else the node's payload
      shape_.push_back(n.op == terms::Op::Const ? t : n.payload);
    shape_.insert(shape_.end(), args.begin(), args.end());
    stamp_[t] = pair_;
    return number_[t] = nodes_++;
  }

  const terms::TermStore &store_;
  std::vector<std::uint32_t> stamp_; // the pair that numbered the node
  std::vector<std::uint64_t> number_;
  std::vector<std::uint64_t> shape_;
  std::uint32_t pair_ = 0;
  std::uint64_t nodes_ = 0, variables_ = 0;
};

struct ShapeHash {
  std::size_t operator()(const std::vector<std::uint64_t> &v) const {
    std::size_t h = v.size();
    for (std::uint64_t x : v)
      h ^= std::hash<std::uint64_t>{}(x) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
  }
};

// The nodes a launch's pairs may be walked over to find the distinct ones
// (about a second); past it every pair goes to the prover.
constexpr std::size_t kMaxShapeWork = 8'000'000;

DistinctPairs distinct_pairs(const terms::TermStore &store, std::span<const TermId> lhs,
                             std::span<const TermId> rhs) {
  DistinctPairs out;
  RenamedShapes shapes(store);
  std::unordered_set<std::vector<std::uint64_t>, ShapeHash> seen;
  std::size_t work = 0;
  for (std::size_t i = 0; i < lhs.size(); ++i) {
    bool walk = work < kMaxShapeWork;
    auto shape = walk ? shapes.of(lhs[i], rhs[i]) : std::vector<std::uint64_t>{};
    work += shape.size();
    if (!walk || seen.insert(std::move(shape)).second) {
      out.lhs.push_back(lhs[i]);
      out.rhs.push_back(rhs[i]);
      out.element.push_back(i);
    }
  }
  return out;
}

// One launch's verdict: its findings, or its obligation proved or refuted.
TargetResult lifted_result(terms::TermStore &store, const Target &target,
                           const cuda::KernelLaunch &launch, const Reference &reference,
                           cuda::LiftedLaunch lifted, const SessionOptions &options,
                           Clock::time_point start) {
  std::string name = fmt::format("kernel {}: '{}' equals the reference '{}'",
                                 launch.callee(), launch.output, launch.reference);
  if (lifted.unsupported) {
    TargetResult blocked =
        failed(target, TraceFailure::Kind::Unsupported, std::move(*lifted.unsupported));
    blocked.obligations.front().name = name;
    return blocked;
  }
  TargetResult result;
  result.target = target;
  result.world = 1;
  for (const cuda::KernelFinding &found : lifted.findings)
    result.findings.push_back(kernel_finding(found));
  if (!result.findings.empty()) // the lifted values are not the kernel's meaning
    return result;
  std::unique_ptr<prover::Prover> prover;
  if (const auto &budget = options.target_time_limit)
    prover = std::make_unique<prover::BudgetedProver>(options.prover, start + *budget,
                                                      *budget);
  else
    prover = std::make_unique<prover::WorkerProver>(options.prover);
  DistinctPairs pairs =
      distinct_pairs(store, lifted.buffers.at(launch.output), reference.output);
  Verdict verdict = prover->prove(store, pairs.lhs, pairs.rhs);
  if (verdict.counterexample)
    verdict.counterexample->element = pairs.element.at(verdict.counterexample->element);
  if (verdict.kind == Verdict::Kind::Refuted && verdict.counterexample)
    result.findings.push_back(mismatch_finding(store, launch, reference, lifted, name,
                                               *verdict.counterexample));
  if (verdict.kind == Verdict::Kind::Proved)
    verdict.method += sixteen_bit_note(launch);
  result.obligations.push_back({name, launch.loc, std::move(verdict)});
  return result;
}

} // namespace

void apply_rule_selection(TargetResult &result, const checkers::RuleSelection &rules) {
  auto left_out =
      std::stable_partition(result.findings.begin(), result.findings.end(),
                            [&](const Finding &f) { return rules.reports(f.rule); });
  std::move(left_out, result.findings.end(), std::back_inserter(result.suppressed));
  result.findings.erase(left_out, result.findings.end());
}

TargetResult check_launch(const Target &file, const cuda::CudaFile &parsed,
                          const cuda::KernelLaunch &launch,
                          const SessionOptions &options) {
  auto start = Clock::now();
  Target target = file;
  target.function = launch.callee();
  terms::TermStore store;
  Reference reference = evaluate_reference(store, launch, options);
  const cuda::KernelArg &out = *launch.arg(launch.output);
  TargetResult result;
  if (reference.failure)
    result = failed(target, reference.failure->kind,
                    {reference.failure->loc, reference.failure->message});
  else if (ir::element_count(launch.reference_shape(out)) !=
           ir::element_count(reference.output_shape))
    result = failed(target, TraceFailure::Kind::BadInput,
                    {launch.reference_loc,
                     fmt::format("the reference has shape {} but buffer '{}' is {}{}",
                                 ir::shape_str(reference.output_shape), out.name,
                                 ir::shape_str(launch.reference_shape(out)),
                                 out.per_rank ? fmt::format(" (its ranks' stacked; {} is "
                                                            "every rank's)",
                                                            ir::shape_str(out.shape))
                                              : "")});
  else
    result = lifted_result(store, target, launch, reference,
                           parsed.lift(store, launch, reference.inputs), options, start);
  result.world = std::max(launch.ranks, 1); // a multi-rank launch: its ranks
  apply_rule_selection(result, options.rules);
  result.seconds = seconds_since(start);
  return result;
}

cuda::ParseOptions build_options(const std::string &path, cuda::ParseOptions parse) {
  // As torch.utils.cpp_extension orders them: its defines, then the build's
  // own flags (which may undo them), then what the user gave.
  std::vector<std::string> flags;
  if (cuda::is_torch_extension(path))
    flags = cuda::torch_extension_flags();
  if (auto command = cuda::compile_command_for(path); command && !command->error)
    flags.insert(flags.end(), command->flags.begin(), command->flags.end());
  parse.extra_args.insert(parse.extra_args.begin(), flags.begin(), flags.end());
  return parse;
}

std::vector<TargetResult> check_kernels(const Target &target,
                                        const SessionOptions &options,
                                        const cuda::ParseOptions &given) {
  cuda::ParseOptions parse = build_options(target.path, given);
  Target file = target;
  file.function = "(file)";
  cuda::Annotations annotations = cuda::read_annotations(target.path);
  if (annotations.error)
    return {failed(file, TraceFailure::Kind::BadInput, *annotations.error)};
  if (annotations.launches.empty()) {
    auto profiled = check_profiled_kernels(target, options, parse);
    if (!profiled.empty())
      return profiled;
    return {failed(file, TraceFailure::Kind::BadInput,
                   {{target.path, 0},
                    "no '// shardproof: launch' annotation and no kernel a profile "
                    "recognises: nothing to check (see README, CUDA kernels)"})};
  }
  cuda::ParsedFile parsed = cuda::parse_file(target.path, annotations.launches, parse);
  std::vector<TargetResult> results;
  for (const cuda::KernelLaunch &launch : annotations.launches) {
    if (!parsed.file) {
      Target named = target;
      named.function = launch.callee();
      results.push_back(failed(named,
                               parsed.rejected_by_clang ? TraceFailure::Kind::Unsupported
                                                        : TraceFailure::Kind::BadInput,
                               *parsed.error));
      continue;
    }
    results.push_back(check_launch(target, *parsed.file, launch, options));
  }
  return results;
}

} // namespace shardproof::analyzer

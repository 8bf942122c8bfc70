#include "frontend/python/python_frontend.h"

#include "frontend/python/interpreter.h"
#include "models/ir/linker.h"
#include "models/terms/evaluate.h"

#include <chrono>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <unordered_set>

namespace shardproof::frontend {

namespace fs = std::filesystem;

namespace {
// The variables one run of `target` sees: its own, its layout, and the
// distributed world (so that the single-device reference run, whose own
// world is 1, builds a recipe's component at the sizes the ranks do).
std::map<std::string, std::string> run_environment(const Target &target, int world) {
  auto environment = target.environment;
  if (!target.layout.empty())
    environment["SHARDPROOF_PARALLEL"] = target.layout;
  environment["SHARDPROOF_WORLD"] = std::to_string(world);
  return environment;
}

// What an earlier pass learnt of a rank's collective results: those linked to
// constants, and the values at the path's witness of the others.
struct KnownResults {
  ir::KnownCollectives constants;
  terms::KnownPlaceholderValues at_witness;
  std::set<ir::KnownCollectiveKey> not_guessed; // see RankRun::not_guessed
};

// Traces one run, keeping the first failure of the whole target.
class RankTracer {
public:
  // `reference`: the reference run's trace, which the ranks' runs read.
  RankTracer(terms::TermStore &store, const Target &target, const TraceOptions &options,
             const ir::Trace &reference, std::optional<TraceFailure> &failure)
      : store_(store), target_(target), options_(options), reference_(reference),
        failure_(failure), environment_(run_environment(target, options.world)) {}

  void operator()(int world, int rank, terms::VarKind kind, ir::Trace &out,
                  const KnownResults &known) {
    RankRun run{target_.path,
                target_.function,
                world,
                rank,
                options_.time_limit,
                environment_,
                options_.python_path,
                known.constants,
                options_.witness,
                known.at_witness,
                kind == terms::VarKind::Reference ? nullptr : &reference_,
                options_.extensions ? &options_.extensions : nullptr,
                known.not_guessed};
    auto failure = trace_rank(store_, run, kind, out);
    if (failure && !failure_)
      failure_ = std::move(failure);
  }

private:
  terms::TermStore &store_;
  const Target &target_;
  const TraceOptions &options_;
  const ir::Trace &reference_;
  std::optional<TraceFailure> &failure_;
  std::map<std::string, std::string> environment_;
};

// What a pass learned of the collective results: new ones, and ones it
// linked to other values than it ran with: constants (the last collective of
// those: Python numbers, split sizes, which the traces must agree with) or
// values at the witness (which only choose the path a decision explores: its
// condition is recorded over the linked result either way).
struct Learned {
  bool fresh = false;
  std::optional<ir::Collective> changed_constant;
  bool changed_at_witness = false;
};

// Records that `call`'s result (or one element of it) is `value` under
// `key`. A value a pass ran with but now links to another replaces it: it
// was learned in a pass whose earlier collectives were not known yet (an
// all-to-all run before its split sizes were), and the ranks run again.
template <typename Known, typename Same>
bool learn(Known &known, const typename Known::key_type &key,
           typename Known::mapped_type value, Same same, Learned &learned) {
  auto [it, fresh] = known.try_emplace(key, value);
  learned.fresh = learned.fresh || fresh;
  if (fresh || same(it->second, value))
    return false;
  it->second = std::move(value);
  return true;
}

// Whether every term of `linked` is over the reference's inputs: its leaf
// elements (`inputs`, which every pass shares, the reference being traced
// once) and concrete values, no collective's result left unresolved, no
// rank's own value (a leaf with no counterpart, uninitialised memory).
bool over_reference(const terms::TermStore &store,
                    const std::unordered_set<terms::TermId> &inputs,
                    const std::vector<terms::TermId> &linked) {
  std::unordered_set<terms::TermId> seen;
  std::vector<terms::TermId> stack(linked.begin(), linked.end());
  while (!stack.empty()) {
    terms::TermId t = stack.back();
    stack.pop_back();
    if (!seen.insert(t).second)
      continue;
    if (store.is_unmodelled(t) || (store.is_var(t) && !inputs.contains(t))) {
      if (std::getenv("SHARDPROOF_TRACEBACK")) // for shardproof's developers
        std::cerr << "-- a linked result reads "
                  << (store.is_var(t)
                          ? store.variable(t).name + " (" + store.variable(t).origin + ")"
                          : std::string("an unmodelled value"))
                  << ", not a reference input\n";
      return false;
    }
    const auto &args = store.node(t).args;
    stack.insert(stack.end(), args.begin(), args.end());
  }
  return true;
}

// What a call's linked result makes known: every element, when all link to
// constants, or when the rank `needed` it (a decision or a finiteness
// question read it before it was linked) and it is over the reference's
// inputs (over_reference): terms; a call known before must link the same
// again. Of a point-to-point message, each element that links to a
// constant, the others left the receiver's own placeholders (a receiver
// reads a header of sizes from a buffer whose tail the sender never wrote).
std::optional<std::vector<terms::TermId>>
known_result(const terms::TermStore &store, const ir::Collective &call,
             const std::vector<terms::TermId> &linked, bool known_before, bool needed,
             const std::unordered_set<terms::TermId> &inputs) {
  auto constant = [&](terms::TermId t) { return store.is_const(t); };
  if (call.kind != ir::CollectiveKind::SendRecv) {
    if (known_before || std::all_of(linked.begin(), linked.end(), constant) ||
        (needed && over_reference(store, inputs, linked)))
      return linked;
    return std::nullopt;
  }
  std::vector<terms::TermId> values = call.outputs;
  bool any = known_before;
  for (std::size_t i = 0; i < linked.size(); ++i)
    if (constant(linked[i])) {
      values[i] = linked[i];
      any = true;
    }
  return any ? std::optional(values) : std::nullopt;
}

// Whether a call's result is known as before: the same terms, except that a
// message's unknown elements are each pass's own placeholders, alike when
// both are unknown.
struct SameKnown {
  const terms::TermStore &store;
  bool message;
  bool operator()(const std::vector<terms::TermId> &a,
                  const std::vector<terms::TermId> &b) const {
    auto unknown = [&](terms::TermId t) { return !store.is_const(t); };
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [&](terms::TermId x, terms::TermId y) {
                        return x == y || (message && unknown(x) && unknown(y));
                      });
  }
};

// Links the ranks' partial traces of one pass (their leaves bound to the
// reference's, as the checks link them) and records, in `known`, the
// collective results that link to constants or, where a rank needed them,
// to terms over the reference's inputs and, on a path, the values at its
// witness of the others.
void learn_known_results(terms::TermStore &store, const ir::Trace &reference,
                         const std::vector<ir::Trace> &ranks,
                         const std::optional<terms::Witness> &witness,
                         std::vector<KnownResults> &known, Learned &learned) {
  ir::LinkedProgram program(store, reference, ranks);
  std::unordered_set<terms::TermId> inputs;
  for (const ir::Leaf &leaf : reference.leaves)
    inputs.insert(leaf.elements.begin(), leaf.elements.end());
  terms::WitnessNames names; // every rank's: a result reads other ranks' values
  for (const ir::Trace &rank : ranks)
    names.insert(rank.witness_names.begin(), rank.witness_names.end());
  const terms::KnownPlaceholderValues none;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    for (const ir::Collective &call : ranks[r].collectives) {
      if (call.outputs.empty()) // a send, or a rank the result does not reach
        continue;
      std::vector<terms::TermId> linked =
          program.linked(static_cast<int>(r), call.outputs);
      const bool message = call.kind == ir::CollectiveKind::SendRecv;
      auto key = ir::known_collective_key(call.group, call.sequence, message);
      const auto &needs = ranks[r].needs_linked;
      const bool needed = std::any_of(call.outputs.begin(), call.outputs.end(),
                                      [&](terms::TermId p) { return needs.contains(p); });
      auto constants = known_result(store, call, linked, known[r].constants.contains(key),
                                    needed, inputs);
      if (constants) {
        if (learn(known[r].constants, key, *constants, SameKnown{store, message},
                  learned))
          learned.changed_constant = call;
        if (*constants == linked)
          continue;
      }
      auto values = witness
                        ? terms::values_at_witness(store, linked, *witness, names, none)
                        : std::nullopt;
      for (std::size_t i = 0; values && i < linked.size(); ++i)
        if (learn(known[r].at_witness, store.variable(call.outputs[i]).name, (*values)[i],
                  terms::nearly_equal, learned))
          learned.changed_at_witness = true;
    }
}

// Traces every rank, in passes: a rank whose code turns a collective's result
// into a Python number (token counts that size an all-to-all) stops at a
// placeholder, since results exist only once the ranks are linked; so does
// one that decides on it (a clipping coefficient from an all-reduced norm)
// or asks whether it is finite (an overflow flag). When the ranks' partial
// traces link some collectives to constants, or those a rank needed to terms
// over the reference's inputs (else, on a path, to values at its witness
// that a decision reads), the ranks are traced again with those results
// known, until they all finish or a pass learns nothing. The last pass is
// checked: linking its collectives must give the constants and terms it ran
// with (else it runs again with the new ones), or after the last pass the
// traces are not trusted.
std::vector<ir::Trace> trace_ranks(terms::TermStore &store, const ir::Trace &reference,
                                   int world,
                                   const std::optional<terms::Witness> &witness,
                                   std::optional<TraceFailure> &failure,
                                   RankTracer &trace_rank) {
  // A pipeline's stages learn their input's shape one after another (each
  // sends its header once it has received the one before): as many passes
  // as ranks, and two more to check.
  const int max_passes = std::max(8, world + 2);
  std::vector<KnownResults> known(static_cast<std::size_t>(world));
  for (int pass = 1;; ++pass) {
    failure.reset();
    std::vector<ir::Trace> ranks(static_cast<std::size_t>(world));
    for (int r = 0; r < world; ++r) {
      const auto start = std::chrono::steady_clock::now();
      trace_rank(world, r, terms::VarKind::RankLocal, ranks[r], known[r]);
      if (std::getenv("SHARDPROOF_TRACEBACK")) // for shardproof's developers
        std::cerr << fmt::format(
            "-- pass {} rank {} of {}: {:.1f} s, {} nodes{}\n", pass, r, world,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                .count(),
            ranks[r].nodes.size(), failure ? " (stopped)" : "");
    }
    const bool guessed = std::any_of(ranks.begin(), ranks.end(), [](const ir::Trace &t) {
      return !t.guessed.empty();
    });
    if (!failure && pass == 1 && !guessed)
      return ranks; // nothing ran with known or guessed results: nothing to check
    Learned learned;
    for (int r = 0; r < world; ++r) // what this pass ran with
      for (const auto &[key, values] : known[r].constants)
        ranks[r].given_linked_terms =
            ranks[r].given_linked_terms ||
            !std::all_of(values.begin(), values.end(),
                         [&](terms::TermId t) { return store.is_concrete(t); });
    learn_known_results(store, reference, ranks, witness, known, learned);
    const auto &changed = learned.changed_constant;
    const bool settled = // nothing left to learn: this pass's outcome stands
        (failure && failure->kind != TraceFailure::Kind::Unsupported) ||
        (!failure && !changed) ||
        (failure && !learned.fresh && !changed && !learned.changed_at_witness);
    if (settled && guessed) {
      // No outcome stands on a guess: trace again, with the guesses linking
      // confirmed as constants now known and the others not guessed again.
      for (int r = 0; r < world; ++r)
        for (const auto &key : ranks[r].guessed)
          if (!known[r].constants.contains(key))
            known[r].not_guessed.insert(key);
      if (pass < max_passes)
        continue;
      failure = TraceFailure{TraceFailure::Kind::Unsupported,
                             {},
                             "a collective's result was guessed from this pass's "
                             "concrete values and linking did not confirm it"};
      return ranks;
    }
    if (settled)
      return ranks; // every rank finished with the results its calls link to,
                    // or a failure that learning more cannot change
    // Past them, a pass that only learned results no pass knew before made
    // progress (nanotron's P2P sends each tensor's metadata, then its data:
    // every message tells the size of the next), and the passes go on, up to
    // four times as many.
    if (pass >= max_passes && learned.fresh && !changed && pass < 4 * max_passes)
      continue;
    if (pass >= max_passes) {
      if (changed)
        failure = TraceFailure{
            TraceFailure::Kind::Unsupported, changed->loc,
            fmt::format("collective #{} on group {} linked to other values each time "
                        "the ranks were traced again with its result known ({} passes)",
                        changed->sequence, changed->group, max_passes)};
      return ranks;
    }
  }
}

// The world a layout "tp=2,dp=2,sp=1" needs: the product of its axes.
int layout_world(const std::string &layout) {
  int world = 1;
  std::stringstream items(layout);
  for (std::string item; std::getline(items, item, ',');) {
    auto eq = item.find('=');
    static const std::set<std::string> axes{"tp", "cp", "ep", "dp", "pp"};
    if (eq != std::string::npos && axes.contains(item.substr(0, eq)))
      world *= std::max(1, std::atoi(item.c_str() + eq + 1));
  }
  return world;
}

std::string recipe_file(const std::string &framework) {
  return fmt::format("{}/{}/recipes.py", SHARDPROOF_RECIPES_DIR, framework);
}

// Marks the locations in the recipe file `harness`: the analysed code is the
// tree it builds, and a finding points into the tree (checkers relocate).
void mark_harness(TracedProgram &program, const std::string &harness) {
  std::error_code error;
  const fs::path recipe = fs::weakly_canonical(harness, error);
  std::map<std::string, bool> is_recipe; // by file as traced
  auto mark = [&](ir::Trace &trace) {
    for (ir::Node &node : trace.nodes) {
      auto [it, fresh] = is_recipe.try_emplace(node.loc.file, false);
      if (fresh)
        it->second = fs::weakly_canonical(node.loc.file, error) == recipe;
      node.loc.harness = it->second;
    }
  };
  mark(program.reference);
  for (ir::Trace &rank : program.ranks)
    mark(rank);
}

// The recipes read the tree's location from the environment.
std::map<std::string, std::string> tree_environment(const std::string &root,
                                                    const std::string &framework) {
  return {{framework == "megatron" ? "MEGATRON_ROOT" : "DEEPSPEED_ROOT", root}};
}

Target recipe_row(const std::string &root, const std::string &framework,
                  std::string entry, std::string layout) {
  Target target{.path = recipe_file(framework),
                .function = std::move(entry),
                .layout = std::move(layout),
                .environment = tree_environment(root, framework)};
  if (!target.layout.empty())
    target.world = layout_world(target.layout);
  return target;
}
} // namespace

TracedProgram PythonFrontend::trace(terms::TermStore &store, const Target &target,
                                    const TraceOptions &options) {
  TracedProgram program;
  RankTracer tracer(store, target, options, program.reference, program.failure);
  tracer(1, 0, terms::VarKind::Reference, program.reference, {});
  if (!program.failure)
    program.ranks = trace_ranks(store, program.reference, options.world, options.witness,
                                program.failure, tracer);
  if (!target.environment.empty()) // a recipe that builds a framework tree
    mark_harness(program, target.path);
  program.sources = read_sources(program);
  program.executed_files = executed_files();
  return program;
}

std::vector<std::string> user_python_path(const std::vector<std::string> &given,
                                          const char *virtual_env) {
  std::vector<std::string> folders;
  for (const std::string &item : given) {
    std::stringstream parts(item);
    for (std::string folder; std::getline(parts, folder, ':');) {
      if (folder.empty())
        continue;
      if (!fs::is_directory(folder))
        throw std::invalid_argument("--python-path: " + folder + " is not a folder");
      folders.push_back(fs::absolute(folder).string());
    }
  }
  if (virtual_env && *virtual_env)
    folders.push_back(virtual_environment_packages(virtual_env));
  return folders;
}

std::string detect_framework(const std::string &root) {
  if (fs::is_directory(fs::path(root) / "megatron" / "core"))
    return "megatron";
  if (fs::is_directory(fs::path(root) / "deepspeed"))
    return "deepspeed";
  return "";
}

bool RecipeRequest::layout_given() const {
  return sequence_parallel || !options.empty() ||
         std::any_of(axes.begin(), axes.end(),
                     [](const auto &axis) { return axis.second > 0; });
}

Target recipe_target(const RecipeRequest &request) {
  std::string layout;
  if (request.layout_given()) {
    // Tensor parallelism defaults to 2: a layout without it would check
    // nothing of the tensor-parallel code.
    auto axes = request.axes;
    if (axes["tp"] == 0)
      axes["tp"] = 2;
    for (const auto &[axis, size] : axes)
      layout += fmt::format("{}={},", axis, std::max(size, 1));
    layout += request.sequence_parallel ? "sp=1" : "sp=0";
    for (const auto &option : request.options)
      layout += "," + option;
  }
  return recipe_row(request.root, request.framework, request.entry, layout);
}

namespace {
std::string launch_module(const std::string &framework) {
  return fmt::format("{}/{}/launch.py", SHARDPROOF_RECIPES_DIR, framework);
}
} // namespace

std::vector<std::string> launch_files(const std::string &root,
                                      const std::string &framework) {
  return launch_configurations(launch_module(framework), root,
                               tree_environment(root, framework));
}

Target launch_target(const LaunchRequest &request) {
  const std::string module = launch_module(request.framework);
  auto absolute = [](const std::string &path) {
    return path.empty() ? path : fs::absolute(path).lexically_normal().string();
  };
  std::string model = request.model_entry;
  // A builder FILE.py::FUNC with its file absolute (the ranks import from
  // other folders); an entry script is the tree's own, as named.
  if (auto sep = model.find("::"); sep != std::string::npos)
    model = absolute(model.substr(0, sep)) + model.substr(sep);
  auto environment = tree_environment(request.root, request.framework);
  environment["SHARDPROOF_LAUNCH"] = absolute(request.launch_file);
  LaunchPlan plan = launch_plan(module, environment["SHARDPROOF_LAUNCH"], request.world,
                                model, environment);
  if (!model.empty())
    environment["SHARDPROOF_LAUNCH_MODEL"] = model;
  environment.insert(plan.environment.begin(), plan.environment.end());
  return Target{.path = module,
                .function = "entry",
                .layout = plan.layout,
                .world = plan.world,
                .environment = std::move(environment),
                .launch = plan.summary,
                .launch_file = request.launch_file};
}

std::vector<Target> scan_targets(const std::string &root, const std::string &framework) {
  std::vector<Target> targets;
  for (const auto &config :
       recipe_matrix(recipe_file(framework), tree_environment(root, framework)))
    targets.push_back(recipe_row(root, framework, config.entry, config.layout));
  return targets;
}

} // namespace shardproof::frontend

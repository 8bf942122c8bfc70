// The Python frontend through its seam (frontend/frontend.h): what it traces,
// the sources it hands back, and the environment a target runs in.
#include "frontend/python/python_frontend.h"
#include "models/ir/linker.h"
#include "models/terms/evaluate.h"

#include <Python.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <unordered_set>

using namespace shardproof;

namespace {
const std::string kHarness =
    std::string(SHARDPROOF_SOURCE_DIR) + "/tests/frontend/reads_environment.py";

frontend::Target harness_with_factor(const std::string &factor) {
  frontend::Target target = frontend::parse_target(kHarness + "::entry");
  target.environment["SHARDPROOF_TEST_FACTOR"] = factor;
  return target;
}
} // namespace

TEST(PythonFrontend, TracesTheReferenceAndEveryRankWithTheirSources) {
  terms::TermStore store;
  frontend::PythonFrontend python;
  frontend::TracedProgram traced =
      python.trace(store, harness_with_factor("3"), {.world = 2});
  ASSERT_FALSE(traced.failure) << traced.failure->message;
  EXPECT_EQ(traced.reference.world, 1);
  ASSERT_EQ(traced.ranks.size(), 2u);
  EXPECT_EQ(traced.ranks[1].rank, 1);
  EXPECT_EQ(traced.ranks[1].world, 2);
  // The forward output and the weight's gradient (the input needs none).
  ASSERT_EQ(traced.reference.outputs.size(), 2u);
  EXPECT_EQ(traced.reference.outputs[0].path, "out");
  EXPECT_EQ(traced.reference.outputs[1].path, "grad(weight)");
  // The harness's lines, as read when it was traced.
  ASSERT_TRUE(traced.sources.contains(kHarness));
  EXPECT_EQ(traced.sources.at(kHarness).at(15),
            "        return x * self.weight * self.factor");
}

TEST(PythonFrontend, TheTargetsEnvironmentIsSetForItsRunsOnly) {
  terms::TermStore store;
  frontend::PythonFrontend python;
  // Without the variable the harness raises: bad input at its line.
  frontend::Target bare = frontend::parse_target(kHarness + "::entry");
  ASSERT_FALSE(python.trace(store, harness_with_factor("2"), {.world = 2}).failure);
  frontend::TracedProgram after = python.trace(store, bare, {.world = 2});
  ASSERT_TRUE(after.failure) << "the variable of the previous target was left behind";
  EXPECT_EQ(after.failure->kind, frontend::TraceFailure::Kind::BadInput);
  EXPECT_EQ(after.failure->loc.line, 20);
  EXPECT_NE(after.failure->message.find("SHARDPROOF_TEST_FACTOR"), std::string::npos)
      << after.failure->message;
  // Nor does it reach the process's own environment.
  EXPECT_EQ(std::getenv("SHARDPROOF_TEST_FACTOR"), nullptr);
}

TEST(PythonFrontend, ARecipeTargetCarriesItsLayoutWorldAndTree) {
  frontend::Target target = frontend::recipe_target({.root = "/trees/megatron",
                                                     .framework = "megatron",
                                                     .entry = "mlp",
                                                     .axes = {{"tp", 0}, {"dp", 2}},
                                                     .sequence_parallel = true});
  EXPECT_EQ(target.function, "mlp");
  EXPECT_EQ(target.layout, "dp=2,tp=2,sp=1"); // tp defaults to 2
  EXPECT_EQ(target.world, 4);
  EXPECT_EQ(target.environment.at("MEGATRON_ROOT"), "/trees/megatron");
  EXPECT_TRUE(target.path.ends_with("integrations/megatron/recipes.py")) << target.path;

  frontend::Target own = frontend::recipe_target(
      {.root = "/trees/ds", .framework = "deepspeed", .entry = "ulysses"});
  EXPECT_EQ(own.layout, "");
  EXPECT_FALSE(own.world); // the command line's --world
  EXPECT_EQ(own.environment.at("DEEPSPEED_ROOT"), "/trees/ds");
}

TEST(PythonFrontend, TheUsersPythonPathIsSearchedForItsRunsOnly) {
  terms::TermStore store;
  frontend::PythonFrontend python;
  const std::string dir = std::string(SHARDPROOF_SOURCE_DIR) + "/tests/frontend/";
  frontend::Target target =
      frontend::parse_target(dir + "imports_user_package.py::entry");
  frontend::TracedProgram with =
      python.trace(store, target, {.world = 2, .python_path = {dir + "user_packages"}});
  ASSERT_FALSE(with.failure) << with.failure->message;
  // Without the folder (and nothing left of the run before) `scaling` is a
  // module nobody has: its FACTOR is an unmodelled value, and the branch on
  // it stops the trace instead of proving anything.
  frontend::TracedProgram without = python.trace(store, target, {.world = 2});
  ASSERT_TRUE(without.failure);
  EXPECT_EQ(without.failure->kind, frontend::TraceFailure::Kind::Unsupported);
  EXPECT_NE(without.failure->message.find("scaling.FACTOR"), std::string::npos)
      << without.failure->message;
}

TEST(PythonFrontend, UserPythonPathTakesFoldersAndAVirtualEnvironment) {
  namespace fs = std::filesystem;
  fs::path venv = fs::path(testing::TempDir()) / "shardproof-venv";
  fs::remove_all(venv);
  // A virtual environment of another Python version is refused by name.
  fs::create_directories(venv / "lib" / "python2.7" / "site-packages");
  try {
    frontend::user_python_path({}, venv.c_str());
    ADD_FAILURE() << "a python2.7 environment was accepted";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("python2.7"), std::string::npos) << e.what();
  }
  std::string version = "python" + std::to_string(PY_MAJOR_VERSION) + "." +
                        std::to_string(PY_MINOR_VERSION);
  fs::create_directories(venv / "lib" / version / "site-packages");
  std::string given = testing::TempDir();
  auto folders = frontend::user_python_path({given + ":" + given}, venv.c_str());
  ASSERT_EQ(folders.size(), 3u);
  EXPECT_EQ(folders[2], (venv / "lib" / version / "site-packages").string());
  EXPECT_THROW(frontend::user_python_path({"/no/such/folder"}, nullptr),
               std::invalid_argument);
  EXPECT_TRUE(frontend::user_python_path({}, "").empty());
}

// Tracing passes (python_frontend.cpp, trace_ranks): a rank that decides on
// a collective's result, or asks whether it is finite, stops at the
// placeholder; the next pass gives it the linked result as terms over the
// reference's inputs (tests/frontend/linked_results.py).
namespace {
const std::string kLinked =
    std::string(SHARDPROOF_SOURCE_DIR) + "/tests/frontend/linked_results.py";

frontend::TracedProgram trace_linked(terms::TermStore &store, const std::string &entry) {
  frontend::PythonFrontend python;
  return python.trace(store, frontend::parse_target(kLinked + "::" + entry),
                      {.world = 2, .witness = terms::Witness{}});
}
} // namespace

TEST(PythonFrontendPasses, ADecisionOnAnAllReducedSumIsRecordedOverItsLinkedTerms) {
  terms::TermStore store;
  frontend::TracedProgram traced = trace_linked(store, "entry");
  ASSERT_FALSE(traced.failure) << traced.failure->message;
  std::unordered_set<terms::TermId> inputs;
  for (const ir::Leaf &leaf : traced.reference.leaves)
    inputs.insert(leaf.elements.begin(), leaf.elements.end());
  ir::LinkedProgram program(store, traced.reference, traced.ranks);
  for (const ir::Trace &rank : traced.ranks) {
    EXPECT_TRUE(rank.given_linked_terms) << rank.rank;
    ASSERT_EQ(rank.path.size(), 1u) << rank.rank;
    // The condition reads the reference's four inputs, no placeholder: the
    // sum of both ranks' squares.
    terms::TermId condition[] = {rank.path[0].condition};
    std::vector<terms::TermId> read = terms::variables_of(store, condition);
    EXPECT_EQ(read.size(), 4u) << store.to_string(condition[0]);
    for (terms::TermId v : read)
      EXPECT_TRUE(inputs.contains(v)) << store.variable(v).name;
    // The call is still recorded with its placeholders, and linking the last
    // pass gives the terms it ran with.
    ASSERT_EQ(rank.collectives.size(), 1u);
    const ir::Collective &call = rank.collectives[0];
    EXPECT_EQ(store.variable(call.outputs[0]).kind, terms::VarKind::Placeholder);
    std::vector<terms::TermId> linked = program.linked(rank.rank, call.outputs);
    std::vector<terms::TermId> roots(linked.begin(), linked.end());
    EXPECT_EQ(terms::variables_of(store, roots), read);
  }
}

TEST(PythonFrontendPasses, WhetherAnAllReducedInfinityIsInfiniteIsAskedOfItsLinkedValue) {
  // Rank 1 sends inf, so both ranks' flags are inf and both return x * 2
  // (the reference, alone, x * 3): isinf of the placeholder stopped pass 1.
  terms::TermStore store;
  frontend::TracedProgram traced = trace_linked(store, "entry_inf_from_one_rank");
  ASSERT_FALSE(traced.failure) << traced.failure->message;
  ir::LinkedProgram program(store, traced.reference, traced.ranks);
  terms::DoubleEvaluator at_one(store, [](terms::TermId) { return 1.0; });
  EXPECT_EQ(at_one(traced.reference.outputs.at(0).elements.at(0)), 3.0);
  for (const ir::Trace &rank : traced.ranks) {
    terms::TermId mine = program.linked(rank.rank, rank.outputs.at(0).elements.at(0));
    EXPECT_EQ(at_one(mine), 2.0) << rank.rank << ": " << store.to_string(mine);
  }
}

TEST(PythonFrontendPasses, AResultNoReferenceInputGivesIsNeverAnsweredAsFinite) {
  terms::TermStore store;
  frontend::TracedProgram traced = trace_linked(store, "entry_uninitialised");
  ASSERT_TRUE(traced.failure);
  EXPECT_EQ(traced.failure->kind, frontend::TraceFailure::Kind::Unsupported);
  EXPECT_NE(traced.failure->message.find("Tensor.isfinite() of a collective's result "
                                         "not linked yet (all_reduce#0@rank0[0]"),
            std::string::npos)
      << traced.failure->message;
}

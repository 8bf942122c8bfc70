// Adopting shardproof in a project (docs/pre-merge.md): pyproject.toml's
// [tool.shardproof], found upward from the working folder and overridden by
// the command line, and baselines matched by fingerprint.
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using shardproof::testing::read_text;
using shardproof::testing::run_cli_in;
using shardproof::testing::source_path;
using shardproof::testing::write_text;
namespace fs = std::filesystem;

namespace {
const std::string kFixture = "tests/fixtures/row_parallel_bias_before_reduce/";

// A project folder with the buggy fixture as model.py and a pyproject.toml.
struct Project {
  fs::path root;
  explicit Project(const std::string &config) {
    std::string name = (fs::temp_directory_path() / "shardproof-project-XXXXXX").string();
    root = mkdtemp(name.data());
    write_text(root / "model.py", read_text(source_path(kFixture + "buggy.py")));
    write_text(root / "pyproject.toml", config);
    fs::create_directories(root / "sub" / "folder");
  }
  ~Project() { fs::remove_all(root); }
};
} // namespace

TEST(Config, TargetsAndOptionsAreReadUpwardAndTheCommandLineOverrides) {
  Project project("[project]\nname = \"demo\"\n\n[tool.shardproof]\n"
                  "targets = [\"model.py::entry\"]\nworld = 4\nformat = \"json\"\n");
  // From a folder below: the config is found upward, its paths are its own.
  auto r = run_cli_in((project.root / "sub" / "folder").string(), {"check"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["targets"][0]["world"], 4);
  EXPECT_EQ(doc["findings"][0]["rule_id"], "SP001");
  auto overridden =
      run_cli_in(project.root.string(), {"check", "--world", "2", "--format", "text"});
  EXPECT_NE(overridden.out.find("--world 2: refuted"), std::string::npos)
      << overridden.out;
  auto isolated = run_cli_in(project.root.string(), {"check", "--isolated"});
  EXPECT_EQ(isolated.exit_code, 2);
  EXPECT_NE(isolated.err.find("nothing to check"), std::string::npos) << isolated.err;
}

TEST(Config, SelectAndIgnoreComeFromTheConfig) {
  Project project("[tool.shardproof]\ntargets = [\"model.py\"]\nignore = [\"SP001\"]\n"
                  "format = \"json\"\n");
  auto r = run_cli_in(project.root.string(), {"check"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["verdict"], "accepted");
}

TEST(Config, BadConfigIsAnErrorNamingFileAndLine) {
  struct Case {
    std::string config, says;
  } cases[] = {
      {"[tool.shardproof]\nworld = 4\ntargets = [\"model.py\"\n", "pyproject.toml:3:"},
      {"[tool.shardproof]\ntargets = [\"model.py\"]\n\nwrld = 4\n",
       "pyproject.toml:4: [tool.shardproof] unknown key 'wrld'"},
      {"[tool.shardproof]\nworld = \"four\"\n",
       "pyproject.toml:2: [tool.shardproof] world: expected an integer, got a string"},
      {"[tool.shardproof]\nselect = [\"SP001\", 2]\n",
       "pyproject.toml:2: [tool.shardproof] select: every item must be a string"},
  };
  for (const auto &c : cases) {
    Project project(c.config);
    auto r = run_cli_in(project.root.string(), {"check"});
    EXPECT_EQ(r.exit_code, 2) << c.config;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.config << "\n" << r.err;
  }
}

TEST(Baseline, KnownFindingsPassNewOnesFailAndLineShiftsKeepThem) {
  Project project("[tool.shardproof]\ntargets = [\"model.py\"]\n");
  const std::string root = project.root.string();
  auto written = run_cli_in(root, {"check", "--write-baseline", "baseline.json"});
  EXPECT_EQ(written.exit_code, 0) << written.out << written.err;
  auto baseline = nlohmann::json::parse(read_text(project.root / "baseline.json"));
  ASSERT_EQ(baseline["findings"].size(), 1u);
  EXPECT_EQ(baseline["findings"][0]["rule_id"], "SP001");
  // Lines added above the finding: the same fingerprint, still known.
  write_text(project.root / "model.py",
             "# a new header\n\n" + read_text(project.root / "model.py"));
  auto known =
      run_cli_in(root, {"check", "--baseline", "baseline.json", "--format", "json"});
  EXPECT_EQ(known.exit_code, 0) << known.out << known.err;
  EXPECT_EQ(nlohmann::json::parse(known.out)["suppressed"].size(), 1u);
  // Without the baseline the finding fails the run.
  EXPECT_EQ(run_cli_in(root, {"check"}).exit_code, 1);
  // A new bug elsewhere is not in the baseline: it fails.
  write_text(project.root / "other.py", read_text(source_path("examples/tp_mlp.py")));
  auto fresh = run_cli_in(root, {"check", "model.py", "other.py::entry_missing_allreduce",
                                 "--baseline", "baseline.json", "--format", "json"});
  EXPECT_EQ(fresh.exit_code, 1) << fresh.out << fresh.err;
  auto doc = nlohmann::json::parse(fresh.out);
  ASSERT_EQ(doc["findings"].size(), 1u);
  EXPECT_EQ(doc["findings"][0]["rule_id"], "SP002");
}

TEST(Baseline, NotABaselineIsAnErrorNamingTheFile) {
  Project project("[tool.shardproof]\ntargets = [\"model.py\"]\n");
  write_text(project.root / "broken.json", "{\n  \"findings\": [\n");
  auto r = run_cli_in(project.root.string(), {"check", "--baseline", "broken.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("broken.json: not a baseline"), std::string::npos) << r.err;
}

// The fixture corpus, clang-tidy style: every correct.py is proved and every
// buggy.py refuted, each error finding on a line marked `# expect: SPxxx`,
// at world sizes 2 and 4. A buggy fixture reported proved fails loudly.
// The whole text report of each is pinned too, ruff style: a snapshot under
// tests/snapshots/ (SHARDPROOF_UPDATE_SNAPSHOTS=1 rewrites them).
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

using shardproof::testing::inline_expectations;
using shardproof::testing::run_cli;
using shardproof::testing::source_path;

namespace {
struct FixtureCase {
  std::string file; // relative to the source tree
  int world;
};

void PrintTo(const FixtureCase &c, std::ostream *os) {
  *os << c.file << " --world " << c.world;
}

std::vector<FixtureCase> discover() {
  std::vector<FixtureCase> cases;
  std::vector<std::string> files;
  for (const auto &entry :
       std::filesystem::recursive_directory_iterator(source_path("tests/fixtures")))
    if (entry.path().extension() == ".py")
      files.push_back(
          entry.path().lexically_relative(SHARDPROOF_SOURCE_DIR)); // keep links
  std::sort(files.begin(), files.end());
  for (const auto &f : files)
    for (int world : {2, 4})
      cases.push_back({f, world});
  return cases;
}

// tests/snapshots/PAIR/STEM.wN.txt for tests/fixtures/PAIR/STEM.py.
std::string snapshot_path(const std::string &file, int world) {
  std::filesystem::path fixture =
      std::filesystem::path(file).lexically_relative("tests/fixtures");
  return "tests/snapshots/" + (fixture.parent_path() / fixture.stem()).string() + ".w" +
         std::to_string(world) + ".txt";
}

// The report without what changes from run to run (the seconds taken).
std::string stable_report(const std::string &report) {
  static const std::regex seconds("; [0-9]+\\.[0-9]+ s\\)");
  return std::regex_replace(report, seconds, "; N s)");
}
} // namespace

class Fixtures : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(Fixtures, VerdictAndFindingsMatchInlineExpectations) {
  const auto &[file, world] = GetParam();
  bool buggy = std::filesystem::path(file).stem() == "buggy";
  auto r = run_cli(
      {"check", file + "::entry", "--world", std::to_string(world), "--format", "json"});
  ASSERT_NE(r.exit_code, 2) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  std::set<std::pair<std::string, int>> found;
  for (const auto &f : doc["findings"])
    if (f["severity"] == "error")
      found.insert({f["rule_id"].get<std::string>(), f["line"].get<int>()});
  EXPECT_EQ(found, inline_expectations(file, world)) << r.out;
  if (buggy) {
    EXPECT_NE(doc["verdict"], "proved") << "a buggy fixture was proved: " << file;
    EXPECT_EQ(doc["verdict"], "refuted");
    EXPECT_EQ(r.exit_code, 1);
  } else {
    EXPECT_EQ(doc["verdict"], "proved") << r.out;
    EXPECT_EQ(r.exit_code, 0);
  }
}

TEST_P(Fixtures, FullReportMatchesSnapshot) {
  const auto &[file, world] = GetParam();
  auto r = run_cli({"check", file + "::entry", "--world", std::to_string(world)});
  // Only a report shardproof finished is a snapshot (never the empty output
  // of a binary that could not run).
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1 || r.exit_code == 3)
      << "exit " << r.exit_code << "\n"
      << r.out << r.err;
  std::string report = stable_report(r.out);
  std::string path = source_path(snapshot_path(file, world));
  if (std::getenv("SHARDPROOF_UPDATE_SNAPSHOTS")) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << report;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "no snapshot " << snapshot_path(file, world)
                  << ": run with SHARDPROOF_UPDATE_SNAPSHOTS=1";
  std::stringstream committed;
  committed << in.rdbuf();
  EXPECT_EQ(committed.str(), report)
      << snapshot_path(file, world)
      << " differs: if the new report is right, rerun with SHARDPROOF_UPDATE_SNAPSHOTS=1";
}

INSTANTIATE_TEST_SUITE_P(Corpus, Fixtures, ::testing::ValuesIn(discover()),
                         [](const auto &info) {
                           std::string name =
                               info.param.file + "_w" + std::to_string(info.param.world);
                           for (char &c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           return name;
                         });

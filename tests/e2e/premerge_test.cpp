// The pre-merge command line (docs/pre-merge.md) as a user runs it: the
// SARIF and GitHub reports (pinned as snapshots), output files, --version,
// `# noqa:`, pyproject.toml's [tool.shardproof] and baselines.
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

using shardproof::testing::read_text;
using shardproof::testing::run_cli;
using shardproof::testing::run_cli_in;
using shardproof::testing::source_path;
using shardproof::testing::write_text;
namespace fs = std::filesystem;

namespace {
const std::string kBuggy = "tests/fixtures/row_parallel_bias_before_reduce/buggy.py";

// A fresh folder under the system's temporary one, removed after the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string name =
        (fs::temp_directory_path() / "shardproof-premerge-XXXXXX").string();
    path = mkdtemp(name.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

// What changes from machine to machine and run to run: the checkout's
// folder, the seconds taken, the version.
std::string stable(std::string report) {
  report = std::regex_replace(report, std::regex(SHARDPROOF_SOURCE_DIR), "SRCROOT");
  report = std::regex_replace(report, std::regex("; [0-9]+\\.[0-9]+ s\\)"), "; N s)");
  return std::regex_replace(report,
                            std::regex(R"re("(semanticVersion|version)": "[0-9.]+")re"),
                            "\"$1\": \"V\"");
}

void expect_snapshot(const std::string &relative, const std::string &report) {
  std::string path = source_path(relative);
  if (std::getenv("SHARDPROOF_UPDATE_SNAPSHOTS")) {
    write_text(path, report);
    return;
  }
  ASSERT_TRUE(fs::exists(path))
      << "no snapshot " << relative << ": run with SHARDPROOF_UPDATE_SNAPSHOTS=1";
  EXPECT_EQ(read_text(path), report)
      << relative << " differs: if the new report is right, "
      << "rerun with SHARDPROOF_UPDATE_SNAPSHOTS=1";
}
} // namespace

TEST(PremergeFormats, SarifAndGithubReportsMatchSnapshots) {
  for (std::string format : {"sarif", "github"}) {
    auto r = run_cli({"check", kBuggy, "--world", "2", "--format", format});
    ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
    expect_snapshot("tests/snapshots/premerge/row_parallel_bias_before_reduce.buggy." +
                        (format == "sarif" ? std::string("sarif") : "github.txt"),
                    stable(r.out));
  }
}

TEST(PremergeFormats, SarifCarriesRulesChainAndFingerprint) {
  auto r = run_cli({"check", kBuggy, "--world", "2", "--format", "sarif"});
  auto doc = nlohmann::json::parse(r.out);
  const auto &run = doc["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["rules"].size(), 20u);
  ASSERT_EQ(run["results"].size(), 1u);
  const auto &result = run["results"][0];
  EXPECT_EQ(result["ruleId"], "SP001");
  EXPECT_EQ(run["tool"]["driver"]["rules"][result["ruleIndex"].get<int>()]["id"],
            "SP001");
  const auto &where = result["locations"][0]["physicalLocation"];
  EXPECT_EQ(where["artifactLocation"]["uri"], kBuggy);
  EXPECT_EQ(where["artifactLocation"]["uriBaseId"], "%SRCROOT%");
  EXPECT_EQ(where["region"]["startLine"], 61);
  ASSERT_EQ(result["relatedLocations"].size(), 1u);
  EXPECT_EQ(result["relatedLocations"][0]["physicalLocation"]["region"]["startLine"], 62);
  EXPECT_FALSE(result["partialFingerprints"]["shardproofFingerprint/v1"]
                   .get<std::string>()
                   .empty());
}

TEST(PremergeFormats, GithubCommandsEscapeAsGithubDocuments) {
  auto r = run_cli({"check", kBuggy, "--world", "2", "--format", "github"});
  // Newlines in the message are %0A; one line per annotation.
  std::regex annotation(
      R"(^::error file=[^,:]+,line=61,col=27,title=SP001 forward-mismatch::[^\n]*%0A)");
  EXPECT_TRUE(std::regex_search(r.out, annotation)) << r.out;
  auto bad = run_cli({"check", "tests/e2e/bad/syntax_error.py", "--format", "github"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("::error file=tests/e2e/bad/syntax_error.py,line="),
            std::string::npos)
      << bad.out << bad.err;
  // ':' and ',' in a property are escaped (the title names FILE::FUNC).
  EXPECT_NE(
      bad.out.find("title=shardproof%3A tests/e2e/bad/syntax_error.py%3A%3Aentry::"),
      std::string::npos)
      << bad.out;
}

TEST(PremergeOutput, FilesAreWrittenWholeAndReplaced) {
  TempDir dir;
  fs::path sarif = dir.path / "report.sarif", json = dir.path / "report.json";
  write_text(sarif, "stale");
  auto r = run_cli({"check", kBuggy, "--format", "github,sarif:" + sarif.string(),
                    "--output", json.string()});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << "github went to --output, nothing to stdout: " << r.out;
  EXPECT_NE(read_text(json).find("::error file="), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(read_text(sarif))["version"], "2.1.0");
  std::size_t entries = std::distance(fs::directory_iterator(dir.path), {});
  EXPECT_EQ(entries, 2u) << "a temporary file was left behind";
  auto unwritable = run_cli({"check", kBuggy, "--output", "/nonexistent/folder/r.txt"});
  EXPECT_EQ(unwritable.exit_code, 2);
  EXPECT_NE(unwritable.err.find("cannot write /nonexistent/folder/r.txt"),
            std::string::npos)
      << unwritable.err;
}

TEST(PremergeOutput, TwoFormatsOnStandardOutputAreRefusedBeforeTheRun) {
  auto r = run_cli({"check", kBuggy, "--format", "text,json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("one format at most goes to standard output"), std::string::npos);
  auto unknown = run_cli({"check", kBuggy, "--format", "xml"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown format 'xml'"), std::string::npos) << unknown.err;
}

TEST(PremergeVersion, NamesShardproofZ3LlvmAndPython) {
  auto r = run_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(std::regex_search(
      r.out,
      std::regex(
          R"(^shardproof [0-9]+\.[0-9]+\.[0-9]+\nZ3 4\.[0-9.]+\nLLVM 19\.[0-9.]+\n)"
          R"(Python 3\.[0-9.]+ \(embedded\)\n$)")))
      << r.out;
}

TEST(PremergeSuppression, NoqaCodesSuppressLikeShardproofIgnore) {
  auto r =
      run_cli({"check", "tests/e2e/frontend/suppressed_noqa.py", "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["verdict"], "accepted");
  ASSERT_EQ(doc["suppressed"].size(), 1u);
  EXPECT_EQ(doc["suppressed"][0]["rule_id"], "SP002");
  // A bare `# noqa` names no rule: the finding stands.
  TempDir dir;
  std::string text = read_text(source_path("tests/e2e/frontend/suppressed_noqa.py"));
  text = std::regex_replace(text, std::regex("# noqa: E501, SP002"), "# noqa");
  write_text(dir.path / "bare.py", text);
  auto bare = run_cli({"check", (dir.path / "bare.py").string(), "--format", "json"});
  EXPECT_EQ(bare.exit_code, 1) << bare.out << bare.err;
}

// Progress is drawn on a terminal's stderr only (`script` gives the run a
// pseudo-terminal), never into logs and pipes.
TEST(PremergeProgress, DrawnOnATerminalOnly) {
  std::string command = "cd '" SHARDPROOF_SOURCE_DIR
                        "' && script -qec \"'" SHARDPROOF_BINARY "' check " +
                        kBuggy + " >/dev/null\" /dev/null";
  FILE *pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string terminal;
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    terminal.append(buffer, n);
  pclose(pipe);
  EXPECT_NE(terminal.find("[1/1] " + kBuggy + "::entry: "), std::string::npos)
      << terminal;
  EXPECT_NE(terminal.find("9 obligations checked"), std::string::npos) << terminal;
  auto piped = run_cli({"check", kBuggy});
  EXPECT_EQ(piped.err.find('\r'), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find("[1/1]"), std::string::npos) << piped.err;
}

// Where a finding points, on tests/e2e/locations: small buggy modules whose
// bug is in a custom Function's backward, a hook, finalize_grads or a stage
// on the other side of a point-to-point message. Every error finding must be
// on a line of the module that carries its inline expectation
// (`# expect: SPxxx`, as the fixture corpus writes them), at world 2 and 4.
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <tuple>

using shardproof::testing::inline_expectations;
using shardproof::testing::run_cli;
using shardproof::testing::source_path;

namespace {
struct LocationCase {
  std::string file; // relative to the source tree
  int world;
};

void PrintTo(const LocationCase &c, std::ostream *os) {
  *os << c.file << " --world " << c.world;
}

// The modules with an expectation (not the layers they share).
std::vector<LocationCase> discover() {
  std::vector<std::string> files;
  for (const auto &entry :
       std::filesystem::directory_iterator(source_path("tests/e2e/locations"))) {
    std::ifstream in(entry.path());
    std::string text(std::istreambuf_iterator<char>(in), {});
    if (entry.path().extension() == ".py" && text.find("# expect") != std::string::npos)
      files.push_back(entry.path().lexically_relative(SHARDPROOF_SOURCE_DIR));
  }
  std::sort(files.begin(), files.end());
  std::vector<LocationCase> cases;
  for (const auto &f : files)
    for (int world : {2, 4})
      cases.push_back({f, world});
  return cases;
}
} // namespace

class Locations : public ::testing::TestWithParam<LocationCase> {};

TEST_P(Locations, EveryErrorFindingNamesTheBuggyLine) {
  const auto &[file, world] = GetParam();
  auto r = run_cli(
      {"check", file + "::entry", "--world", std::to_string(world), "--format", "json"});
  ASSERT_NE(r.exit_code, 2) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["verdict"], "refuted") << r.out;
  std::set<std::pair<std::string, int>> found;
  for (const auto &f : doc["findings"])
    if (f["severity"] == "error") {
      EXPECT_EQ(f["file"], file) << f.dump(1);
      found.insert({f["rule_id"].get<std::string>(), f["line"].get<int>()});
    }
  EXPECT_EQ(found, inline_expectations(file, world)) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Corpus, Locations, ::testing::ValuesIn(discover()),
                         [](const auto &info) {
                           std::string name =
                               std::filesystem::path(info.param.file).stem().string() +
                               "_w" + std::to_string(info.param.world);
                           for (char &c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           return name;
                         });

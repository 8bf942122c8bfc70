// Fail closed: every harness under tests/e2e/gaps meets something the
// stand-in does not model. The verdict must be "could not prove" (exit 3),
// with a note on the line marked `# gap: REGEX` whose text matches REGEX,
// however the analysed code tries to catch or work around the gap.
#include "tests/e2e/run_cli.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

using shardproof::testing::run_cli;
using shardproof::testing::source_path;

namespace {
struct Gap {
  std::string file; // relative to the source tree
  int line = 0;
  std::string pattern;
};

std::vector<Gap> discover() {
  std::vector<Gap> gaps;
  for (const auto &entry :
       std::filesystem::directory_iterator(source_path("tests/e2e/gaps"))) {
    if (entry.path().extension() != ".py")
      continue;
    std::ifstream in(entry.path());
    std::string text;
    for (int n = 1; std::getline(in, text); ++n) {
      auto at = text.find("# gap: ");
      if (at != std::string::npos)
        gaps.push_back({"tests/e2e/gaps/" + entry.path().filename().string(), n,
                        text.substr(at + 7)});
    }
  }
  std::sort(gaps.begin(), gaps.end(),
            [](const Gap &a, const Gap &b) { return a.file < b.file; });
  return gaps;
}
} // namespace

class Gaps : public ::testing::TestWithParam<Gap> {};

TEST_P(Gaps, CouldNotProveAtTheGapNamingIt) {
  const Gap &gap = GetParam();
  auto r = run_cli({"check", gap.file + "::entry", "--world", "2"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  std::regex note(std::regex_replace(gap.file, std::regex("\\."), "\\.") + ":" +
                  std::to_string(gap.line) + "(:[0-9]+)?: note: could not prove .*" +
                  gap.pattern);
  EXPECT_TRUE(std::regex_search(r.out, note)) << r.out;
  EXPECT_EQ(r.out.find(": proved"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(FailClosed, Gaps, ::testing::ValuesIn(discover()),
                         [](const ::testing::TestParamInfo<Gap> &info) {
                           auto name =
                               std::filesystem::path(info.param.file).stem().string();
                           return name;
                         });

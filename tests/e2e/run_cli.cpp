#include "tests/e2e/run_cli.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace shardproof::testing {

namespace {
std::string quote(const std::string &s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}
} // namespace

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const std::string &path, const std::string &text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

std::string source_path(const std::string &relative) {
  return std::string(SHARDPROOF_SOURCE_DIR) + "/" + relative;
}

CliResult run_cli(const std::vector<std::string> &args) {
  return run_cli_in(SHARDPROOF_SOURCE_DIR, args);
}

CliResult run_cli_in(const std::string &dir, const std::vector<std::string> &args) {
  char err_template[] = "/tmp/shardproof-stderr-XXXXXX";
  int fd = mkstemp(err_template);
  close(fd);
  // Run from the source tree so reported paths are relative, as for a user.
  std::string cmd = "cd " + quote(dir) + " && " + quote(SHARDPROOF_BINARY);
  for (const auto &a : args)
    cmd += " " + quote(a);
  cmd += " 2>" + quote(err_template);
  CliResult result;
  FILE *pipe = popen(cmd.c_str(), "r");
  std::array<char, 4096> buffer;
  std::size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.out.append(buffer.data(), n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_template);
  std::stringstream ss;
  ss << err.rdbuf();
  result.err = ss.str();
  std::remove(err_template);
  return result;
}

std::set<std::pair<std::string, int>> inline_expectations(const std::string &file,
                                                          int world) {
  std::set<std::pair<std::string, int>> out;
  std::ifstream in(source_path(file));
  std::string line;
  static const std::regex marker(R"(# expect(\[w([0-9]+)\])?:((\s+SP[0-9]{3})+))");
  static const std::regex rule_id("SP[0-9]{3}");
  for (int n = 1; std::getline(in, line); ++n)
    for (std::sregex_iterator m(line.begin(), line.end(), marker), end; m != end; ++m) {
      if ((*m)[2].matched && std::stoi((*m)[2].str()) != world)
        continue;
      std::string ids = (*m)[3].str();
      for (std::sregex_iterator it(ids.begin(), ids.end(), rule_id), e; it != e; ++it)
        out.insert({it->str(), n});
    }
  return out;
}

} // namespace shardproof::testing

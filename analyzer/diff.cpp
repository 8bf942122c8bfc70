#include "analyzer/diff.h"

#include "analyzer/fingerprint.h"

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>

namespace fs = std::filesystem;

namespace shardproof::analyzer {

namespace {
std::string shell_quoted(const std::string &text) {
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// git's standard output for `args` run in `root`; throws with its standard
// error when it fails.
std::string git(const std::string &root, const std::string &args) {
  std::string command = "git -C " + shell_quoted(root) + " " + args + " 2>&1";
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    throw std::invalid_argument("--diff: cannot run git");
  std::string out;
  std::array<char, 4096> buffer;
  for (std::size_t n; (n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0;)
    out.append(buffer.data(), n);
  int status = pclose(pipe);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::invalid_argument(fmt::format("--diff: git {}: {}", args, out));
  return out;
}

std::string normal(const std::string &path) {
  std::error_code ec;
  return fs::weakly_canonical(fs::absolute(path), ec).string();
}

// The added lines of each file of a `git diff --unified=0` listing.
void read_hunks(const std::string &root, const std::string &listing, ChangedLines &out) {
  static const std::regex hunk(R"(^@@ -[0-9,]+ \+([0-9]+)(?:,([0-9]+))? @@)");
  std::istringstream lines(listing);
  std::string file;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (line.starts_with("+++ ")) {
      file = line == "+++ /dev/null" ? "" : normal(root + "/" + line.substr(6));
      if (!file.empty())
        out.lines[file];
    } else if (!file.empty() && std::regex_search(line, m, hunk)) {
      int start = std::stoi(m[1]);
      int count = m[2].matched ? std::stoi(m[2]) : 1;
      for (int n = start; n < start + count; ++n)
        out.lines[file].insert(n);
    }
  }
}
} // namespace

bool ChangedLines::changed(const std::string &file) const {
  std::string path = normal(file);
  return lines.contains(path) || new_files.contains(path);
}

bool ChangedLines::changed(const std::string &file, int line) const {
  std::string path = normal(file);
  if (new_files.contains(path))
    return true;
  auto it = lines.find(path);
  return it != lines.end() && it->second.contains(line);
}

bool ChangedLines::any_changed(const std::vector<std::string> &files) const {
  return std::any_of(files.begin(), files.end(),
                     [&](const std::string &f) { return changed(f); });
}

ChangedLines changed_since(const std::string &base) {
  const std::string root = repository_root();
  std::string commit;
  try {
    commit = git(root, "rev-parse --verify --quiet " + shell_quoted(base + "^{commit}"));
  } catch (const std::invalid_argument &) {
    throw std::invalid_argument(
        fmt::format("--diff {}: not a commit of the git repository at {}", base, root));
  }
  commit = commit.substr(0, commit.find('\n'));
  ChangedLines changes;
  read_hunks(root,
             git(root, "diff --no-color --no-ext-diff --unified=0 " +
                           shell_quoted(commit) + " --"),
             changes);
  std::istringstream untracked(git(root, "ls-files --others --exclude-standard"));
  for (std::string file; std::getline(untracked, file);)
    changes.new_files.insert(normal(root + "/" + file));
  return changes;
}

std::size_t place_on_changed_lines(std::vector<TargetResult> &results,
                                   const ChangedLines &changes) {
  std::size_t moved = 0;
  for (auto &r : results)
    for (auto &f : r.findings) {
      if (changes.changed(f.loc.file, f.loc.line))
        continue;
      auto on_change = std::find_if(f.notes.begin(), f.notes.end(), [&](const auto &n) {
        return changes.changed(n.loc.file, n.loc.line);
      });
      if (on_change == f.notes.end())
        continue;
      checkers::Finding::Note was{
          f.loc,
          "the finding's own place; the changed line it is shown on lies on its path"};
      f.loc = on_change->loc;
      f.message += fmt::format(" (on this changed line: {})", on_change->message);
      f.notes.erase(on_change);
      f.notes.insert(f.notes.begin(), std::move(was));
      ++moved;
    }
  return moved;
}

} // namespace shardproof::analyzer

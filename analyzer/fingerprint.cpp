#include "analyzer/fingerprint.h"

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace shardproof::analyzer {

std::string repository_root() {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  for (fs::path dir = cwd; !dir.empty(); dir = dir.parent_path()) {
    if (fs::exists(dir / ".git", ec))
      return dir.string();
    if (dir == dir.root_path())
      break;
  }
  return cwd.string();
}

std::string repository_path(const std::string &path) {
  if (path.empty())
    return path;
  static const fs::path root = repository_root();
  std::error_code ec;
  fs::path absolute = fs::weakly_canonical(fs::absolute(path, ec), ec);
  fs::path rel = absolute.lexically_relative(fs::weakly_canonical(root, ec));
  if (rel.empty() || rel.string().starts_with(".."))
    return absolute.string();
  return rel.generic_string();
}

const std::string &SourceLines::line(const std::string &file, int line) {
  static const std::string none;
  auto [it, fresh] = files_.try_emplace(file);
  if (fresh) {
    std::ifstream in(file);
    for (std::string text; std::getline(in, text);)
      it->second.push_back(text);
  }
  const auto &lines = it->second;
  return line >= 1 && line <= static_cast<int>(lines.size()) ? lines[line - 1] : none;
}

namespace {
// FNV-1a, 64 bits: stable across machines and runs (std::hash is not).
std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// The line as its tokens: indentation and spacing changes keep the key.
std::string collapsed(const std::string &line) {
  std::istringstream words(line);
  std::string out;
  for (std::string word; words >> word;)
    out += (out.empty() ? "" : " ") + word;
  return out;
}

// The target as the repository names it: recipes live in shardproof's own
// install, so only their file name is kept.
std::string target_key(const Target &target) {
  std::string path = repository_path(target.path);
  if (fs::path(path).is_absolute())
    path = fs::path(path).filename().string();
  std::string launch =
      target.launch_file.empty() ? "" : "@" + repository_path(target.launch_file);
  return fmt::format("{}::{}[{}]{}", path, target.function, target.layout, launch);
}
} // namespace

std::vector<std::string> fingerprints(const TargetResult &result,
                                      const std::vector<checkers::Finding> &findings) {
  SourceLines sources;
  std::map<std::string, int> seen;
  std::vector<std::string> out;
  const std::string target = target_key(result.target);
  for (const auto &f : findings) {
    std::string key =
        fmt::format("{}\n{}\n{}\n{}", f.rule_id(), repository_path(f.loc.file),
                    collapsed(sources.line(f.loc.file, f.loc.line)), target);
    int occurrence = seen[key]++;
    out.push_back(fmt::format("{:016x}:{}", fnv1a(key), occurrence + 1));
  }
  return out;
}

} // namespace shardproof::analyzer

// The flags a build gives a .cu file (issue 13): its compile_commands.json
// entry, nearest the file, with what clang parses kept (include paths,
// macros, forced includes, the language standard) and nvcc's own flags and
// code generation dropped; torch extensions get the defines
// torch.utils.cpp_extension passes to nvcc.
#include "frontend/cuda/cuda_frontend.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace shardproof::frontend::cuda {

namespace fs = std::filesystem;

namespace {

// A shell command line split into words (quotes and backslashes as sh).
std::vector<std::string> split_command(const std::string &command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if (quote) {
      if (c == quote)
        quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < command.size())
        word += command[++i];
      else
        word += c;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word)
        words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word)
    words.push_back(word);
  return words;
}

// The flags clang's parse needs, from a compiler's arguments: -I, -isystem,
// -D, -U, -include and -std (nvcc's spellings too); paths made absolute
// against the entry's directory. Everything else (nvcc's -gencode,
// --use_fast_math, -Xcompiler, -O3, -c, -o, the sources) is dropped.
std::vector<std::string> parse_flags(const std::vector<std::string> &args,
                                     const fs::path &directory) {
  std::vector<std::string> out;
  auto absolute = [&](const std::string &p) {
    fs::path path(p);
    return (path.is_absolute() ? path : directory / path).lexically_normal().string();
  };
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string &a = args[i];
    auto joined_or_next = [&](const std::string &flag) -> std::optional<std::string> {
      if (a == flag && i + 1 < args.size())
        return args[++i];
      if (a.size() > flag.size() && a.compare(0, flag.size(), flag) == 0)
        return a.substr(a[flag.size()] == '=' ? flag.size() + 1 : flag.size());
      return std::nullopt;
    };
    if (auto v = joined_or_next("-isystem"))
      out.push_back("-isystem" + absolute(*v));
    else if (auto v = joined_or_next("--include-path"))
      out.push_back("-I" + absolute(*v));
    else if (auto v = joined_or_next("-I"))
      out.push_back("-I" + absolute(*v));
    else if (auto v = joined_or_next("--define-macro"))
      out.push_back("-D" + *v);
    else if (auto v = joined_or_next("-D"))
      out.push_back("-D" + *v);
    else if (auto v = joined_or_next("-U"))
      out.push_back("-U" + *v);
    else if (auto v = joined_or_next("-include"))
      out.push_back("-include" + absolute(*v));
    else if (a.rfind("-std=", 0) == 0 || a.rfind("--std=", 0) == 0)
      out.push_back("-std" + a.substr(a.find('=')));
  }
  return out;
}

} // namespace

std::optional<CompileCommand> compile_command_for(const std::string &path) {
  std::error_code ec;
  fs::path file = fs::weakly_canonical(fs::absolute(path), ec);
  for (fs::path dir = file.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    fs::path database = dir / "compile_commands.json";
    if (fs::exists(database, ec)) {
      CompileCommand found;
      found.database = database.string();
      nlohmann::json entries;
      try {
        std::ifstream(database) >> entries;
      } catch (const nlohmann::json::exception &e) {
        found.error = fmt::format("{} is not JSON: {}", database.string(), e.what());
        return found;
      }
      for (const auto &entry : entries) {
        if (!entry.is_object() || !entry.contains("file") || !entry.contains("directory"))
          continue;
        fs::path directory = entry["directory"].get<std::string>();
        if (directory.is_relative()) // relative to the database's folder
          directory = (dir / directory).lexically_normal();
        fs::path source = entry["file"].get<std::string>();
        if (!source.is_absolute())
          source = directory / source;
        if (fs::weakly_canonical(source, ec) != file)
          continue;
        std::vector<std::string> args;
        if (entry.contains("arguments"))
          args = entry["arguments"].get<std::vector<std::string>>();
        else if (entry.contains("command"))
          args = split_command(entry["command"].get<std::string>());
        found.flags = parse_flags(args, directory);
        return found;
      }
      found.error =
          fmt::format("{} has no entry for {}", database.string(), file.string());
      return found;
    }
    if (dir == dir.root_path())
      break;
  }
  return std::nullopt;
}

bool is_torch_extension(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string code = text.str();
  for (const char *header : {"torch/extension.h", "torch/library.h", "pybind11/",
                             "ATen/ATen.h", "c10/", "ATen/cuda/"})
    if (code.find(header) != std::string::npos)
      return true;
  return false;
}

const std::vector<std::string> &torch_extension_flags() {
  // torch.utils.cpp_extension's COMMON_NVCC_FLAGS, and shardproof's stand-in
  // PyTorch headers last (a real install's, given by -I, come first).
  static const std::vector<std::string> flags{
      "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
      "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
      "-idirafter" SHARDPROOF_CUDA_TORCH_SHIM_DIR};
  return flags;
}

} // namespace shardproof::frontend::cuda

#include "frontend/cuda/annotations.h"

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <regex>
#include <set>

namespace shardproof::frontend::cuda {

const KernelArg *KernelLaunch::arg(const std::string &name) const {
  for (const KernelArg &a : args)
    if (a.name == name)
      return &a;
  return nullptr;
}

ir::Shape KernelLaunch::reference_shape(const KernelArg &a) const {
  if (!a.per_rank)
    return a.shape;
  ir::Shape stacked{ranks};
  stacked.insert(stacked.end(), a.shape.begin(), a.shape.end());
  return stacked;
}

namespace {

struct Malformed {
  std::string message;
};

int positive_int(const std::string &text, std::string_view what) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0)
    throw Malformed{fmt::format("{} '{}' is not a positive integer", what, text)};
  return value;
}

// "(X[,Y[,Z]])" as three extents, missing ones 1.
std::array<int, 3> extents(const std::string &text, std::string_view what) {
  static const std::regex form(R"(\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?\))");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    throw Malformed{fmt::format("{}={} is not (X[,Y[,Z]])", what, text)};
  std::array<int, 3> out{1, 1, 1};
  for (int i = 0; i < 3; ++i)
    if (m[i + 1].matched)
      out[i] = positive_int(m[i + 1].str(), what);
  return out;
}

void read_launch(const std::string &rest, KernelLaunch &launch) {
  static const std::regex form(
      R"(([A-Za-z_]\w*)\s*(?:<(.*)>)?\s+grid=(\([^)]*\))\s+block=(\([^)]*\))(?:\s+shared=(\S+))?\s*)");
  std::smatch m;
  if (!std::regex_match(rest, m, form))
    throw Malformed{"expected 'launch KERNEL[<TEMPLATE ARGS>] grid=(X[,Y[,Z]]) "
                    "block=(X[,Y[,Z]]) [shared=BYTES]'"};
  launch.kernel = m[1].str();
  launch.template_args = m[2].str();
  launch.grid = extents(m[3].str(), "grid");
  launch.block = extents(m[4].str(), "block");
  // What CUDA accepts: a larger block is a launch that never runs.
  long threads = 1L * launch.block[0] * launch.block[1] * launch.block[2];
  if (threads > 1024 || launch.block[2] > 64)
    throw Malformed{fmt::format("block={} has {} threads (CUDA allows at most 1024, and "
                                "at most 64 along z)",
                                m[4].str(), threads)};
  if (m[5].matched)
    launch.shared_bytes = positive_int(m[5].str(), "shared");
}

// The words after a buffer's shape: `per-rank` (one buffer per rank) and
// `zeros` (integers, all 0).
void read_buffer_words(const std::string &words, KernelArg &arg) {
  static const std::regex word(R"(\S+)");
  for (std::sregex_iterator it(words.begin(), words.end(), word), end; it != end; ++it) {
    std::string w = it->str();
    if (w == "per-rank")
      arg.per_rank = true;
    else if (w == "zeros" && (*arg.buffer_type == ir::DType::Int32 ||
                              *arg.buffer_type == ir::DType::Int64))
      arg.concrete.assign(ir::element_count(arg.shape), 0);
    else
      throw Malformed{w == "zeros" ? "'zeros' is for int32 or int64 buffers (flags)"
                                   : fmt::format("unknown word '{}' after buffer '{}' "
                                                 "(per-rank or zeros)",
                                                 w, arg.name)};
  }
}

KernelArg read_arg(const std::string &rest) {
  static const std::regex form(R"(([A-Za-z_]\w*)\s*=\s*(.+?)\s*)");
  static const std::regex buffer(R"((\w+)\[([^\]]*)\]((?:\s+[\w-]+)*))");
  static const std::regex scalar(R"([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?[fF]?)");
  static const std::regex table(R"(ptrs\(\s*([A-Za-z_]\w*)\s*\))");
  std::smatch m;
  if (!std::regex_match(rest, m, form))
    throw Malformed{"expected 'arg NAME = DTYPE[D0,...]' or 'arg NAME = VALUE'"};
  KernelArg arg;
  arg.name = m[1].str();
  std::string value = m[2].str();
  std::smatch b;
  if (value == "rank") {
    arg.is_rank = true;
    return arg;
  }
  if (std::regex_match(value, b, table)) {
    arg.pointers_to = b[1].str();
    return arg;
  }
  if (std::regex_match(value, b, buffer)) {
    static const std::set<std::string> dtypes{"float32", "float16", "bfloat16", "int32",
                                              "int64"};
    if (!dtypes.count(b[1].str()))
      throw Malformed{fmt::format("unknown buffer dtype '{}' (float32, float16, "
                                  "bfloat16, int32 or int64)",
                                  b[1].str())};
    arg.buffer_type = ir::dtype_from_name(b[1].str());
    static const std::regex dims_form(R"(\s*\d+\s*(,\s*\d+\s*)*)");
    std::string dims = b[2].str();
    if (!std::regex_match(dims, dims_form))
      throw Malformed{
          fmt::format("buffer shape [{}] is not a list of positive integers", dims)};
    static const std::regex dim(R"(\d+)");
    for (std::sregex_iterator it(dims.begin(), dims.end(), dim), end; it != end; ++it)
      arg.shape.push_back(positive_int(it->str(), "dimension"));
    read_buffer_words(b[3].str(), arg);
    return arg;
  }
  if (!std::regex_match(value, scalar))
    throw Malformed{fmt::format("'{}' is neither DTYPE[D0,...], a number, rank nor "
                                "ptrs(BUFFER)",
                                value)};
  arg.scalar = value;
  if (arg.scalar.back() == 'f' || arg.scalar.back() == 'F')
    arg.scalar.pop_back();
  return arg;
}

void read_reference(const std::string &rest, KernelLaunch &launch) {
  static const std::regex form(R"(([A-Za-z_]\w*)\s*=\s*(.+?)\s*)");
  std::smatch m;
  if (!std::regex_match(rest, m, form))
    throw Malformed{"expected 'reference OUT = PYTORCH EXPRESSION'"};
  if (!launch.reference.empty())
    throw Malformed{fmt::format("a second reference for kernel '{}'", launch.kernel)};
  launch.output = m[1].str();
  launch.reference = m[2].str();
}

// The multi-rank args of a launch need `ranks N`; ptrs(BUF) names a
// per-rank buffer.
void check_ranks(const KernelLaunch &launch) {
  for (const KernelArg &a : launch.args) {
    if ((a.per_rank || a.is_rank || a.is_pointer_table()) && launch.ranks == 0)
      throw Malformed{fmt::format("arg '{}' is per rank, but kernel '{}' has no "
                                  "'ranks N' annotation",
                                  a.name, launch.kernel)};
    const KernelArg *target = a.is_pointer_table() ? launch.arg(a.pointers_to) : nullptr;
    if (a.is_pointer_table() && (!target || !target->per_rank))
      throw Malformed{fmt::format("ptrs({}) of arg '{}' does not name a per-rank buffer "
                                  "arg",
                                  a.pointers_to, a.name)};
  }
}

void read_ranks(const std::string &rest, KernelLaunch &launch) {
  if (launch.ranks != 0)
    throw Malformed{fmt::format("a second 'ranks' for kernel '{}'", launch.kernel)};
  launch.ranks = positive_int(rest, "ranks");
  if (launch.ranks < 2 || launch.ranks > 8)
    throw Malformed{fmt::format("ranks {} is not between 2 and 8", launch.ranks)};
}

// Whether a finished launch is complete: names its output among its buffers.
void check_complete(const KernelLaunch &launch) {
  check_ranks(launch);
  if (launch.reference.empty())
    throw Malformed{fmt::format("kernel '{}' has no 'reference OUT = ...' annotation",
                                launch.kernel)};
  const KernelArg *out = launch.arg(launch.output);
  if (!out || !out->is_buffer())
    throw Malformed{
        fmt::format("reference output '{}' is not a buffer arg of kernel '{}'",
                    launch.output, launch.kernel)};
}

} // namespace

Annotations read_annotations(const std::string &file,
                             const std::vector<std::string> &lines) {
  static const std::regex marker(R"(^\s*//\s*shardproof:\s*(\w+)\s*(.*?)\s*$)");
  Annotations result;
  ir::SourceLoc at{file, 0};
  try {
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::smatch m;
      if (!std::regex_match(lines[i], m, marker))
        continue;
      at = {file, static_cast<int>(i) + 1};
      std::string kind = m[1].str(), rest = m[2].str();
      if (kind == "ignore")
        continue; // a suppression marker, read by the session
      if (kind == "launch") {
        if (!result.launches.empty())
          check_complete(result.launches.back());
        KernelLaunch launch;
        launch.loc = at;
        read_launch(rest, launch);
        result.launches.push_back(std::move(launch));
        continue;
      }
      if (kind != "arg" && kind != "reference" && kind != "ranks")
        throw Malformed{fmt::format(
            "unknown annotation '{}' (launch, ranks, arg or reference)", kind)};
      if (result.launches.empty())
        throw Malformed{fmt::format("'{}' before any 'launch' annotation", kind)};
      KernelLaunch &launch = result.launches.back();
      if (kind == "ranks") {
        read_ranks(rest, launch);
        continue;
      }
      if (kind == "reference") {
        read_reference(rest, launch);
        launch.reference_loc = at;
        continue;
      }
      KernelArg arg = read_arg(rest);
      if (launch.arg(arg.name))
        throw Malformed{fmt::format("arg '{}' given twice", arg.name)};
      arg.loc = at;
      launch.args.push_back(std::move(arg));
    }
    if (!result.launches.empty()) {
      at = result.launches.back().loc;
      check_complete(result.launches.back());
    }
  } catch (const Malformed &e) {
    result.launches.clear();
    result.error = Diagnostic{at, "malformed shardproof annotation: " + e.message};
  }
  return result;
}

Annotations read_annotations(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return {{}, Diagnostic{{path, 0}, "cannot read " + path}};
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return read_annotations(path, lines);
}

} // namespace shardproof::frontend::cuda

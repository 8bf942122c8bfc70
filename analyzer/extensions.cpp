#include "analyzer/extensions.h"
#include "analyzer/kernel_check_internal.h"
#include "frontend/cuda/extension.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

namespace shardproof::analyzer {

namespace cuda = frontend::cuda;
namespace fs = std::filesystem;

namespace {

bool is_extension_source(const fs::path &path) {
  std::string ext = path.extension().string();
  return ext == ".cpp" || ext == ".cc" || ext == ".cu" || ext == ".cuh";
}

// The sources under `paths`, in a stable order.
std::vector<std::string> sources_under(const std::vector<std::string> &paths) {
  std::vector<std::string> out;
  for (const std::string &path : paths) {
    if (!fs::is_directory(path)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (const auto &entry : fs::recursive_directory_iterator(
             path, fs::directory_options::skip_permission_denied))
      if (entry.is_regular_file() && is_extension_source(entry.path()))
        found.push_back(entry.path().string());
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

std::string chain(const cuda::ReachedKernel &kernel) {
  return fmt::format("{}", fmt::join(kernel.via, " -> "));
}

nlohmann::json as_json(const cuda::ExtensionFunction &fn) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const cuda::ReachedKernel &k : fn.kernels)
    kernels.push_back(
        {{"kernel", k.kernel}, {"launched_at", k.launch.str()}, {"via", k.via}});
  return {{"python", fn.binding.python()},
          {"registered_at", fn.binding.loc.str()},
          {"schema", fn.binding.schema},
          {"function", fn.binding.function},
          {"defined_at", fn.defined_at ? fn.defined_at->str() : ""},
          {"kernels", kernels},
          {"undefined", fn.undefined}};
}

std::string as_text(const cuda::ExtensionFunction &fn) {
  std::string line = fmt::format("{} ({})", fn.binding.python(), fn.binding.loc.str());
  if (!fn.binding.schema.empty())
    line += fmt::format(" {}", fn.binding.schema);
  if (fn.binding.function.empty())
    return line + ": no implementation registered in these files\n";
  line += fmt::format(": {}", fn.binding.function);
  if (fn.kernels.empty())
    line += ", which launches no kernel in these files";
  for (const cuda::ReachedKernel &k : fn.kernels)
    line += fmt::format("\n  kernel {} (launched at {} via {})", k.kernel, k.launch.str(),
                        chain(k));
  for (const std::string &name : fn.undefined)
    line += fmt::format("\n  calls {}, defined in none of these files: the kernels "
                        "behind it are unknown",
                        name);
  return line + "\n";
}

} // namespace

ExtensionListing list_extensions(const std::vector<std::string> &paths,
                                 const cuda::ParseOptions &parse) {
  ExtensionListing listing;
  std::vector<cuda::FileListing> files;
  for (const std::string &path : sources_under(paths)) {
    if (!fs::is_regular_file(path)) {
      listing.errors.push_back({{path, 0}, "no such source file"});
      continue;
    }
    cuda::FileListing file = cuda::list_kernels(path, build_options(path, parse));
    if (file.error) {
      if (file.error->loc.file != path)
        file.error->message += fmt::format(" (in a header of {})", path);
      listing.errors.push_back(*file.error);
    } else
      files.push_back(std::move(file));
  }
  listing.functions = cuda::link_extensions(files);
  return listing;
}

std::string render_extensions(const ExtensionListing &listing, bool json) {
  if (json) {
    nlohmann::json out = {{"functions", nlohmann::json::array()},
                          {"errors", nlohmann::json::array()}};
    for (const cuda::ExtensionFunction &fn : listing.functions)
      out["functions"].push_back(as_json(fn));
    for (const cuda::Diagnostic &error : listing.errors)
      out["errors"].push_back({{"at", error.loc.str()}, {"message", error.message}});
    return out.dump(2) + "\n";
  }
  std::string text;
  for (const cuda::ExtensionFunction &fn : listing.functions)
    text += as_text(fn);
  if (listing.functions.empty())
    text += "no extension function is registered in these files\n";
  for (const cuda::Diagnostic &error : listing.errors)
    text += fmt::format("{}: error: {}\n", error.loc.str(), error.message);
  return text;
}

namespace {

// Calls of the module's functions: its sources are parsed together at the
// first call, once for every rank and pass of the target.
frontend::ExtensionCaller extension_caller(const std::vector<std::string> &sources,
                                           const cuda::ParseOptions &parse,
                                           std::map<std::string, std::string> functions) {
  struct Parsed {
    std::optional<cuda::CudaExtension> extension;
    std::optional<std::string> error;
  };
  auto parsed = std::make_shared<std::optional<Parsed>>();
  return [=](const std::string &name, const std::vector<frontend::ExtensionValue> &args,
             terms::TermStore &store) {
    if (!*parsed) {
      std::vector<cuda::CudaExtension::Source> paths;
      for (const std::string &path : sources)
        paths.push_back({path, build_options(path, parse)});
      auto extension = cuda::CudaExtension::parse(paths);
      if (auto *error = std::get_if<cuda::Diagnostic>(&extension))
        *parsed =
            Parsed{std::nullopt, fmt::format("{}: {}", error->loc.str(), error->message)};
      else
        *parsed = Parsed{std::move(std::get<cuda::CudaExtension>(extension)), {}};
    }
    frontend::ExtensionCallResult result;
    if ((*parsed)->error)
      result.unsupported = *(*parsed)->error;
    else
      result = (*parsed)->extension->call(store, functions.at(name), args);
    return result;
  };
}

// The module load(name, sources) builds, read afresh.
frontend::ExtensionModule read_extension(const std::string &name,
                                         const std::vector<std::string> &sources,
                                         const std::vector<std::string> &flags,
                                         const std::optional<std::string> &cuda_path) {
  cuda::ParseOptions parse;
  parse.cuda_path = cuda_path;
  parse.extra_args = flags;
  parse.extra_args.push_back("-DTORCH_EXTENSION_NAME=" + name);
  ExtensionListing listing = list_extensions(sources, parse);
  frontend::ExtensionModule module;
  std::map<std::string, std::string> functions; // Python name -> C++ function
  if (!listing.errors.empty()) {
    const cuda::Diagnostic &first = listing.errors.front();
    module.error = fmt::format("{}: {}", first.loc.str(), first.message);
    return module;
  }
  for (const cuda::ExtensionFunction &fn : listing.functions) {
    if (fn.binding.kind != cuda::ExtensionBinding::Kind::Pybind11 ||
        fn.binding.module != name)
      continue;
    frontend::ExtensionFunctionInfo info{
        fn.binding.name, fn.binding.loc, fn.binding.function, {}, fn.undefined};
    for (const cuda::ReachedKernel &k : fn.kernels)
      info.kernels.push_back(
          fmt::format("{} (launched at {})", k.kernel, k.launch.str()));
    module.functions.push_back(std::move(info));
    functions[fn.binding.name] = fn.binding.function;
  }
  module.call = extension_caller(sources, parse, std::move(functions));
  return module;
}
} // namespace

frontend::ExtensionResolver extension_resolver(std::optional<std::string> cuda_path) {
  // Every rank and every tracing pass loads the same extension: read once.
  auto read = std::make_shared<std::map<std::string, frontend::ExtensionModule>>();
  return [read, cuda_path](const std::string &name,
                           const std::vector<std::string> &sources,
                           const std::vector<std::string> &flags) {
    std::string key =
        fmt::format("{}\n{}\n{}", name, fmt::join(sources, "\n"), fmt::join(flags, "\n"));
    auto it = read->find(key);
    if (it == read->end())
      it = read->emplace(key, read_extension(name, sources, flags, cuda_path)).first;
    return it->second;
  };
}

} // namespace shardproof::analyzer

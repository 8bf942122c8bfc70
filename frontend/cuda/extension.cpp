// An extension's sources parsed together and its functions called (see
// extension.h): the host code runs in host.cpp, the kernels in lifter.cpp;
// here the memory of the call's tensors is kept between the launches.
#include "frontend/cuda/extension.h"

#include "frontend/cuda/cuda_file.h"

#include <clang/AST/RecursiveASTVisitor.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <map>

namespace shardproof::frontend::cuda {

struct CudaExtension::Impl {
  std::vector<CudaFile> files;
  // Every function with a body, by qualified name (a lambda by the name
  // bindings give it), in the first source that defines it.
  std::map<std::string, const clang::FunctionDecl *> definitions;
};

namespace {

// A kernel is lifted thread by thread inside the traced Python call, where
// the trace's watchdog cannot stop it: a launch past this is not lifted.
constexpr std::int64_t kMaxLiftedThreads = 1 << 16;

struct DefinitionCollector : clang::RecursiveASTVisitor<DefinitionCollector> {
  const clang::SourceManager &sources;
  std::map<std::string, const clang::FunctionDecl *> &out;
  DefinitionCollector(const clang::SourceManager &s,
                      std::map<std::string, const clang::FunctionDecl *> &o)
      : sources(s), out(o) {}

  bool VisitFunctionDecl(clang::FunctionDecl *fn) {
    if (fn->doesThisDeclarationHaveABody() && !fn->isDependentContext() &&
        !sources.isInSystemHeader(fn->getLocation()) &&
        !llvm::isa<clang::CXXMethodDecl>(fn))
      out.emplace(fn->getQualifiedNameAsString(), fn);
    return true;
  }
  bool VisitLambdaExpr(clang::LambdaExpr *lambda) {
    if (!sources.isInSystemHeader(lambda->getBeginLoc()))
      out.emplace(lambda_name(sources, *lambda), lambda->getCallOperator());
    return true;
  }
};

HostArgument host_argument(const ExtensionValue &value) {
  return std::visit(
      [](const auto &v) -> HostArgument {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, ExtensionTensor>)
          return HostTensor{v.dtype, v.shape, true};
        else
          return v;
      },
      value);
}

std::int64_t elements_of(const ir::Shape &shape) {
  std::int64_t n = 1;
  for (std::int64_t size : shape)
    n *= size;
  return n;
}

} // namespace

CudaExtension::CudaExtension(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaExtension::CudaExtension(CudaExtension &&) noexcept = default;
CudaExtension &CudaExtension::operator=(CudaExtension &&) noexcept = default;
CudaExtension::~CudaExtension() = default;

std::variant<CudaExtension, Diagnostic>
CudaExtension::parse(const std::vector<Source> &sources) {
  auto impl = std::make_unique<Impl>();
  for (const Source &source : sources) {
    ParsedFile parsed = parse_file(source.path, {}, source.options);
    if (!parsed.file)
      return parsed.error.value_or(Diagnostic{{source.path, 0}, "could not be parsed"});
    impl->files.push_back(std::move(*parsed.file));
  }
  for (const CudaFile &file : impl->files) {
    const clang::ASTUnit &unit = *file.impl_->unit;
    DefinitionCollector collector(unit.getSourceManager(), impl->definitions);
    collector.TraverseDecl(unit.getASTContext().getTranslationUnitDecl());
  }
  return CudaExtension(std::move(impl));
}

ExtensionHostRun CudaExtension::run(const std::string &function,
                                    const std::vector<HostArgument> &args) const {
  auto it = impl_->definitions.find(function);
  if (it == impl_->definitions.end()) {
    ExtensionHostRun missing;
    missing.run.end = HostRun::End::NotModelled;
    missing.run.why =
        fmt::format("{} is defined in none of the extension's sources", function);
    return missing;
  }
  std::vector<CudaFile::Impl *> files;
  for (const CudaFile &file : impl_->files)
    files.push_back(file.impl_.get());
  return run_extension_host(files, impl_->definitions, *it->second, args);
}

namespace {

// The memory of one call: every storage's elements, kept across launches.
class CallMemory {
public:
  CallMemory(terms::TermStore &store, const std::vector<HostStorage> &storages,
             const std::vector<ExtensionValue> &args) {
    for (std::size_t k = 0; k < storages.size(); ++k) {
      const HostStorage &s = storages[k];
      std::vector<terms::TermId> &cells = cells_.emplace_back();
      if (s.init == HostStorage::Init::Argument ||
          s.init == HostStorage::Init::CopyOfArgument)
        cells = std::get<ExtensionTensor>(args[s.argument]).elements;
      else if (s.init == HostStorage::Init::Zeros)
        cells.assign(s.numel, store.zero());
      else if (s.init == HostStorage::Init::Ones)
        cells.assign(s.numel, store.one());
      else // torch::empty: any value, as the Python stand-in's torch.empty
        for (std::int64_t i = 0; i < s.numel; ++i)
          cells.push_back(
              store.var(fmt::format("{} at {}:{}[{}]", s.made_by,
                                    std::filesystem::path(s.at.file).filename().string(),
                                    s.at.line, i),
                        terms::VarKind::Reference, "uninitialised"));
    }
  }
  // The elements from `ref` on, as a kernel's buffer sees them.
  std::vector<terms::TermId> from(const StorageRef &ref) const {
    const auto &cells = cells_[ref.storage];
    return {cells.begin() + ref.offset, cells.end()};
  }
  void write(const StorageRef &ref, const std::vector<terms::TermId> &buffer) {
    std::copy(buffer.begin(), buffer.end(), cells_[ref.storage].begin() + ref.offset);
  }
  const std::vector<terms::TermId> &cells(int storage) const { return cells_[storage]; }

private:
  std::vector<std::vector<terms::TermId>> cells_;
};

// The annotation-free launch the lifter takes: every parameter bound.
bool is_real(ir::DType dtype) {
  return dtype == ir::DType::Float32 || dtype == ir::DType::Float16 ||
         dtype == ir::DType::BFloat16 || dtype == ir::DType::Float64;
}

// An integer tensor (a mask) is given to the kernel as its values, which
// must be known: the lifter reads integers only as constants.
std::optional<std::string> concrete_values(const terms::TermStore &store,
                                           const std::vector<terms::TermId> &cells,
                                           const clang::ParmVarDecl &param,
                                           KernelArg &arg) {
  if (!param.getType()->getPointeeType().isConstQualified())
    return fmt::format("the kernel may write the integer tensor '{}' (a non-const "
                       "pointer): not modelled",
                       arg.name);
  for (terms::TermId cell : cells) {
    if (!store.is_const(cell) || store.const_value(cell).get_den() != 1)
      return fmt::format("the integer tensor '{}' has values that are not known "
                         "integers (its element {} is symbolic)",
                         arg.name, arg.concrete.size());
    arg.concrete.push_back(store.const_value(cell).get_num().get_si());
  }
  return std::nullopt;
}

std::optional<std::string>
launch_of(const terms::TermStore &store, const HostLaunch &host,
          const std::vector<HostStorage> &storages, const CallMemory &memory,
          const clang::FunctionDecl &kernel, KernelLaunch &out) {
  out.loc = host.loc;
  out.kernel = host.kernel;
  out.template_args = fmt::format("{}", fmt::join(host.choice.template_args, ", "));
  out.grid = host.choice.grid;
  out.block = host.choice.block;
  out.shared_bytes = host.choice.shared_bytes;
  for (const clang::ParmVarDecl *param : kernel.parameters()) {
    std::string name = param->getNameAsString();
    KernelArg arg;
    arg.name = name;
    arg.loc = host.loc;
    if (auto b = host.buffers.find(name); b != host.buffers.end()) {
      const HostStorage &storage = storages[b->second.storage];
      arg.buffer_type = is_real(storage.dtype) ? storage.dtype : ir::DType::Int32;
      arg.shape = {storage.numel - b->second.offset};
      if (!is_real(storage.dtype))
        if (auto why = concrete_values(store, memory.from(b->second), *param, arg))
          return why;
    } else if (auto i = host.choice.ints.find(name); i != host.choice.ints.end()) {
      arg.scalar = std::to_string(i->second);
    } else if (auto r = host.reals.find(name); r != host.reals.end()) {
      arg.scalar = fmt::format("{:.17g}", r->second);
    } else {
      return fmt::format("the kernel's argument '{}' is a null pointer", name);
    }
    out.args.push_back(std::move(arg));
  }
  return std::nullopt;
}

} // namespace

ExtensionCallResult CudaExtension::call(terms::TermStore &store,
                                        const std::string &function,
                                        const std::vector<ExtensionValue> &args) const {
  ExtensionCallResult result;
  std::vector<HostArgument> host_args;
  for (const ExtensionValue &arg : args)
    host_args.push_back(host_argument(arg));
  ExtensionHostRun run = this->run(function, host_args);
  if (run.run.end == HostRun::End::Rejected) {
    result.rejected = fmt::format("{} (at {})", run.run.why, run.run.at.str());
    return result;
  }
  if (run.run.end == HostRun::End::NotModelled) {
    result.unsupported = run.run.why;
    return result;
  }
  CallMemory memory(store, run.storages, args);
  for (const HostLaunch &host : run.run.launches) {
    const CudaFile &file = impl_->files[host.file];
    std::string callee = host.kernel;
    if (!host.choice.template_args.empty())
      callee += fmt::format("<{}>", fmt::join(host.choice.template_args, ", "));
    std::int64_t threads = 1;
    for (int k = 0; k < 3; ++k)
      threads *= std::int64_t{host.choice.grid[k]} * host.choice.block[k];
    if (threads > kMaxLiftedThreads) {
      result.unsupported = fmt::format(
          "the launch of {} at {} runs {} threads, past the {} shardproof lifts (the "
          "module's sizes are not reduced enough)",
          callee, host.loc.str(), threads, kMaxLiftedThreads);
      return result;
    }
    KernelLaunch launch;
    if (auto missing = launch_of(store, host, run.storages, memory,
                                 *file.impl_->kernels.at(callee), launch)) {
      result.unsupported =
          fmt::format("the launch of {} at {}: {}", callee, host.loc.str(), *missing);
      return result;
    }
    std::map<std::string, std::vector<terms::TermId>> inputs;
    for (const auto &[name, ref] : host.buffers)
      inputs[name] = memory.from(ref);
    LiftedLaunch lifted = file.lift(store, launch, inputs);
    if (lifted.unsupported) {
      result.unsupported =
          fmt::format("the kernel {} launched at {}: {} (at {})", callee, host.loc.str(),
                      lifted.unsupported->message, lifted.unsupported->loc.str());
      return result;
    }
    if (!lifted.findings.empty()) {
      const KernelFinding &finding = lifted.findings.front();
      result.unsupported = fmt::format(
          "the kernel {} launched at {} has a bug at this launch: {} (at {}; `shardproof "
          "check` of its file reports it)",
          callee, host.loc.str(), finding.message, finding.loc.str());
      return result;
    }
    for (const auto &[name, ref] : host.buffers)
      if (auto written = lifted.buffers.find(name); written != lifted.buffers.end())
        memory.write(ref, written->second); // an integer tensor is read only
  }
  for (const HostTensorView &view : run.returned) {
    const HostStorage &storage = run.storages[view.storage];
    int argument = -1;
    if (storage.init == HostStorage::Init::Argument) {
      // The argument itself (Python gets the same tensor); a view of it
      // would share its memory, which is not modelled.
      if (view.offset != 0 ||
          view.shape != std::get<ExtensionTensor>(args[storage.argument]).shape) {
        result = {};
        result.unsupported = fmt::format("{} returns a view of its argument {}", function,
                                         storage.argument);
        return result;
      }
      argument = storage.argument;
    }
    const auto &cells = memory.cells(view.storage);
    auto begin = cells.begin() + view.offset;
    result.returned.push_back(
        {storage.dtype, view.shape, {begin, begin + elements_of(view.shape)}});
    result.returned_arguments.push_back(argument);
  }
  if (run.returned_number)
    result.returned_number = std::visit(
        [](const auto &v) -> ExtensionValue {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, HostTensor>)
            return std::monostate{};
          else
            return v;
        },
        *run.returned_number);
  result.returns_none = run.returns_none;
  result.returns_sequence = run.returns_sequence;
  result.returns_tuple = run.returns_tuple;
  for (std::size_t k = 0; k < run.storages.size(); ++k) {
    const HostStorage &storage = run.storages[k];
    if (storage.init == HostStorage::Init::Argument &&
        memory.cells(static_cast<int>(k)) !=
            std::get<ExtensionTensor>(args[storage.argument]).elements)
      result.written[storage.argument] = memory.cells(static_cast<int>(k));
  }
  return result;
}

} // namespace shardproof::frontend::cuda

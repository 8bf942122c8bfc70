// Parsing a .cu file with Clang LibTooling 19 (shared BUILD-NOTES: what
// clang 19 needs to accept CUDA with and without the toolkit).
#include "frontend/cuda/cuda_file.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/Expr.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/Diagnostic.h>
#include <clang/Tooling/Tooling.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace shardproof::frontend::cuda {

ir::SourceLoc source_loc(const clang::SourceManager &sources, clang::SourceLocation loc) {
  clang::PresumedLoc presumed = sources.getPresumedLoc(sources.getExpansionLoc(loc));
  if (presumed.isInvalid())
    return {};
  return {presumed.getFilename(), static_cast<int>(presumed.getLine()),
          static_cast<int>(presumed.getColumn())};
}

CudaFile::CudaFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaFile::CudaFile(CudaFile &&) noexcept = default;
CudaFile::~CudaFile() = default;

namespace {
// nvcc's version macros for the toolkit at `cuda_path` (its cuda.h's
// CUDA_VERSION, 13000 for 13.0), which clang does not define: code that
// chooses a branch by them (`#if __CUDACC_VER_MAJOR__ >= 11`) is read as
// nvcc compiles it. None when cuda.h gives no version.
std::vector<std::string> nvcc_version_defines(const std::string &cuda_path) {
  std::ifstream header(cuda_path + "/include/cuda.h");
  std::string line;
  while (std::getline(header, line)) {
    std::istringstream words(line);
    std::string hash, name;
    long version = 0;
    if (words >> hash >> name >> version && hash == "#define" && name == "CUDA_VERSION")
      return {fmt::format("-D__CUDACC_VER_MAJOR__={}", version / 1000),
              fmt::format("-D__CUDACC_VER_MINOR__={}", version % 1000 / 10),
              "-D__CUDACC_VER_BUILD__=0"};
  }
  return {};
}
} // namespace

std::vector<std::string> clang_arguments(const ParseOptions &options) {
  std::vector<std::string> args{"-x",
                                "cuda",
                                "--cuda-device-only",
                                "--cuda-gpu-arch=sm_90",
                                "-std=c++17",
                                "-fsyntax-only",
                                "-Wno-unknown-cuda-version",
                                "-resource-dir=" SHARDPROOF_CLANG_RESOURCE_DIR};
  if (options.cuda_path) {
    // CUDA 13 dropped texture_fetch_functions.h, which clang's runtime
    // wrapper still includes (an empty one of ours), and moved libcu++
    // (cooperative groups need it) into include/cccl.
    args.push_back("--cuda-path=" + *options.cuda_path);
    args.push_back("-isystem" SHARDPROOF_CUDA_SHIM_DIR);
    args.push_back("-isystem" + *options.cuda_path + "/include/cccl");
    for (std::string &define : nvcc_version_defines(*options.cuda_path))
      args.push_back(std::move(define));
  } else {
    // nvcc's version macros as CUDA 12.0 would give them: shardproof's
    // header set declares what kernels of that generation use.
    args.insert(args.end(),
                {"-nocudainc", "-nocudalib", "-isystem" SHARDPROOF_CUDA_INCLUDE_DIR,
                 "-D__CUDACC_VER_MAJOR__=12", "-D__CUDACC_VER_MINOR__=0",
                 "-D__CUDACC_VER_BUILD__=0"});
  }
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  return args;
}

namespace {

// Keeps clang's first error with its place; nothing is printed.
class FirstError : public clang::DiagnosticConsumer {
public:
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level,
                        const clang::Diagnostic &info) override {
    DiagnosticConsumer::HandleDiagnostic(level, info);
    if (level < clang::DiagnosticsEngine::Error || error)
      return;
    llvm::SmallString<256> text;
    info.FormatDiagnostic(text);
    ir::SourceLoc loc;
    if (info.hasSourceManager() && info.getLocation().isValid())
      loc = source_loc(info.getSourceManager(), info.getLocation());
    error = Diagnostic{loc, text.str().str()};
  }
  std::optional<Diagnostic> error;
};

// A host function per launch that takes the kernel's address: clang then
// instantiates a template kernel as the launch names it, and the function
// tells which declaration the name resolves to. Appended after the file's
// last line, so the file's line numbers are unchanged.
std::string launch_probe(std::size_t index, const std::string &callee) {
  return fmt::format("\nstatic void __shardproof_launch_{}() {{ auto "
                     "*__shardproof_kernel = &{}; (void)__shardproof_kernel; }}\n",
                     index, callee);
}

const clang::FunctionDecl *probed_kernel(clang::ASTContext &context, std::size_t index) {
  std::string name = fmt::format("__shardproof_launch_{}", index);
  for (const clang::Decl *decl : context.getTranslationUnitDecl()->decls()) {
    const auto *probe = llvm::dyn_cast<clang::FunctionDecl>(decl);
    if (!probe || probe->getName() != name || !probe->hasBody())
      continue;
    // The body's only declaration initialises k from &KERNEL.
    struct Finder : clang::RecursiveASTVisitor<Finder> {
      const clang::FunctionDecl *found = nullptr;
      bool VisitDeclRefExpr(clang::DeclRefExpr *ref) {
        if (auto *fn = llvm::dyn_cast<clang::FunctionDecl>(ref->getDecl()))
          found = fn;
        return true;
      }
    } finder;
    finder.TraverseStmt(probe->getBody());
    return finder.found;
  }
  return nullptr;
}

} // namespace

ParsedFile parse_file(const std::string &path, const std::vector<KernelLaunch> &launches,
                      const ParseOptions &options,
                      const std::vector<std::string> &hosts) {
  std::ifstream in(path);
  if (!in)
    return {std::nullopt, Diagnostic{{path, 0}, "cannot read " + path}};
  std::stringstream text;
  text << in.rdbuf();
  std::string code = text.str();
  std::vector<int> probe_lines; // where each launch's probe is
  for (std::size_t i = 0; i < launches.size(); ++i) {
    probe_lines.push_back(static_cast<int>(std::count(code.begin(), code.end(), '\n')) +
                          2);
    code += launch_probe(i, launches[i].callee());
  }
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    probe_lines.push_back(static_cast<int>(std::count(code.begin(), code.end(), '\n')) +
                          2);
    code += launch_probe(launches.size() + h, hosts[h]);
  }

  FirstError errors;
  std::unique_ptr<clang::ASTUnit> unit = clang::tooling::buildASTFromCodeWithArgs(
      code, clang_arguments(options), path, "shardproof",
      std::make_shared<clang::PCHContainerOperations>(),
      clang::tooling::getClangStripDependencyFileAdjuster(),
      clang::tooling::FileContentMappings(), &errors);
  if (errors.error && errors.error->loc.file == path)
    for (std::size_t i = 0; i < launches.size(); ++i)
      if (errors.error->loc.line == probe_lines[i]) // the annotation's callee is wrong
        return {
            std::nullopt,
            Diagnostic{launches[i].loc,
                       fmt::format("the launch of '{}' names no kernel of this file: {}",
                                   launches[i].callee(), errors.error->message)}};
  if (errors.error || !unit) {
    Diagnostic error =
        errors.error.value_or(Diagnostic{{path, 0}, "clang could not run"});
    error.message = "the parser (clang 19) rejects this file: " + error.message;
    return {std::nullopt, std::move(error), true};
  }
  auto impl = std::make_unique<CudaFile::Impl>();
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const clang::FunctionDecl *kernel = probed_kernel(unit->getASTContext(), i);
    if (kernel)
      kernel = kernel->getDefinition();
    if (!kernel || !kernel->hasAttr<clang::CUDAGlobalAttr>())
      return {
          std::nullopt,
          Diagnostic{launches[i].loc,
                     fmt::format("'{}' is not a __global__ kernel defined in this file",
                                 launches[i].callee())}};
    impl->kernels[launches[i].callee()] = kernel;
  }
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    const clang::FunctionDecl *host =
        probed_kernel(unit->getASTContext(), launches.size() + h);
    if (host)
      host = host->getDefinition();
    if (host && host->hasBody())
      impl->hosts[hosts[h]] = host;
  }
  impl->unit = std::move(unit);
  return {CudaFile(std::move(impl)), std::nullopt};
}

std::vector<std::string> template_arguments(const clang::FunctionDecl &fn) {
  std::vector<std::string> out;
  const clang::TemplateArgumentList *args = fn.getTemplateSpecializationArgs();
  if (!args)
    return out;
  clang::PrintingPolicy policy(fn.getASTContext().getLangOpts());
  for (const clang::TemplateArgument &arg : args->asArray()) {
    if (arg.getKind() == clang::TemplateArgument::Integral)
      out.push_back(llvm::toString(arg.getAsIntegral(), 10));
    else if (arg.getKind() == clang::TemplateArgument::Type)
      out.push_back(arg.getAsType().getAsString(policy));
    else
      out.push_back("?");
  }
  return out;
}

namespace {

// The __global__ functions and the host functions that launch kernels,
// outside the toolkit's headers.
class Lister : public clang::RecursiveASTVisitor<Lister> {
public:
  Lister(const clang::SourceManager &sources, FileListing &out)
      : sources_(sources), out_(out) {}
  bool shouldVisitTemplateInstantiations() const { return false; }

  bool VisitFunctionDecl(clang::FunctionDecl *fn) {
    if (!fn->doesThisDeclarationHaveABody() ||
        sources_.isInSystemHeader(fn->getLocation()) ||
        fn->getTemplateSpecializationKind() != clang::TSK_Undeclared)
      return true;
    std::vector<std::string> template_params, params, ints, pointers;
    bool all_types = true;
    if (const clang::FunctionTemplateDecl *t = fn->getDescribedFunctionTemplate())
      for (const clang::NamedDecl *p : *t->getTemplateParameters()) {
        template_params.push_back(p->getNameAsString());
        all_types = all_types && llvm::isa<clang::TemplateTypeParmDecl>(p);
      }
    for (const clang::ParmVarDecl *p : fn->parameters()) {
      params.push_back(p->getNameAsString());
      if (p->getType()->isIntegerType())
        ints.push_back(p->getNameAsString());
      if (p->getType()->isPointerType())
        pointers.push_back(p->getNameAsString());
    }
    ir::SourceLoc loc = source_loc(sources_, fn->getLocation());
    if (fn->hasAttr<clang::CUDAGlobalAttr>()) {
      out_.kernels.push_back({fn->getNameAsString(), loc, template_params, params});
      return true;
    }
    if (read_registrations(*fn, sources_, out_))
      return true;
    FunctionCalls calls = calls_of(*fn, sources_);
    std::vector<std::string> kernels;
    for (const FunctionCalls::Launch &launch : calls.launches)
      kernels.push_back(launch.kernel);
    if (!kernels.empty() && all_types)
      out_.hosts.push_back(
          {fn->getNameAsString(), loc, template_params, params, ints, pointers, kernels});
    out_.functions.push_back(std::move(calls));
    return true;
  }

private:
  const clang::SourceManager &sources_;
  FileListing &out_;
};

} // namespace

FileListing list_kernels(const std::string &path, const ParseOptions &options) {
  FileListing listing;
  FirstError errors;
  std::unique_ptr<clang::ASTUnit> unit = clang::tooling::buildASTFromCodeWithArgs(
      [&] {
        std::ifstream in(path);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
      }(),
      clang_arguments(options), path, "shardproof",
      std::make_shared<clang::PCHContainerOperations>(),
      clang::tooling::getClangStripDependencyFileAdjuster(),
      clang::tooling::FileContentMappings(), &errors);
  if (errors.error || !unit) {
    Diagnostic error =
        errors.error.value_or(Diagnostic{{path, 0}, "clang could not run"});
    error.message = "the parser (clang 19) rejects this file: " + error.message;
    listing.error = std::move(error);
    return listing;
  }
  Lister lister(unit->getSourceManager(), listing);
  lister.TraverseDecl(unit->getASTContext().getTranslationUnitDecl());
  return listing;
}

} // namespace shardproof::frontend::cuda

// Reading an extension's registrations and call graph (for list_kernels)
// and linking them across its files (bindings.h).
#include "frontend/cuda/bindings.h"
#include "frontend/cuda/cuda_file.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>
#include <set>

namespace shardproof::frontend::cuda {

std::string ExtensionBinding::python() const {
  return kind == Kind::TorchLibrary ? fmt::format("torch.ops.{}.{}", module, name)
                                    : fmt::format("{}.{}", module, name);
}

namespace {

constexpr std::string_view kPybindInit = "pybind11_init_";
constexpr std::string_view kLibraryInit = "TORCH_LIBRARY_init_";
constexpr std::string_view kFragmentInit = "TORCH_LIBRARY_FRAGMENT_init_";
constexpr std::string_view kImplInit = "TORCH_LIBRARY_IMPL_init_";

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// "NAME_123" -> "NAME": the unique counter PyTorch appends to a block's name.
std::string without_counter(std::string name) {
  std::size_t end = name.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1])))
    --end;
  if (end < name.size() && end > 0 && name[end - 1] == '_')
    name.resize(end - 1);
  return name;
}

// The block a function is (its kind and module or namespace), if it is one.
std::optional<std::pair<ExtensionBinding::Kind, std::string>>
registration_block(const clang::FunctionDecl &fn) {
  std::string name = fn.getNameAsString();
  using Kind = ExtensionBinding::Kind;
  if (starts_with(name, kPybindInit))
    return std::pair{Kind::Pybind11, name.substr(kPybindInit.size())};
  if (starts_with(name, kLibraryInit))
    return std::pair{Kind::TorchLibrary, name.substr(kLibraryInit.size())};
  if (starts_with(name, kFragmentInit))
    return std::pair{Kind::TorchLibrary,
                     without_counter(name.substr(kFragmentInit.size()))};
  if (starts_with(name, kImplInit)) {
    // NS_KEY_UID: the dispatch key (CUDA, CPU, Autograd...) has no underscore.
    std::string ns_key = without_counter(name.substr(kImplInit.size()));
    std::size_t key = ns_key.rfind('_');
    return std::pair{Kind::TorchLibrary,
                     key == std::string::npos ? ns_key : ns_key.substr(0, key)};
  }
  return std::nullopt;
}

// Declared by the user's files, not by the system's or shardproof's headers
// (the stand-in PyTorch headers are not system headers: -idirafter).
bool users(const clang::SourceManager &sources, const clang::Decl &decl) {
  if (sources.isInSystemHeader(decl.getLocation()))
    return false;
  ir::SourceLoc loc = source_loc(sources, decl.getLocation());
  return !starts_with(loc.file, SHARDPROOF_CUDA_TORCH_SHIM_DIR);
}

void add_once(std::vector<std::string> &names, std::string name) {
  if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end())
    names.push_back(std::move(name));
}

// The calls and launches of a body, its lambdas' included.
struct CallCollector : clang::RecursiveASTVisitor<CallCollector> {
  const clang::SourceManager &sources;
  FunctionCalls &out;
  CallCollector(const clang::SourceManager &s, FunctionCalls &o) : sources(s), out(o) {}

  bool VisitCUDAKernelCallExpr(clang::CUDAKernelCallExpr *call) {
    std::string kernel = callee_name(call->getCallee());
    if (!kernel.empty() &&
        std::none_of(out.launches.begin(), out.launches.end(),
                     [&](const FunctionCalls::Launch &l) { return l.kernel == kernel; }))
      out.launches.push_back({kernel, source_loc(sources, call->getExprLoc())});
    return true;
  }
  bool VisitCallExpr(clang::CallExpr *call) {
    if (llvm::isa<clang::CUDAKernelCallExpr>(call))
      return true;
    if (const clang::FunctionDecl *callee = call->getDirectCallee()) {
      if (users(sources, *callee) && !llvm::isa<clang::CXXMethodDecl>(callee) &&
          !callee->isOverloadedOperator())
        add_once(out.calls, callee->getQualifiedNameAsString());
    } else if (const auto *lookup = llvm::dyn_cast<clang::UnresolvedLookupExpr>(
                   call->getCallee()->IgnoreParenImpCasts())) {
      // A dependent call, by its name, when a declaration it may name is the
      // user's (not the toolkit's cudaOccupancy... templates, say).
      if (std::any_of(lookup->decls_begin(), lookup->decls_end(),
                      [&](const clang::NamedDecl *d) { return users(sources, *d); }))
        add_once(out.calls, lookup->getName().getAsString());
    }
    return true;
  }

  static std::string callee_name(const clang::Expr *callee) {
    callee = callee->IgnoreParenImpCasts();
    if (const auto *ref = llvm::dyn_cast<clang::DeclRefExpr>(callee))
      return ref->getDecl()->getNameAsString();
    if (const auto *lookup = llvm::dyn_cast<clang::UnresolvedLookupExpr>(callee))
      return lookup->getName().getAsString();
    return {};
  }
};

// The first string literal in an expression (a name or schema, perhaps
// wrapped in a conversion or TORCH_SELECTIVE_NAME).
const clang::StringLiteral *first_string(const clang::Stmt *stmt) {
  if (!stmt)
    return nullptr;
  if (const auto *literal = llvm::dyn_cast<clang::StringLiteral>(stmt))
    return literal;
  for (const clang::Stmt *child : stmt->children())
    if (const clang::StringLiteral *found = first_string(child))
      return found;
  return nullptr;
}

// The function an argument binds: a function named in it (&f, f, TORCH_FN(f),
// a function template's specialization), or a lambda.
struct BoundFunction {
  const clang::FunctionDecl *function = nullptr;
  const clang::LambdaExpr *lambda = nullptr;
};
BoundFunction bound_function(const clang::Stmt *stmt) {
  if (!stmt)
    return {};
  if (const auto *lambda = llvm::dyn_cast<clang::LambdaExpr>(stmt))
    return {nullptr, lambda};
  if (const auto *ref = llvm::dyn_cast<clang::DeclRefExpr>(stmt))
    if (const auto *fn = llvm::dyn_cast<clang::FunctionDecl>(ref->getDecl()))
      return {fn, nullptr};
  for (const clang::Stmt *child : stmt->children())
    if (BoundFunction found = bound_function(child); found.function || found.lambda)
      return found;
  return {};
}

// "ns::name.overload(Tensor x) -> Tensor" -> "name".
std::string operator_name(const std::string &name_or_schema) {
  std::string name = name_or_schema.substr(0, name_or_schema.find('('));
  if (std::size_t colons = name.rfind("::"); colons != std::string::npos)
    name = name.substr(colons + 2);
  name = name.substr(0, name.find('.'));
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back())))
    name.pop_back();
  return name;
}

// The registrations of one block: m.def / m.impl calls on the block's module
// or library (pybind11's class_ methods are not functions of the module).
struct RegistrationReader : clang::RecursiveASTVisitor<RegistrationReader> {
  const clang::SourceManager &sources;
  ExtensionBinding::Kind kind;
  std::string module;
  FileListing &out;

  bool VisitCXXMemberCallExpr(clang::CXXMemberCallExpr *call) {
    const clang::CXXMethodDecl *method = call->getMethodDecl();
    const clang::CXXRecordDecl *owner = call->getRecordDecl();
    if (!method || !owner || call->getNumArgs() == 0)
      return true;
    std::string verb = method->getNameAsString(), record = owner->getNameAsString();
    bool pybind = record == "module_" || record == "module";
    if ((verb != "def" && verb != "impl") || (!pybind && record != "Library"))
      return true;
    const clang::StringLiteral *name = first_string(call->getArg(0));
    if (!name)
      return true;
    ExtensionBinding binding;
    binding.kind = kind;
    binding.module = module;
    binding.loc = source_loc(sources, call->getExprLoc());
    std::string written = name->getString().str();
    binding.name = pybind ? written : operator_name(written);
    if (!pybind && verb == "def" && written.find('(') != std::string::npos)
      binding.schema = written;
    for (unsigned i = 1; i < call->getNumArgs() && binding.function.empty(); ++i) {
      BoundFunction bound = bound_function(call->getArg(i));
      if (bound.function)
        binding.function = bound.function->getQualifiedNameAsString();
      else if (bound.lambda)
        binding.function = lambda_function(*bound.lambda);
    }
    out.bindings.push_back(std::move(binding));
    return true;
  }

  // A lambda bound in place is a function of its own in the call graph.
  std::string lambda_function(const clang::LambdaExpr &lambda) {
    FunctionCalls calls;
    calls.name = lambda_name(sources, lambda);
    calls.loc = source_loc(sources, lambda.getBeginLoc());
    CallCollector(sources, calls).TraverseStmt(lambda.getBody());
    out.functions.push_back(calls);
    return calls.name;
  }
};

} // namespace

std::string lambda_name(const clang::SourceManager &sources, const clang::LambdaExpr &l) {
  return fmt::format("(lambda at {})", source_loc(sources, l.getBeginLoc()).str());
}

bool read_registrations(const clang::FunctionDecl &fn,
                        const clang::SourceManager &sources, FileListing &out) {
  auto block = registration_block(fn);
  if (!block)
    return false;
  RegistrationReader reader{{}, sources, block->first, block->second, out};
  reader.TraverseStmt(fn.getBody());
  return true;
}

FunctionCalls calls_of(const clang::FunctionDecl &fn,
                       const clang::SourceManager &sources) {
  FunctionCalls calls;
  calls.name = fn.getQualifiedNameAsString();
  calls.loc = source_loc(sources, fn.getLocation());
  CallCollector(sources, calls).TraverseStmt(fn.getBody());
  return calls;
}

namespace {

// Every file's functions by name; a name called unqualified (a dependent
// call in a template) finds the functions whose last component it is.
class CallGraph {
public:
  explicit CallGraph(const std::vector<FileListing> &files) {
    for (const FileListing &file : files)
      for (const FunctionCalls &fn : file.functions)
        by_name_.emplace(fn.name, &fn);
  }

  std::vector<const FunctionCalls *> find(const std::string &name) const {
    std::vector<const FunctionCalls *> found;
    auto [first, last] = by_name_.equal_range(name);
    for (auto it = first; it != last; ++it)
      found.push_back(it->second);
    if (found.empty() && name.find("::") == std::string::npos)
      for (const auto &[qualified, fn] : by_name_)
        if (qualified.size() > name.size() + 2 &&
            qualified.compare(qualified.size() - name.size() - 2, std::string::npos,
                              "::" + name) == 0)
          found.push_back(fn);
    return found;
  }

  // The kernels `start` launches, itself or through the functions it calls
  // (breadth first: each kernel with the shortest chain to it).
  void reach(const std::string &start, ExtensionFunction &out) const {
    std::deque<std::pair<std::string, std::vector<std::string>>> queue{{start, {}}};
    std::set<std::string> seen{start};
    while (!queue.empty()) {
      auto [name, via] = queue.front();
      queue.pop_front();
      std::vector<const FunctionCalls *> definitions = find(name);
      if (definitions.empty()) {
        add_once(out.undefined, name);
        continue;
      }
      via.push_back(name);
      for (const FunctionCalls *fn : definitions) {
        if (!out.defined_at && via.size() == 1)
          out.defined_at = fn->loc;
        for (const FunctionCalls::Launch &launch : fn->launches)
          if (std::none_of(
                  out.kernels.begin(), out.kernels.end(),
                  [&](const ReachedKernel &k) { return k.kernel == launch.kernel; }))
            out.kernels.push_back({launch.kernel, launch.at, via});
        for (const std::string &callee : fn->calls)
          if (seen.insert(callee).second)
            queue.emplace_back(callee, via);
      }
    }
  }

private:
  std::multimap<std::string, const FunctionCalls *> by_name_;
};

} // namespace

std::vector<ExtensionFunction> link_extensions(const std::vector<FileListing> &files) {
  std::vector<ExtensionBinding> bindings;
  for (const FileListing &file : files)
    bindings.insert(bindings.end(), file.bindings.begin(), file.bindings.end());
  // An operator's schema joins the implementations registered for it.
  auto same_operator = [](const ExtensionBinding &a, const ExtensionBinding &b) {
    return a.kind == ExtensionBinding::Kind::TorchLibrary && a.kind == b.kind &&
           a.module == b.module && a.name == b.name;
  };
  CallGraph graph(files);
  std::vector<ExtensionFunction> out;
  for (const ExtensionBinding &binding : bindings) {
    bool implemented_elsewhere =
        binding.function.empty() &&
        std::any_of(bindings.begin(), bindings.end(), [&](const ExtensionBinding &b) {
          return same_operator(b, binding) && !b.function.empty();
        });
    if (implemented_elsewhere)
      continue;
    ExtensionFunction fn{binding, std::nullopt, {}, {}};
    if (fn.binding.schema.empty())
      for (const ExtensionBinding &b : bindings)
        if (same_operator(b, binding) && !b.schema.empty())
          fn.binding.schema = b.schema;
    if (!binding.function.empty())
      graph.reach(binding.function, fn);
    out.push_back(std::move(fn));
  }
  return out;
}

} // namespace shardproof::frontend::cuda

// Inside the CUDA frontend: the parsed translation unit and the kernel each
// launch names (shared by parse.cpp and lifter.cpp; clang headers here).
#pragma once

#include "frontend/cuda/cuda_frontend.h"

#include <clang/AST/Decl.h>
#include <clang/AST/ExprCXX.h>
#include <clang/Frontend/ASTUnit.h>

namespace shardproof::frontend::cuda {

struct CudaFile::Impl {
  std::unique_ptr<clang::ASTUnit> unit;
  // by launch callee(); run_host adds the kernels a host function launches
  mutable std::map<std::string, const clang::FunctionDecl *> kernels;
  std::map<std::string, const clang::FunctionDecl *> hosts; // by callee
};

// Runs the extension function `fn` on `args` across `files` (its sources,
// their functions by qualified name in `definitions`): CudaExtension::run.
ExtensionHostRun
run_extension_host(const std::vector<CudaFile::Impl *> &files,
                   const std::map<std::string, const clang::FunctionDecl *> &definitions,
                   const clang::FunctionDecl &fn, const std::vector<HostArgument> &args);

// The template arguments of a function template's specialization, as C++
// spells them ("float, float, float, 5"); empty for a plain function.
std::vector<std::string> template_arguments(const clang::FunctionDecl &fn);

// For list_kernels (bindings.cpp): whether `fn` is an extension's
// registration block (PYBIND11_MODULE, TORCH_LIBRARY...), its registrations
// then added to `out`; and what a function calls and launches.
bool read_registrations(const clang::FunctionDecl &fn,
                        const clang::SourceManager &sources, FileListing &out);
FunctionCalls calls_of(const clang::FunctionDecl &fn,
                       const clang::SourceManager &sources);
// How bindings name a lambda bound in place: "(lambda at FILE:LINE:COL)".
std::string lambda_name(const clang::SourceManager &sources, const clang::LambdaExpr &l);

// Where `loc` is in the user's source (a macro's expansion site).
ir::SourceLoc source_loc(const clang::SourceManager &sources, clang::SourceLocation loc);

} // namespace shardproof::frontend::cuda

// Inside the CUDA frontend: the parsed translation unit and the kernel each
// launch names (shared by parse.cpp and lifter.cpp; clang headers here).
#pragma once

#include "frontend/cuda/cuda_frontend.h"

#include <clang/AST/Decl.h>
#include <clang/Frontend/ASTUnit.h>

namespace shardproof::frontend::cuda {

struct CudaFile::Impl {
  std::unique_ptr<clang::ASTUnit> unit;
  std::map<std::string, const clang::FunctionDecl *> kernels; // by launch callee()
};

// Where `loc` is in the user's source (a macro's expansion site).
ir::SourceLoc source_loc(const clang::SourceManager &sources, clang::SourceLocation loc);

} // namespace shardproof::frontend::cuda

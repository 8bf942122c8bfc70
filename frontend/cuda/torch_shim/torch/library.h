// shardproof stand-in for torch/library.h (see ATen/ATen.h): the operator
// registrations of TORCH_LIBRARY, TORCH_LIBRARY_FRAGMENT and
// TORCH_LIBRARY_IMPL blocks parse, their init functions named as PyTorch
// names them (TORCH_LIBRARY_init_NS, TORCH_LIBRARY_FRAGMENT_init_NS_UID,
// TORCH_LIBRARY_IMPL_init_NS_KEY_UID).
#pragma once
#include <ATen/ATen.h>

namespace torch {
class Library {
public:
  // Defined: a lambda's type has no linkage.
  template <typename Schema> Library &def(Schema &&schema) & { return *this; }
  template <typename NameOrSchema, typename Func>
  Library &def(NameOrSchema &&name_or_schema, Func &&f) & {
    return *this;
  }
  template <typename Name, typename Func> Library &impl(Name name, Func &&f) & {
    return *this;
  }
};
} // namespace torch

#define TORCH_FN(func) (&func)
#define TORCH_SELECTIVE_NAME(n) n
#define TORCH_SELECTIVE_SCHEMA(n) n
#define __SHARDPROOF_LIB_CONCAT2(a, b) a##b
#define __SHARDPROOF_LIB_CONCAT(a, b) __SHARDPROOF_LIB_CONCAT2(a, b)
#define TORCH_LIBRARY(ns, m) void TORCH_LIBRARY_init_##ns(::torch::Library &m)
#define TORCH_LIBRARY_FRAGMENT(ns, m)                                                    \
  void __SHARDPROOF_LIB_CONCAT(TORCH_LIBRARY_FRAGMENT_init_##ns##_,                      \
                               __COUNTER__)(::torch::Library & m)
#define TORCH_LIBRARY_IMPL(ns, k, m)                                                     \
  void __SHARDPROOF_LIB_CONCAT(TORCH_LIBRARY_IMPL_init_##ns##_##k##_,                    \
                               __COUNTER__)(::torch::Library & m)

// shardproof stand-in for pybind11 (see ATen/ATen.h): what an extension's
// PYBIND11_MODULE block uses, so that its m.def bindings parse. The module's
// init function is named as pybind11 names it (pybind11_init_NAME), which
// is how shardproof finds it with either header set.
#pragma once

namespace pybind11 {
struct arg {
  explicit arg(const char *name);
  template <typename T> arg &operator=(const T &default_value);
};
template <typename... Guards> struct call_guard {};
struct gil_scoped_release {};
struct gil_scoped_acquire {};
enum class return_value_policy { automatic, copy, move, reference, reference_internal };

class module_ {
public:
  template <typename Func, typename... Extra>
  module_ &def(const char *name, Func &&f, const Extra &...extra) {
    return *this; // defined: a lambda's type has no linkage
  }
  module_ def_submodule(const char *name, const char *doc = nullptr);
  template <typename T> void attr(const char *name, T &&value);
  const char *doc;
};
using module = module_;
} // namespace pybind11
namespace py = pybind11;

#define __SHARDPROOF_PY_CONCAT2(a, b) a##b
#define __SHARDPROOF_PY_CONCAT(a, b) __SHARDPROOF_PY_CONCAT2(a, b)
#define PYBIND11_MODULE(name, variable, ...)                                             \
  void __SHARDPROOF_PY_CONCAT(pybind11_init_, name)(::pybind11::module_ & variable)

#include "analyzer/version.h"

#include <Python.h>
#include <fmt/format.h>
#include <llvm/Config/llvm-config.h>
#include <z3.h>

namespace shardproof::analyzer {

std::string version() { return SHARDPROOF_VERSION; }

std::string version_report() {
  unsigned major, minor, build, revision;
  Z3_get_version(&major, &minor, &build, &revision);
  // Py_GetVersion is the linked libpython's and needs no running interpreter.
  std::string python = Py_GetVersion();
  python = python.substr(0, python.find(' '));
  return fmt::format("shardproof {}\nZ3 {}.{}.{}\nLLVM {}\nPython {} (embedded)",
                     version(), major, minor, build, LLVM_VERSION_STRING, python);
}

} // namespace shardproof::analyzer

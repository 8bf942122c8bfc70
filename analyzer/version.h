// shardproof's version (CMake's project version) and those of what it is
// built on, for --version and the SARIF driver.
#pragma once

#include <string>

namespace shardproof::analyzer {

std::string version();
// "shardproof 0.1.0\nZ3 4.8.12\nLLVM 19.1.7\nPython 3.11.2 (embedded)"
std::string version_report();

} // namespace shardproof::analyzer

#include "frontend/frontend.h"

#include <fstream>

namespace shardproof::frontend {

Target parse_target(const std::string &text) {
  auto sep = text.rfind("::");
  if (sep == std::string::npos)
    return {.path = text, .function = "entry"};
  return {.path = text.substr(0, sep), .function = text.substr(sep + 2)};
}

namespace {
void read_file(SourceFiles &sources, const std::string &file) {
  if (file.empty() || sources.contains(file))
    return;
  std::ifstream in(file);
  if (!in)
    return;
  auto &lines = sources[file];
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
}

void read_trace_sources(SourceFiles &sources, const ir::Trace &trace) {
  for (const ir::Node &node : trace.nodes)
    read_file(sources, node.loc.file);
  for (const ir::Collective &call : trace.collectives)
    read_file(sources, call.loc.file);
  for (const ir::Leaf &leaf : trace.leaves)
    read_file(sources, leaf.loc.file);
  for (const ir::ModuleCall &call : trace.module_calls)
    read_file(sources, call.loc.file);
}
} // namespace

SourceFiles read_sources(const TracedProgram &program) {
  SourceFiles sources;
  read_trace_sources(sources, program.reference);
  for (const ir::Trace &rank : program.ranks)
    read_trace_sources(sources, rank);
  if (program.failure)
    read_file(sources, program.failure->loc.file);
  return sources;
}

} // namespace shardproof::frontend

#include "analyzer/outputs.h"

#include "analyzer/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace fs = std::filesystem;

namespace shardproof::analyzer {

const std::vector<std::string> &report_formats() {
  static const std::vector<std::string> names{"text", "json", "sarif", "github"};
  return names;
}

std::vector<ReportOutput> report_outputs(const std::vector<std::string> &formats,
                                         const std::optional<std::string> &output) {
  std::vector<ReportOutput> outputs;
  int on_stdout = 0;
  for (const std::string &item :
       formats.empty() ? std::vector<std::string>{"text"} : formats) {
    auto colon = item.find(':');
    ReportOutput out{item.substr(0, colon), std::nullopt};
    if (colon != std::string::npos)
      out.file = item.substr(colon + 1);
    const auto &names = report_formats();
    if (std::find(names.begin(), names.end(), out.format) == names.end())
      throw std::invalid_argument(fmt::format(
          "--format: unknown format '{}' (text, json, sarif or github)", out.format));
    if (out.file && out.file->empty())
      throw std::invalid_argument("--format " + item + ": no file after ':'");
    on_stdout += !out.file;
    outputs.push_back(std::move(out));
  }
  if (on_stdout > 1)
    throw std::invalid_argument("--format: one format at most goes to standard output "
                                "(or --output); give the others a file: sarif:FILE");
  for (auto &out : outputs)
    if (!out.file && output)
      out.file = output;
  return outputs;
}

void write_file_atomically(const std::string &path, const std::string &content) {
  fs::path target = fs::absolute(path);
  std::string temp =
      (target.parent_path() / ("." + target.filename().string() + ".XXXXXX")).string();
  int fd = mkstemp(temp.data());
  if (fd < 0)
    throw std::runtime_error(
        fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  std::size_t written = 0;
  while (written < content.size()) {
    ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    written += static_cast<std::size_t>(n);
  }
  bool ok = written == content.size() && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  // mkstemp's file is private (0600); a report is as readable as any file.
  fs::permissions(temp, fs::perms::owner_read | fs::perms::owner_write |
                            fs::perms::group_read | fs::perms::others_read);
  if (!ok || std::rename(temp.c_str(), target.c_str()) != 0) {
    int error = errno;
    std::remove(temp.c_str());
    throw std::runtime_error(
        fmt::format("cannot write {}: {}", path, std::strerror(error)));
  }
}

namespace {
// The report in `format`; the text report's errors go to `err`.
std::string render(const std::string &format, const std::vector<TargetResult> &results,
                   std::ostream &err) {
  std::ostringstream out;
  if (format == "json")
    write_json(out, results);
  else if (format == "sarif")
    write_sarif(out, results);
  else if (format == "github")
    write_github(out, results);
  else
    write_text(out, err, results);
  return out.str();
}
} // namespace

void write_reports(const std::vector<ReportOutput> &outputs,
                   const std::vector<TargetResult> &results) {
  for (const auto &output : outputs) {
    std::string report = render(output.format, results, std::cerr);
    if (output.file)
      write_file_atomically(*output.file, report);
    else
      std::cout << report << std::flush;
  }
}

} // namespace shardproof::analyzer

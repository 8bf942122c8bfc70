// shardproof's CUDA kernel checks as a clang-tidy plugin module:
//
//   clang-tidy-19 -load=build/libshardproof_tidy.so -checks='-*,shardproof-*' FILE.cu --
//   ARGS
//
// One check per kernel rule of the registry, named shardproof-<rule name>
// (shardproof-memory-race, ...). A file is checked once, as
// `shardproof check FILE.cu` checks it (its annotated launches, or the
// kernels a profile recognises, each lifted and proved by the analyzer);
// each check reports the findings of its own rule. A file with no kernel to
// check, or whose kernels shardproof cannot model, gets no diagnostic here:
// clang-tidy reports findings, and "could not prove" is the CLI's verdict.
#include "analyzer/kernel_check.h"
#include "analyzer/report.h"
#include "checkers/rules.h"

#include <clang-tidy/ClangTidyCheck.h>
#include <clang-tidy/ClangTidyModule.h>
#include <clang-tidy/ClangTidyModuleRegistry.h>
#include <clang/ASTMatchers/ASTMatchFinder.h>
#include <fmt/format.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <map>
#include <mutex>

namespace shardproof::integrations {

namespace {

using clang::tidy::ClangTidyCheck;
using clang::tidy::ClangTidyContext;

// The findings of each file checked in this process, by absolute path: the
// analysis runs once however many of the checks are enabled.
const std::vector<checkers::Finding> &findings_of(const std::string &path) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<checkers::Finding>> cache;
  std::lock_guard lock(mutex);
  auto [it, inserted] = cache.try_emplace(path);
  if (!inserted)
    return it->second;
  analyzer::SessionOptions options;
  try {
    for (analyzer::TargetResult &result :
         analyzer::check_kernels(analyzer::parse_target(path), options, {}))
      std::move(result.findings.begin(), result.findings.end(),
                std::back_inserter(it->second));
  } catch (const std::exception &) {
    // shardproof's own error: no finding, as for a kernel it cannot model.
  }
  return it->second;
}

class KernelRuleCheck : public ClangTidyCheck {
public:
  KernelRuleCheck(llvm::StringRef name, ClangTidyContext *context,
                  checkers::RuleCode rule)
      : ClangTidyCheck(name, context), rule_(rule) {}

  bool isLanguageVersionSupported(const clang::LangOptions &lang) const override {
    return lang.CUDA;
  }

  void registerMatchers(clang::ast_matchers::MatchFinder *finder) override {
    finder->addMatcher(clang::ast_matchers::translationUnitDecl().bind("unit"), this);
  }

  void check(const clang::ast_matchers::MatchFinder::MatchResult &result) override {
    clang::SourceManager &sources = *result.SourceManager;
    auto main = sources.getFileEntryRefForID(sources.getMainFileID());
    if (!main)
      return;
    llvm::SmallString<256> path(main->getName());
    llvm::sys::fs::make_absolute(path);
    llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/true);
    for (const checkers::Finding &f : findings_of(path.str().str())) {
      if (f.rule != rule_)
        continue;
      diag(location(sources, f.loc), "%0") << f.message;
      for (const checkers::Finding::Note &note : f.notes)
        diag(location(sources, note.loc), "%0", clang::DiagnosticIDs::Note)
            << note.message;
      if (auto lines = analyzer::detail_lines(f); !lines.empty())
        diag(location(sources, f.loc), "%0", clang::DiagnosticIDs::Note)
            << fmt::format("{}", fmt::join(lines, "\n"));
    }
  }

private:
  // Where the analyzer's location is in this translation unit; the main
  // file's start when clang-tidy did not load that file.
  static clang::SourceLocation location(clang::SourceManager &sources,
                                        const ir::SourceLoc &loc) {
    if (auto file = sources.getFileManager().getOptionalFileRef(loc.file);
        file && loc.line > 0)
      if (clang::SourceLocation at =
              sources.translateFileLineCol(*file, loc.line, std::max(loc.column, 1));
          at.isValid())
        return at;
    return sources.getLocForStartOfFile(sources.getMainFileID());
  }

  checkers::RuleCode rule_;
};

class ShardproofModule : public clang::tidy::ClangTidyModule {
public:
  void addCheckFactories(clang::tidy::ClangTidyCheckFactories &factories) override {
    for (checkers::RuleCode code : checkers::kernel_rules())
      factories.registerCheckFactory(
          fmt::format("shardproof-{}", checkers::rule(code).name),
          [code](llvm::StringRef name, ClangTidyContext *context) {
            return std::make_unique<KernelRuleCheck>(name, context, code);
          });
  }
};

} // namespace

} // namespace shardproof::integrations

static clang::tidy::ClangTidyModuleRegistry::Add<
    shardproof::integrations::ShardproofModule>
    shardproof_module("shardproof-module",
                      "shardproof's CUDA kernel checks (races, bounds, barriers, "
                      "kernel = reference)");

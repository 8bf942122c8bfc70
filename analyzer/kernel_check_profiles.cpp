// Kernels checked without annotations (issue 13): the kernels a profile
// recognises, at the launches the file's host dispatchers make, case by
// case, or at the profile's own reduced launches; a size a dispatcher
// accepts but launches nothing for is SP015.
#include "analyzer/kernel_check_internal.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <tuple>

namespace shardproof::analyzer {

namespace cuda = frontend::cuda;
using checkers::Finding;
using checkers::RuleCode;
using frontend::TraceFailure;

namespace {

// A case is lifted at its smallest launch when that has at most this many
// output elements; a larger one is "could not prove", said so. What it
// bounds is the lift (its terms stay in this process) and the proof: RMS
// norm rows of 16384 elements lift and prove in about 15 s (docs/coverage.md),
// a causal softmax of 8 x 33 x 33 in 3 s once its batches' pairs are shared
// (kernel_check.cpp); the next cases of the real trees are 2-16 times larger.
constexpr std::int64_t kMaxCaseElements = 16384;

// The sizes each integer parameter of a dispatcher is run at: the small ones
// and both sides of each power of two up to 2^16 (where log2_ceil changes).
std::vector<std::int64_t> trial_sizes() {
  std::set<std::int64_t> sizes;
  for (std::int64_t v = 1; v <= 8; ++v)
    sizes.insert(v);
  for (int k = 3; k <= 16; ++k) {
    sizes.insert(std::int64_t{1} << k);
    sizes.insert((std::int64_t{1} << k) + 1);
  }
  return {sizes.begin(), sizes.end()};
}

// The other parameters' values tried, smallest first, until the host
// accepts: one raised at a time (the others 1), then all equal.
const std::vector<std::int64_t> kLadder{1, 2, 4, 8, 16, 32, 64, 128, 256, 512};

std::string sizes_str(const std::vector<std::string> &order,
                      const std::map<std::string, std::int64_t> &ints) {
  std::vector<std::string> parts;
  for (const std::string &name : order)
    if (auto it = ints.find(name); it != ints.end())
      parts.push_back(fmt::format("{} = {}", name, it->second));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The product of a run's integer arguments: the smaller, the smaller the
// launch it shows.
double volume(const std::map<std::string, std::int64_t> &ints) {
  double v = 1;
  for (const auto &[name, value] : ints)
    v *= static_cast<double>(value);
  return v;
}

std::int64_t output_elements(const cuda::KernelLaunch &launch) {
  const cuda::KernelArg *out = launch.arg(launch.output);
  return out ? ir::element_count(out->shape) : 0;
}

// A profile's launch for a host's choice; a choice that lacks a value the
// profile reads (an argument the host computed from something not followed)
// is said so, never an exception.
std::optional<cuda::KernelLaunch> complete(const cuda::KernelProfile &profile,
                                           const cuda::KernelSignature &kernel,
                                           const cuda::HostChoice &choice,
                                           std::string &why) {
  try {
    return profile.complete(kernel, choice, why);
  } catch (const std::out_of_range &) {
    why = fmt::format("the launch lacks an integer argument or template argument "
                      "profile '{}' reads (the host computed it from a value that is "
                      "not a known integer)",
                      profile.name());
    return std::nullopt;
  }
}

struct Profiled {
  cuda::KernelSignature signature;
  const cuda::KernelProfile *profile = nullptr;
};

// One dispatcher: run at every trial size of each of its integer
// parameters; the kernels it launches, by case, and the sizes it accepts
// without launching any.
class DispatcherCheck {
public:
  DispatcherCheck(const Target &file, const cuda::CudaFile &parsed,
                  const cuda::HostFunction &host, std::string callee,
                  const std::map<std::string, Profiled> &profiled,
                  const SessionOptions &options)
      : file_(file), parsed_(parsed), host_(host), callee_(std::move(callee)),
        profiled_(profiled), options_(options) {}

  std::vector<TargetResult> run() {
    if (host_.int_params.empty() && !try_size("", 0)) // no size to vary: one run
      return {not_followed()};
    for (const std::string &size : host_.int_params) {
      for (std::int64_t v : trial_sizes()) {
        if (!try_size(size, v))
          return {not_followed()};
      }
    }
    std::vector<TargetResult> results;
    for (auto &[callee, found] : cases_)
      results.push_back(check_case(callee, found));
    if (!unlaunched_.empty())
      results.push_back(unlaunched_result());
    return results;
  }

private:
  struct Case {
    cuda::HostLaunch launch;
    std::map<std::string, std::int64_t> sizes;
    std::optional<cuda::KernelLaunch> completed;
    std::string why; // when not completed
    std::int64_t elements = 0;
  };
  struct Unlaunched {
    std::set<std::string> varied; // "elems_per_row = 65", each size tried that got here
    std::map<std::string, std::int64_t> sizes;
    cuda::HostRun run;
    int count = 0;
  };

  // False when the host code does something not followed (the check stops).
  bool try_size(const std::string &size, std::int64_t v) {
    std::vector<std::string> others;
    for (const std::string &p : host_.int_params)
      if (p != size)
        others.push_back(p);
    std::vector<std::map<std::string, std::int64_t>> tries;
    for (const std::string &raised : others)
      for (std::int64_t level : kLadder) {
        std::map<std::string, std::int64_t> one{{size, v}};
        for (const std::string &o : others)
          one[o] = o == raised ? level : 1;
        tries.push_back(std::move(one));
      }
    for (std::int64_t level : kLadder) {
      std::map<std::string, std::int64_t> all{{size, v}};
      for (const std::string &o : others)
        all[o] = level;
      tries.push_back(std::move(all));
    }
    // Each with a stride as long as the size first (rows that do not
    // overlap), then as it was.
    std::vector<std::map<std::string, std::int64_t>> strided;
    for (auto t : tries) {
      for (auto &[name, value] : t)
        if (name != size && name.find("stride") != std::string::npos)
          value = v;
      strided.push_back(std::move(t));
    }
    tries.insert(tries.begin(), strided.begin(), strided.end());
    if (size.empty())
      tries = {{}};
    for (const auto &ints : tries) {
      cuda::HostRun run = parsed_.run_host(callee_, ints);
      if (run.end == cuda::HostRun::End::NotModelled) {
        not_followed_ = run;
        return false;
      }
      if (run.end == cuda::HostRun::End::Rejected)
        continue;
      if (run.launches.empty()) { // one finding per switch and value
        Unlaunched &u = unlaunched_[{run.at.str(), run.switch_on, run.switch_value}];
        if (!size.empty())
          u.varied.insert(fmt::format("{} = {}", size, v));
        if (u.count++ == 0 || volume(ints) < volume(u.sizes)) { // the smallest witness
          u.sizes = ints;
          u.run = run;
        }
      }
      for (const cuda::HostLaunch &launch : run.launches)
        record_case(launch, ints);
      // An optional pointer (p == nullptr chooses another kernel): the
      // cases it launches too; what it leaves unlaunched is no finding (a
      // required buffer left out).
      for (const std::string &pointer : host_.pointer_params) {
        cuda::HostRun without = parsed_.run_host(callee_, ints, {pointer});
        if (without.end == cuda::HostRun::End::Returned)
          for (const cuda::HostLaunch &launch : without.launches)
            if (!launch.null_buffer) // the left-out pointer not passed to it
              record_case(launch, ints);
      }
      return true;
    }
    return true; // refused at every trial: not a size the host accepts
  }

  void record_case(const cuda::HostLaunch &launch,
                   const std::map<std::string, std::int64_t> &sizes) {
    auto kernel = profiled_.find(launch.kernel);
    if (kernel == profiled_.end())
      return; // a kernel without a profile: nothing to compare it with
    std::string callee = launch.kernel;
    if (!launch.choice.template_args.empty())
      callee += fmt::format("<{}>", fmt::join(launch.choice.template_args, ", "));
    Case found{launch, sizes, std::nullopt, "", 0};
    found.launch.choice.host_ints = sizes;
    found.completed = complete(*kernel->second.profile, kernel->second.signature,
                               found.launch.choice, found.why);
    if (found.completed) {
      found.completed->loc = launch.loc;
      found.elements = output_elements(*found.completed);
    }
    auto it = cases_.find(callee);
    if (it == cases_.end() || (found.completed && (!it->second.completed ||
                                                   found.elements < it->second.elements)))
      cases_[callee] = std::move(found);
  }

  TargetResult check_case(const std::string &callee, const Case &found) const {
    Target target = file_;
    std::string sizes = sizes_str(host_.int_params, found.sizes);
    target.function = fmt::format("{} (launched by {}{})", callee, host_.name,
                                  sizes.empty() ? "" : " at " + sizes);
    TargetResult result;
    if (!found.completed)
      result = failed(target, TraceFailure::Kind::Unsupported,
                      {found.launch.loc, fmt::format("the launch of '{}' is not one its "
                                                     "profile covers: {}",
                                                     callee, found.why)});
    else if (found.elements > kMaxCaseElements)
      result = failed(
          target, TraceFailure::Kind::Unsupported,
          {found.launch.loc,
           fmt::format("the smallest launch of '{}' found ({}) has {} output elements, "
                       "over the {} a case is lifted at",
                       callee, sizes_str(host_.int_params, found.sizes), found.elements,
                       kMaxCaseElements)});
    else
      result = check_launch(file_, parsed_, *found.completed, options_);
    result.target = target;
    return result;
  }

  TargetResult unlaunched_result() const {
    Target target = file_;
    target.function = host_.name;
    TargetResult result;
    result.target = target;
    result.world = 1;
    for (const auto &[key, u] : unlaunched_) {
      bool switched = !u.run.switch_on.empty();
      Finding f = Finding::of(
          RuleCode::KernelNotLaunched, switched ? u.run.at : host_.loc,
          fmt::format("kernel not launched: '{}' accepts {} but {}: the output is left "
                      "as it was",
                      host_.name, sizes_str(host_.int_params, u.sizes),
                      switched ? fmt::format("no case of 'switch ({})' launches a kernel "
                                             "for its value {}",
                                             u.run.switch_on, u.run.switch_value)
                               : std::string("it launches no kernel")));
      if (u.count > 1)
        f.details.push_back(fmt::format("{} of the sizes tried reach this and launch "
                                        "nothing: {}",
                                        u.count, fmt::join(u.varied, "; ")));
      f.notes.push_back({host_.loc, fmt::format("'{}' is defined here", host_.name)});
      result.findings.push_back(std::move(f));
    }
    apply_rule_selection(result, options_.rules);
    return result;
  }

  TargetResult not_followed() const {
    Target target = file_;
    target.function = host_.name;
    return failed(
        target, TraceFailure::Kind::Unsupported,
        {not_followed_.at, fmt::format("the dispatcher '{}' could not be run: {}",
                                       host_.name, not_followed_.why)});
  }

  const Target &file_;
  const cuda::CudaFile &parsed_;
  const cuda::HostFunction &host_;
  std::string callee_;
  const std::map<std::string, Profiled> &profiled_;
  const SessionOptions &options_;
  std::map<std::string, Case> cases_;
  std::map<std::tuple<std::string, std::string, std::int64_t>, Unlaunched> unlaunched_;
  cuda::HostRun not_followed_;
};

// FUNCTION<float, ...>: every type parameter of a dispatcher as float; in a
// PyTorch extension, the data types as at::Half and the accumulator (a
// parameter named acc_t) as float, as apex's DISPATCH_HALF_AND_BFLOAT does.
std::string host_callee(const cuda::HostFunction &host, bool torch_extension) {
  if (host.template_params.empty())
    return host.name;
  std::vector<std::string> types;
  for (const std::string &param : host.template_params)
    types.push_back(torch_extension && param.find("acc") == std::string::npos ? "at::Half"
                                                                              : "float");
  return fmt::format("{}<{}>", host.name, fmt::join(types, ", "));
}

} // namespace

std::vector<TargetResult> check_profiled_kernels(const Target &target,
                                                 const SessionOptions &options,
                                                 const cuda::ParseOptions &parse) {
  Target file = target;
  file.function = "(file)";
  cuda::FileListing listing = cuda::list_kernels(target.path, parse);
  if (listing.error)
    return {failed(file, TraceFailure::Kind::Unsupported, *listing.error)};
  std::map<std::string, Profiled> profiled;
  for (const cuda::KernelSignature &kernel : listing.kernels)
    if (const cuda::KernelProfile *profile = cuda::profile_for(kernel))
      profiled.emplace(kernel.name, Profiled{kernel, profile});
  if (profiled.empty())
    return {};

  std::vector<const cuda::HostFunction *> dispatchers;
  std::set<std::string> dispatched;
  for (const cuda::HostFunction &host : listing.hosts)
    for (const std::string &name : host.launches)
      if (profiled.count(name)) {
        if (dispatchers.empty() || dispatchers.back() != &host)
          dispatchers.push_back(&host);
        dispatched.insert(name);
      }

  std::vector<TargetResult> results;
  std::vector<cuda::KernelLaunch> own;
  for (const auto &[name, kernel] : profiled) {
    if (dispatched.count(name))
      continue;
    for (const cuda::HostChoice &choice :
         kernel.profile->own_launches(kernel.signature)) {
      std::string why;
      if (auto launch = complete(*kernel.profile, kernel.signature, choice, why))
        own.push_back(std::move(*launch));
      else
        results.push_back(
            failed(file, TraceFailure::Kind::Unsupported,
                   {kernel.signature.loc,
                    fmt::format("profile '{}': {}", kernel.profile->name(), why)}));
    }
  }
  // A PyTorch extension's dispatchers at at::Half first; where clang
  // refuses that instantiation, at float.
  std::vector<std::string> host_callees;
  std::optional<cuda::ParsedFile> parsed;
  for (bool half : {true, false}) {
    if (!half && !cuda::is_torch_extension(target.path))
      break;
    host_callees.clear();
    for (const cuda::HostFunction *host : dispatchers)
      host_callees.push_back(
          host_callee(*host, half && cuda::is_torch_extension(target.path)));
    parsed.reset();
    parsed.emplace(cuda::parse_file(target.path, own, parse, host_callees));
    if (parsed->file)
      break;
  }
  if (!parsed->file) {
    results.push_back(failed(file,
                             parsed->rejected_by_clang ? TraceFailure::Kind::Unsupported
                                                       : TraceFailure::Kind::BadInput,
                             *parsed->error));
    return results;
  }
  for (const cuda::KernelLaunch &launch : own) {
    TargetResult result = check_launch(target, *parsed->file, launch, options);
    result.target.function +=
        fmt::format(" (profile: {})", profiled.at(launch.kernel).profile->name());
    results.push_back(std::move(result));
  }
  for (std::size_t i = 0; i < dispatchers.size(); ++i) {
    DispatcherCheck check(target, *parsed->file, *dispatchers[i], host_callees[i],
                          profiled, options);
    for (TargetResult &r : check.run())
      results.push_back(std::move(r));
  }
  return results;
}

} // namespace shardproof::analyzer

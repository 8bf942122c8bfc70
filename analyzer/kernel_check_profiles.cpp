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

// The widths each case is tried at besides its smallest size: the smallest
// sizes whose buffers' innermost dimensions are multiples of each.
constexpr std::int64_t kWidths[] = {2, 4, 8};

// The largest of 1, 2, 4 and 8 dividing the innermost dimension of every
// buffer the launch moves (what a vectorised kernel needs of its rows).
std::int64_t alignment(const cuda::KernelLaunch &launch) {
  std::int64_t k = 8;
  for (const cuda::KernelArg &arg : launch.args)
    if (arg.buffer_type && !arg.shape.empty())
      while (arg.shape.back() % k != 0)
        k /= 2;
  return k;
}

// The names of the sizes in `sizes` that differ from `from`.
std::vector<std::string> changed(const std::map<std::string, std::int64_t> &from,
                                 const std::map<std::string, std::int64_t> &sizes) {
  std::vector<std::string> names;
  for (const auto &[name, value] : sizes)
    if (auto it = from.find(name); it == from.end() || it->second != value)
      names.push_back(name);
  return names;
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

// The entries of `sizes` named in `names`.
std::map<std::string, std::int64_t>
restricted(const std::map<std::string, std::int64_t> &sizes,
           const std::vector<std::string> &names) {
  std::map<std::string, std::int64_t> out;
  for (const std::string &name : names)
    out[name] = sizes.at(name);
  return out;
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
  using Sizes = std::map<std::string, std::int64_t>;
  // A size a case was tried at and its verdict there.
  struct Tried {
    Case at;
    std::int64_t width = 1; // alignment() of its launch (1 when not covered)
    TargetResult result;
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
      for (const cuda::HostLaunch &launch : optional_launches(ints))
        record_case(launch, ints);
      return true;
    }
    return true; // refused at every trial: not a size the host accepts
  }

  // An optional pointer (p == nullptr chooses another kernel): the launches
  // made with each pointer left out that do not pass it; what it leaves
  // unlaunched is no finding (a required buffer left out).
  std::vector<cuda::HostLaunch> optional_launches(const Sizes &ints) const {
    std::vector<cuda::HostLaunch> launches;
    for (const std::string &pointer : host_.pointer_params) {
      cuda::HostRun without = parsed_.run_host(callee_, ints, {pointer});
      if (without.end == cuda::HostRun::End::Returned)
        for (const cuda::HostLaunch &launch : without.launches)
          if (!launch.null_buffer) // the left-out pointer not passed to it
            launches.push_back(launch);
    }
    return launches;
  }

  // A launch as a case (KERNEL<TEMPLATE ARGS>) completed by its kernel's
  // profile; nullopt for a kernel without one (nothing to compare it with).
  std::optional<std::pair<std::string, Case>> case_of(const cuda::HostLaunch &launch,
                                                      const Sizes &sizes) const {
    auto kernel = profiled_.find(launch.kernel);
    if (kernel == profiled_.end())
      return std::nullopt;
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
    return std::pair{std::move(callee), std::move(found)};
  }

  void record_case(const cuda::HostLaunch &launch, const Sizes &sizes) {
    auto made = case_of(launch, sizes);
    if (!made)
      return;
    auto &[callee, found] = *made;
    auto it = cases_.find(callee);
    if (it == cases_.end() || (found.completed && (!it->second.completed ||
                                                   found.elements < it->second.elements)))
      cases_[callee] = std::move(found);
  }

  // Case `callee` as the host launches it at `sizes`, its profile covering
  // the launch; nullopt where the host refuses the sizes, launches another
  // case or one its profile does not cover.
  std::optional<Case> case_at(const std::string &callee, const Sizes &sizes) const {
    cuda::HostRun run = parsed_.run_host(callee_, sizes);
    if (run.end != cuda::HostRun::End::Returned)
      return std::nullopt;
    for (bool optional : {false, true})
      for (const cuda::HostLaunch &launch :
           optional ? optional_launches(sizes) : run.launches)
        if (auto made = case_of(launch, sizes);
            made && made->first == callee && made->second.completed)
          return std::move(made->second);
    return std::nullopt;
  }

  // The smallest launch of case `callee` whose buffers' innermost
  // dimensions are multiples of k: `from`'s sizes with one size parameter,
  // else two (strides never), rounded up to a multiple of k.
  std::optional<Case> aligned_case(const std::string &callee, const Case &from,
                                   std::int64_t k) const {
    std::vector<std::string> free;
    for (const auto &[name, value] : from.sizes)
      if (value % k != 0 && name.find("stride") == std::string::npos)
        free.push_back(name);
    std::optional<Case> best;
    auto consider = [&](std::initializer_list<std::string> rounded) {
      Sizes sizes = from.sizes;
      for (const std::string &name : rounded)
        sizes[name] = (sizes[name] + k - 1) / k * k;
      std::optional<Case> found = case_at(callee, sizes);
      if (found && alignment(*found->completed) >= k &&
          (!best || found->elements < best->elements))
        best = std::move(found);
    };
    for (std::size_t i = 0; i < free.size(); ++i)
      consider({free[i]});
    for (std::size_t i = 0; !best && i < free.size(); ++i)
      for (std::size_t j = i + 1; j < free.size(); ++j)
        consider({free[i], free[j]});
    return best;
  }

  // A case at its smallest size and at the smallest sizes that are
  // multiples of 2, 4 and 8 (each run once), then its verdict over them.
  TargetResult check_case(const std::string &callee, const Case &found) const {
    std::vector<Tried> tried{try_case(callee, found)};
    for (std::int64_t k : kWidths) {
      if (std::any_of(tried.begin(), tried.end(),
                      [&](const Tried &t) { return t.width >= k; }))
        continue; // the smallest size of this width is run already
      if (std::optional<Case> aligned = aligned_case(callee, found, k))
        tried.push_back(try_case(callee, *aligned));
    }
    return combined(callee, std::move(tried));
  }

  Tried try_case(const std::string &callee, const Case &found) const {
    return {found, found.completed ? alignment(*found.completed) : 1,
            run_case(callee, found)};
  }

  TargetResult run_case(const std::string &callee, const Case &found) const {
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
    return result;
  }

  // The width k whose sizes tried are all proved while every size tried
  // below it faults or is one the profile does not cover; nullopt if none.
  static std::optional<std::int64_t> precondition(const std::vector<Tried> &tried) {
    for (std::int64_t k : kWidths) {
      bool aligned = false, below = false, holds = true;
      for (const Tried &t : tried) {
        TargetVerdict verdict = t.result.verdict();
        if (t.width >= k)
          aligned = true, holds &= verdict == TargetVerdict::Proved;
        else
          below = true, holds &= verdict == TargetVerdict::Refuted || !t.at.completed;
      }
      if (aligned && below && holds)
        return k;
    }
    return std::nullopt;
  }

  // What a size tried beside the one a case is reported at gave, for the
  // report's details: its fault, its proof, or why it could not be proved.
  std::string outcome_at(const Tried &t) const {
    std::string at =
        fmt::format("at {}{} (a multiple of {})", sizes_str(host_.int_params, t.at.sizes),
                    t.result.verdict() == TargetVerdict::Refuted ? " too" : "", t.width);
    switch (t.result.verdict()) {
    case TargetVerdict::Refuted:
      return fmt::format("{}: {}", at, t.result.findings.front().message);
    case TargetVerdict::Proved:
      return fmt::format("{}: proved", at);
    default:
      break;
    }
    std::string why = t.result.failure ? t.result.failure->message : "";
    for (const checkers::ObligationResult &o : t.result.obligations)
      if (why.empty() && o.verdict.kind == prover::Verdict::Kind::Unknown)
        why = o.verdict.why;
    return fmt::format("{}: could not prove{}", at, why.empty() ? "" : ": " + why);
  }

  // One result for the case over the sizes tried: proved where each is; at
  // a precondition (a fault only below width k), the proofs at the aligned
  // sizes and an SP019 warning; otherwise the first size that is not proved
  // as its own verdict.
  TargetResult combined(const std::string &callee, std::vector<Tried> tried) const {
    const Sizes &first = tried.front().at.sizes;
    std::vector<std::string> also;
    for (std::size_t i = 1; i < tried.size(); ++i)
      also.push_back(
          sizes_str(host_.int_params,
                    restricted(tried[i].at.sizes, changed(first, tried[i].at.sizes))));
    std::string sizes = sizes_str(host_.int_params, first);
    Target target = file_;
    target.function = fmt::format(
        "{} (launched by {}{}{})", callee, host_.name,
        sizes.empty() ? "" : " at " + sizes,
        also.empty() ? "" : fmt::format("; also at {}", fmt::join(also, "; ")));
    std::optional<std::int64_t> k = precondition(tried);
    auto proved = [](const Tried &t) {
      return t.result.verdict() == TargetVerdict::Proved;
    };
    TargetResult result;
    if (!k && !std::all_of(tried.begin(), tried.end(), proved)) {
      auto shown = std::find_if(tried.begin(), tried.end(), [](const Tried &t) {
        return t.result.verdict() == TargetVerdict::Refuted;
      });
      result =
          (shown == tried.end() ? *std::find_if_not(tried.begin(), tried.end(), proved)
                                : *shown)
              .result;
      result.target = target;
      if (shown != tried.end())
        for (const Tried &t : tried)
          if (&t != &*shown)
            result.findings.front().details.push_back(outcome_at(t));
      return result;
    }
    result.target = target;
    result.world = 1;
    for (const Tried &t : tried) {
      result.seconds += t.result.seconds;
      if (proved(t))
        for (checkers::ObligationResult o : t.result.obligations) {
          if (tried.size() > 1)
            o.name += " at " + sizes_str(host_.int_params, t.at.sizes);
          result.obligations.push_back(std::move(o));
        }
    }
    if (k)
      stated_precondition(result, tried, *k);
    return result;
  }

  // The case proved at the sizes of width k only: the target says so, and a
  // fault below it is an SP019 warning.
  void stated_precondition(TargetResult &result, const std::vector<Tried> &tried,
                           std::int64_t k) const {
    std::set<std::string> params; // those the aligned sizes rounded
    std::vector<std::string> aligned;
    const Sizes &first = tried.front().at.sizes;
    for (const Tried &t : tried)
      if (t.width >= k) {
        std::vector<std::string> names = changed(first, t.at.sizes);
        params.insert(names.begin(), names.end());
        aligned.push_back(sizes_str(host_.int_params, restricted(t.at.sizes, names)));
      }
    std::string where =
        fmt::format("{} {} of {}", fmt::join(params, " and "),
                    params.size() == 1 ? "is a multiple" : "are multiples", k);
    result.target.function.insert(result.target.function.size() - 1,
                                  fmt::format("; proved where {}", where));
    auto fault = std::find_if(tried.begin(), tried.end(), [](const Tried &t) {
      return t.result.verdict() == TargetVerdict::Refuted;
    });
    if (fault == tried.end())
      return; // below k the profile gives no reference: nothing to warn of
    const Finding &was = fault->result.findings.front();
    Finding f = Finding::of(
        RuleCode::UncheckedPrecondition, was.loc,
        fmt::format("'{}' accepts {} but there its kernel faults ({}): {}; every size "
                    "tried where {} is proved ({}): the C++ entry does not check what "
                    "its callers must ensure",
                    host_.name, sizes_str(host_.int_params, fault->at.sizes),
                    checkers::rule(was.rule).id, was.message, where,
                    fmt::join(aligned, "; ")));
    f.example = was.example;
    f.notes = was.notes;
    f.notes.push_back({host_.loc, fmt::format("'{}' is defined here", host_.name)});
    result.findings.push_back(std::move(f));
    apply_rule_selection(result, options_.rules);
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

#include "frontend/cuda/profiles.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace shardproof::frontend::cuda {

namespace {

constexpr int kWarp = 32;

// The buffer dtype of a template type argument; nullopt: not profiled.
std::optional<ir::DType> real_type(const std::string &spelling) {
  if (spelling == "float")
    return ir::DType::Float32;
  if (spelling == "__half" || spelling == "half" || spelling == "c10::Half" ||
      spelling == "at::Half" || spelling == "Half")
    return ir::DType::Float16;
  if (spelling == "__nv_bfloat16" || spelling == "c10::BFloat16" ||
      spelling == "at::BFloat16" || spelling == "BFloat16")
    return ir::DType::BFloat16;
  return std::nullopt;
}

KernelArg buffer(const std::string &name, ir::DType type, ir::Shape shape) {
  KernelArg arg;
  arg.name = name;
  arg.buffer_type = type;
  arg.shape = std::move(shape);
  return arg;
}

KernelArg scalar(const std::string &name, std::string value) {
  KernelArg arg;
  arg.name = name;
  arg.scalar = std::move(value);
  return arg;
}

// The launch every profile fills: the kernel, its template arguments, the
// host's grid and block, each integer argument as the host passed it.
KernelLaunch launch_of(const KernelSignature &kernel, const HostChoice &choice) {
  KernelLaunch launch;
  launch.loc = kernel.loc;
  launch.reference_loc = kernel.loc;
  launch.kernel = kernel.name;
  launch.template_args = fmt::format("{}", fmt::join(choice.template_args, ", "));
  launch.grid = choice.grid;
  launch.block = choice.block;
  launch.shared_bytes = choice.shared_bytes;
  for (const auto &[name, value] : choice.ints)
    launch.args.push_back(scalar(name, std::to_string(value)));
  return launch;
}

// --- apex / Megatron fused softmax ------------------------------------------
//
// One warp per row (rows of up to 2^log2_elements elements, WARP_BATCH rows
// a warp), launched with 128 threads a block by the host dispatchers.
class ApexSoftmax : public KernelProfile {
public:
  enum class Variant { Scaled, Masked, UpperTriangular };
  ApexSoftmax(Variant variant, std::string kernel, std::vector<std::string> roles)
      : variant_(variant), kernel_(std::move(kernel)), roles_(std::move(roles)) {}

  std::string name() const override {
    switch (variant_) {
    case Variant::Scaled:
      return "apex/Megatron scaled softmax (forward)";
    case Variant::Masked:
      return "apex/Megatron scaled masked softmax (forward; a fully masked row gives 0)";
    default:
      return "apex/Megatron scaled upper-triangular (causal) masked softmax (forward)";
    }
  }

  bool matches(const KernelSignature &kernel) const override {
    return kernel.name == kernel_ && kernel.params.size() == roles_.size() &&
           kernel.template_params.size() == 4;
  }

  // Rows of 3 (a warp of 4 lanes), 32 (a full warp) and 128 elements (four
  // per lane, vector loads), one block each as the dispatcher computes it.
  std::vector<HostChoice> own_launches(const KernelSignature &kernel) const override {
    std::vector<HostChoice> out;
    for (int elements : {3, 32, 128}) {
      int log2 = 0;
      while ((1 << log2) < elements)
        ++log2;
      int next = 1 << log2, warp = std::min(next, kWarp);
      int per_warp = next <= 128 ? 2 : 1, warps = 128 / warp;
      int rows_per_block = warps * per_warp;
      HostChoice choice;
      choice.template_args = {"float", "float", "float", std::to_string(log2)};
      choice.block = {warp, warps, 1};
      const auto &p = kernel.params;
      if (variant_ == Variant::UpperTriangular) {
        // blocks (seq, attn_batches / rows_per_block): row = batch * seq + query.
        // A block's batches, or one warp's when that is over 1024 elements.
        if (elements > 32)
          continue;
        int batches =
            rows_per_block * elements * elements <= 1024 ? rows_per_block : per_warp;
        choice.grid = {elements, 1, 1};
        choice.ints = {
            {p[3], std::int64_t{batches} * elements}, {p[4], elements}, {p[5], elements}};
      } else {
        // A block's rows, or one warp's when that is over 256 elements (the
        // other warps of the block find no row: the kernel's own guard).
        int rows = rows_per_block * elements <= 256 ? rows_per_block : per_warp;
        choice.ints = {{p[role("micro_batch_size")], rows},
                       {p[role("element_count")], elements}};
        if (variant_ == Variant::Masked)
          choice.ints[p[role("pad_batches")]] = 1;
      }
      out.push_back(std::move(choice));
    }
    return out;
  }

  std::optional<KernelLaunch> complete(const KernelSignature &kernel,
                                       const HostChoice &choice,
                                       std::string &why) const override {
    auto in = real_type(choice.template_args.at(0));
    auto out = real_type(choice.template_args.at(1));
    if (!in || !out) {
      why = fmt::format("element types <{}, {}> are not profiled",
                        choice.template_args.at(0), choice.template_args.at(1));
      return std::nullopt;
    }
    const auto &p = kernel.params;
    auto value = [&](const std::string &r) { return choice.ints.at(p[role(r)]); };
    KernelLaunch launch = launch_of(kernel, choice);
    std::int64_t rows = value("micro_batch_size"), cols = value("element_count");
    std::string dst = p[role("dst")], src = p[role("src")], scale = p[role("scale")];
    launch.args.push_back(scalar(scale, "0.125"));
    if (variant_ == Variant::UpperTriangular) {
      // [attn_batches, seq, seq]; a query attends to the keys up to itself.
      if (value("stride") != cols || rows % cols != 0) {
        why = "a stride other than the row length is not profiled";
        return std::nullopt;
      }
      ir::Shape shape{rows / cols, cols, cols};
      launch.args.push_back(buffer(src, *in, shape));
      launch.args.push_back(buffer(dst, *out, shape));
      launch.output = dst;
      launch.reference = fmt::format(
          "torch.softmax(({} * {}).masked_fill(torch.ones({}, {}).triu(1).bool(), "
          "float('-inf')), dim=-1)",
          src, scale, cols, cols);
      return launch;
    }
    // [query rows, keys] per (head, batch): grid (queries / rows a block,
    // heads, batches).
    std::int64_t planes = std::int64_t{choice.grid[1]} * choice.grid[2];
    if (rows % planes != 0) {
      why = "rows not a multiple of the grid's heads and batches";
      return std::nullopt;
    }
    ir::Shape shape{choice.grid[2], choice.grid[1], rows / planes, cols};
    launch.args.push_back(buffer(src, *in, shape));
    launch.args.push_back(buffer(dst, *out, shape));
    launch.output = dst;
    if (variant_ == Variant::Scaled) {
      launch.reference = fmt::format("torch.softmax({} * {}, dim=-1)", src, scale);
      return launch;
    }
    if (value("pad_batches") != 1) {
      why = "a mask per batch (pad_batches > 1) is not profiled";
      return std::nullopt;
    }
    // The mask (1: masked), one per query row, broadcast over heads and
    // batches: every third key masked, and row 1 masked whole.
    std::int64_t queries = rows / planes;
    KernelArg mask = buffer(p[role("mask")], ir::DType::Int32, {queries, cols});
    for (std::int64_t r = 0; r < queries; ++r)
      for (std::int64_t c = 0; c < cols; ++c)
        mask.concrete.push_back(r == 1 || (c + 2 * r) % 3 == 0 ? 1 : 0);
    launch.args.push_back(std::move(mask));
    // Masked scores are -10000; a row whose maximum is -10000 (every key
    // masked) gives 0, as the kernel documents.
    std::string scores = fmt::format("({} * {}).masked_fill({} == 1, -10000.0)", src,
                                     scale, p[role("mask")]);
    std::string row_max = fmt::format("{}.amax(-1, keepdim=True)", scores);
    launch.reference =
        fmt::format("torch.softmax({1}, dim=-1) * torch.where({0}.clamp(min=-10000.0) <= "
                    "{0}.clamp(max=-10000.0), 0.0, 1.0)",
                    row_max, scores);
    return launch;
  }

private:
  std::size_t role(const std::string &r) const {
    for (std::size_t i = 0; i < roles_.size(); ++i)
      if (roles_[i] == r)
        return i;
    throw std::logic_error("profile role " + r);
  }

  Variant variant_;
  std::string kernel_;
  std::vector<std::string> roles_; // the parameters' roles, by position
};

// Whether `strides` lay out a tensor of `shape` row-major without gaps, as
// PyTorch's is_contiguous decides: the stride of a dimension of size 1 is
// never read, so it may be anything.
bool is_contiguous(const ir::Shape &shape, const std::vector<std::int64_t> &strides) {
  std::int64_t expected = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected)
      return false;
    expected *= shape[i];
  }
  return true;
}

// --- apex fused rotary embedding (forward) ---------------------------------
//
// src and dst [s, b, h, d] with strides, freqs [s, 1, 1, d2] (radians): the
// first d2 channels are rotated in halves, the rest pass through. The host
// launches blocks (s, b) of threads (32, h < 16 ? 4 : 8).
class ApexRope : public KernelProfile {
public:
  std::string name() const override { return "apex fused rotary embedding (forward)"; }
  bool matches(const KernelSignature &kernel) const override {
    return kernel.name == "fused_rope_forward" && kernel.params.size() == 14 &&
           kernel.template_params.size() == 1;
  }
  std::vector<HostChoice> own_launches(const KernelSignature &kernel) const override {
    const int s = 2, b = 2, h = 3, d = 10, d2 = 8;
    HostChoice choice;
    choice.template_args = {"float"};
    choice.grid = {s, b, 1};
    choice.block = {kWarp, h < 16 ? 4 : 8, 1};
    const auto &p = kernel.params;
    std::vector<std::int64_t> values{h, d,         d2,    b * h * d, h * d, d,
                                     1, b * h * d, h * d, d,         1};
    for (std::size_t i = 0; i < values.size(); ++i)
      choice.ints[p[i]] = values[i];
    return {choice};
  }
  std::optional<KernelLaunch> complete(const KernelSignature &kernel,
                                       const HostChoice &choice,
                                       std::string &why) const override {
    auto type = real_type(choice.template_args.at(0));
    const auto &p = kernel.params;
    auto v = [&](std::size_t i) { return choice.ints.at(p[i]); };
    std::int64_t h = v(0), d = v(1), d2 = v(2), s = choice.grid[0], b = choice.grid[1];
    ir::Shape shape{s, b, h, d};
    bool contiguous = is_contiguous(shape, {v(3), v(4), v(5), v(6)}) &&
                      is_contiguous(shape, {v(7), v(8), v(9), v(10)});
    if (!type || !contiguous || d2 % 2 != 0 || d2 > d) {
      why = "only contiguous [s, b, h, d] tensors (the strides of size-1 dimensions "
            "free, as PyTorch's is_contiguous) with an even d2 <= d are profiled";
      return std::nullopt;
    }
    KernelLaunch launch = launch_of(kernel, choice);
    std::string src = p[11], freqs = p[12], dst = p[13];
    launch.args.push_back(buffer(src, *type, {s, b, h, d}));
    launch.args.push_back(buffer(freqs, ir::DType::Float32, {s, 1, 1, d2}));
    launch.args.push_back(buffer(dst, *type, {s, b, h, d}));
    launch.output = dst;
    std::string x = fmt::format("{}[..., :{}]", src, d2);
    std::string rotated = fmt::format(
        "torch.cat([-{0}[..., {1}:{2}], {0}[..., :{1}]], dim=-1)", src, d2 / 2, d2);
    launch.reference = fmt::format("torch.cat([{0} * torch.cos({1}) + {2} * "
                                   "torch.sin({1}), {3}[..., {4}:]], dim=-1)",
                                   x, freqs, rotated, src, d2);
    return launch;
  }
};

// --- apex layer norm and RMS norm (forward) --------------------------------
//
// cuApplyLayerNorm(output_vals, mean, invvar, vals, n1, n2, epsilon, gamma,
// beta) and cuApplyRMSNorm(output_vals, invvar, vals, n1, n2, epsilon,
// gamma): rows of n2, one per block row; the host launches threads (32, 4)
// and blocks (1, n1) with shared memory for the warps' partial results.
class ApexNorm : public KernelProfile {
public:
  explicit ApexNorm(bool rms) : rms_(rms) {}
  std::string name() const override {
    return rms_ ? "apex RMS norm (forward)" : "apex layer norm (forward)";
  }
  bool matches(const KernelSignature &kernel) const override {
    return kernel.name == (rms_ ? "cuApplyRMSNorm" : "cuApplyLayerNorm") &&
           kernel.params.size() == (rms_ ? 7u : 9u) && kernel.template_params.size() == 3;
  }
  std::vector<HostChoice> own_launches(const KernelSignature &kernel) const override {
    HostChoice choice;
    choice.template_args = {"float", "float", "float"};
    choice.block = {32, 4, 1};
    const int rows = 2, cols = 12;
    choice.grid = {1, rows, 1};
    choice.shared_bytes = (4 + 4 / 2) * 4;
    choice.ints = {{kernel.params[n1()], rows}, {kernel.params[n1() + 1], cols}};
    return {choice};
  }
  std::optional<KernelLaunch> complete(const KernelSignature &kernel,
                                       const HostChoice &choice,
                                       std::string &why) const override {
    auto t = real_type(choice.template_args.at(0)),
         u = real_type(choice.template_args.at(1)),
         v = real_type(choice.template_args.at(2));
    if (!t || !u || !v) {
      why = "element types other than float, half and bfloat16 are not profiled";
      return std::nullopt;
    }
    const auto &p = kernel.params;
    std::int64_t rows = choice.ints.at(p[n1()]), cols = choice.ints.at(p[n1() + 1]);
    KernelLaunch launch = launch_of(kernel, choice);
    std::string out = p[0], vals = p[n1() - 1], eps = p[n1() + 2], gamma = p[n1() + 3];
    launch.args.push_back(buffer(out, *v, {rows, cols}));
    if (!rms_)
      launch.args.push_back(buffer(p[1], *u, {rows}));      // mean
    launch.args.push_back(buffer(p[n1() - 2], *u, {rows})); // invvar
    launch.args.push_back(buffer(vals, *t, {rows, cols}));
    launch.args.push_back(scalar(eps, "1e-5"));
    launch.args.push_back(buffer(gamma, *v, {cols}));
    if (!rms_)
      launch.args.push_back(buffer(p[8], *v, {cols})); // beta
    launch.output = out;
    launch.reference =
        rms_ ? fmt::format(
                   "{0} * torch.rsqrt({0}.pow(2).mean(-1, keepdim=True) + {1}) * {2}",
                   vals, eps, gamma)
             : fmt::format("torch.nn.functional.layer_norm({}, ({},), {}, {}, {})", vals,
                           cols, gamma, p[8], eps);
    return launch;
  }

private:
  std::size_t n1() const { return rms_ ? 3 : 4; } // the position of n1
  bool rms_;
};

// --- DeepSpeed inference bias-GeLU ------------------------------------------
//
// fused_bias_gelu(input, bias, total_count, intermediate_size): in place,
// input = gelu_tanh(input + bias), bias broadcast over rows; four elements a
// thread, 1024 threads a block upstream.
class DeepSpeedBiasGelu : public KernelProfile {
public:
  std::string name() const override {
    return "DeepSpeed inference bias-GeLU (tanh approximation, in place)";
  }
  bool matches(const KernelSignature &kernel) const override {
    return kernel.name == "fused_bias_gelu" && kernel.params.size() == 4;
  }
  std::vector<HostChoice> own_launches(const KernelSignature &kernel) const override {
    // 3 rows of 16: 12 threads of 4 elements, a block of 8 (a partial
    // second block).
    const int rows = 3, cols = 16;
    HostChoice choice;
    choice.template_args = kernel.template_params.empty()
                               ? std::vector<std::string>{}
                               : std::vector<std::string>{"float"};
    choice.grid = {2, 1, 1};
    choice.block = {8, 1, 1};
    choice.ints = {{kernel.params[2], rows * cols}, {kernel.params[3], cols}};
    return {choice};
  }
  std::optional<KernelLaunch> complete(const KernelSignature &kernel,
                                       const HostChoice &choice,
                                       std::string &why) const override {
    auto type = choice.template_args.empty() ? std::optional{ir::DType::Float32}
                                             : real_type(choice.template_args[0]);
    std::int64_t total = choice.ints.at(kernel.params[2]),
                 cols = choice.ints.at(kernel.params[3]);
    if (!type || cols <= 0 || total % cols != 0) {
      why = "total_count must be a multiple of intermediate_size";
      return std::nullopt;
    }
    KernelLaunch launch = launch_of(kernel, choice);
    std::string input = kernel.params[0], bias = kernel.params[1];
    launch.args.push_back(buffer(input, *type, {total / cols, cols}));
    launch.args.push_back(buffer(bias, *type, {cols}));
    launch.output = input;
    // DeepSpeed's gelu(), with its constants as it spells them.
    std::string x = fmt::format("({} + {})", input, bias);
    launch.reference = fmt::format("{0} * 0.5 * (1.0 + torch.tanh("
                                   "0.79788456080286535587989211986876 * ({0} + 0.044715 "
                                   "* {0} * {0} * {0})))",
                                   x);
    return launch;
  }
};

// --- DeepSpeed inference RMS norm (forward) --------------------------------
//
// rms_norm<T, UNROLL, threadsPerGroup, maxThreads>(output, vals, gamma,
// epsilon, elems_per_row): a group of threadsPerGroup threads per row (block
// row y), 16 bytes a load; launch_rms_norm picks the template arguments.
class DeepSpeedRmsNorm : public KernelProfile {
public:
  std::string name() const override { return "DeepSpeed inference RMS norm (forward)"; }
  bool matches(const KernelSignature &kernel) const override {
    return kernel.name == "rms_norm" && kernel.params.size() == 5 &&
           kernel.template_params.size() == 4;
  }
  // 3 rows of 40 floats, as launch_rms_norm schedules them: groups of 16
  // threads (next_pow2(40 / 4)), 3 groups a block, one block.
  std::vector<HostChoice> own_launches(const KernelSignature &kernel) const override {
    HostChoice choice;
    choice.template_args = {"float", "1", "16", "256"};
    choice.block = {16, 3, 1};
    choice.ints = {{kernel.params[4], 40}};
    return {choice};
  }
  std::optional<KernelLaunch> complete(const KernelSignature &kernel,
                                       const HostChoice &choice,
                                       std::string &why) const override {
    auto type = real_type(choice.template_args.at(0));
    if (!type) {
      why = "element types other than float, half and bfloat16 are not profiled";
      return std::nullopt;
    }
    const auto &p = kernel.params;
    std::int64_t cols = choice.ints.at(p[4]);
    // The host's rows, or the rows the launch covers (a group each).
    auto given = choice.host_ints.find("rows");
    std::int64_t rows = given != choice.host_ints.end()
                            ? given->second
                            : std::int64_t{choice.grid[0]} * choice.block[1];
    KernelLaunch launch = launch_of(kernel, choice);
    launch.args.push_back(buffer(p[0], *type, {rows, cols}));
    launch.args.push_back(buffer(p[1], *type, {rows, cols}));
    launch.args.push_back(buffer(p[2], *type, {cols}));
    launch.args.push_back(scalar(p[3], "1e-5"));
    launch.output = p[0];
    launch.reference =
        fmt::format("{0} * torch.rsqrt({0}.pow(2).mean(-1, keepdim=True) + {1}) * {2}",
                    p[1], p[3], p[2]);
    return launch;
  }
};

} // namespace

const std::vector<const KernelProfile *> &kernel_profiles() {
  using V = ApexSoftmax::Variant;
  static const ApexSoftmax scaled(
      V::Scaled, "scaled_softmax_warp_forward",
      {"dst", "src", "scale", "micro_batch_size", "element_count"});
  static const ApexSoftmax masked(V::Masked, "scaled_masked_softmax_warp_forward",
                                  {"dst", "src", "mask", "scale", "micro_batch_size",
                                   "element_count", "pad_batches"});
  static const ApexSoftmax causal(
      V::UpperTriangular, "scaled_upper_triang_masked_softmax_warp_forward",
      {"dst", "src", "scale", "micro_batch_size", "stride", "element_count"});
  static const ApexRope rope;
  static const ApexNorm layer_norm(false), rms_norm(true);
  static const DeepSpeedBiasGelu bias_gelu;
  static const DeepSpeedRmsNorm ds_rms_norm;
  static const std::vector<const KernelProfile *> all{
      &scaled, &masked, &causal, &rope, &layer_norm, &rms_norm, &bias_gelu, &ds_rms_norm};
  return all;
}

const KernelProfile *profile_for(const KernelSignature &kernel) {
  for (const KernelProfile *profile : kernel_profiles())
    if (profile->matches(kernel))
      return profile;
  return nullptr;
}

} // namespace shardproof::frontend::cuda

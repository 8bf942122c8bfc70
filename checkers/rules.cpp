#include "checkers/rules.h"

#include <algorithm>
#include <iterator>

namespace shardproof::checkers {

namespace {
constexpr Rule kRules[] = {
    {RuleCode::ForwardMismatch, "SP001", "forward-mismatch", Severity::Error,
     "An output of the distributed module differs from the single-device "
     "reference.",
     "Every output of the entry must equal the output of the same module run at "
     "world size 1, either whole on every rank (replicated) or as that rank's "
     "shard along one dimension. shardproof found input values for which no "
     "rank layout reproduces the reference, and reports the first operation on "
     "the path to the output whose value no longer relates to the reference, "
     "looked for on the first rank whose value is wrong. Where an elementwise "
     "operation combines two operands that each hold the reference's rows but "
     "in different orders, it says which rows it pairs: tokens that came back "
     "from an all-to-all in another order than their routing weights. "
     "Typical causes: a shard index computed from the wrong rank, a bias added "
     "on every rank before a reduction, a collective over the wrong group, a "
     "token permutation that is not undone the way it was made."},
    {RuleCode::MissingReduction, "SP002", "missing-reduction", Severity::Error,
     "A partial sum over ranks reaches an output without being reduced.",
     "A value is a partial sum when adding it up over the ranks of a group gives "
     "the reference value: the typical result of a row-parallel matmul. Such a "
     "value must pass through an all-reduce (or a reduce-scatter) before it is "
     "used as a whole. The report names the line that produced the partial "
     "value. Typical causes: an all-reduce removed or guarded by a condition "
     "that is false, a custom autograd function whose forward forgot its "
     "collective."},
    {RuleCode::CollectiveMismatch, "SP003", "collective-mismatch", Severity::Error,
     "Ranks of one group issue different collective sequences: a hang.",
     "Collectives are matched per process group by their order of issue. When "
     "one rank issues a collective its peers do not, or the peers disagree on "
     "its kind, reduce operation, shape, dtype or root, the job hangs or "
     "silently mixes unrelated tensors on hardware. Point-to-point messages "
     "(send/recv between pipeline stages) are matched likewise, in order per "
     "pair of ranks: a send nobody receives, a receive nobody sends, or a "
     "receive buffer of another shape. All-reduce, broadcast, reduce and "
     "messages combine buffers element by element, so their shapes agree when "
     "they hold the same elements in the same order (a 0-dim tensor and a "
     "one-element one do: NCCL and gloo count elements). The report names both "
     "call sites. Matched messages still hang when blocking calls wait on each "
     "other: `send` returns only once the receiver has posted the matching "
     "receive and `recv` once the sender has posted the message (PyTorch "
     "documents both as synchronous; NCCL's send does not complete before the "
     "peer's receive), while `isend`, `irecv` and `batch_isend_irecv` post and "
     "return, and the `wait()` on their Work blocks as `send` and `recv` do. "
     "Every rank's calls are run in program order; when ranks remain "
     "that can never go on (two pipeline stages that each send first with "
     "`send`, a ring where every rank sends first), each is reported at its "
     "blocked call, naming the peer it waits for, with notes where that peer is "
     "blocked and at the call it never reaches. Collectives are taken not to "
     "block there: a hang through one may be missed, but none is reported that "
     "synchronous messages do not cause."},
    {RuleCode::UnmatchedParameter, "SP004", "unmatched-parameter", Severity::Warning,
     "A rank's parameter has no counterpart in the single-device reference.",
     "Parameters are matched to the reference by qualified name; one whose shape "
     "differs is the rank's shard of the reference parameter as its "
     "`partition_dim` (and `partition_stride`) say, else as the framework's "
     "slice metadata on it says (nanotron's), else as the part of a whole tensor "
     "it was made from says (picotron's split of a master weight), else the one "
     "shard its shape fits that makes the step compute the reference "
     "(SP011). One none of these binds (several shards fit and agree, or its "
     "initialisation is not the rank's shard) stays free variables, so any "
     "obligation that depends on it cannot be proved."},
    {RuleCode::WrongScaling, "SP005", "wrong-scaling", Severity::Error,
     "A value equals the reference times a constant on every rank.",
     "The ranks agree with each other but hold the reference multiplied by a "
     "factor such as 1/world or world: a reduction that averages where it "
     "should sum, sums where it should average, divides by the wrong group's "
     "size, or runs twice. The report names the operation that introduced the "
     "factor and the factor itself."},
    {RuleCode::GradientMismatch, "SP006", "gradient-mismatch", Severity::Error,
     "A gradient after backward and finalize_grads differs from the reference.",
     "After the entry's backward pass and its finalize_grads, every parameter's "
     "gradient must equal the single-device gradient, as the shard the rank "
     "owns (partition_dim) or whole for a replicated parameter, and every input "
     "handed to the model whole must get its whole gradient on every rank. The "
     "report names the parameter or input and the operation whose gradient went "
     "wrong first. After the entry's optimizer step (`step`), every parameter "
     "must likewise be its share of the single-device step's updated "
     "parameter; such a difference is reported where the step last wrote it."},
    {RuleCode::ReplicaDivergence, "SP007", "replica-divergence", Severity::Error,
     "A replicated parameter gets different gradients on different ranks.",
     "A parameter every rank holds whole must receive the same gradient on every "
     "rank, or the replicas drift apart step by step while the loss still looks "
     "plausible. The classic cause: weights replicated across tensor-parallel "
     "ranks under sequence parallelism (layer norms, routers, biases) whose "
     "gradient is computed from each rank's part of the sequence and never "
     "all-reduced. After the entry's optimizer step (`step`), the parameters "
     "themselves must agree: a distributed optimizer that updates a shard per "
     "rank and forgets to all-gather the updated shards leaves them apart."},
    {RuleCode::CommDtype, "SP008", "comm-dtype", Severity::Error,
     "A collective carries values in a narrower or different float format.",
     "A value cast to another floating-point format just for a collective "
     "loses what the format cannot hold: bf16 gradients reduced in fp16 "
     "overflow to inf past 65504 (with loss scaling, routinely), fp32 values "
     "reduced in bf16 lose mantissa bits. With --reduce-dtype float32, every "
     "16-bit reduction is reported too. The proofs work over exact reals, so "
     "this rule is the one that sees the format."},
    {RuleCode::RngDivergence, "SP009", "rng-divergence", Severity::Error,
     "A rank draws random values (a dropout mask) from another seed than the "
     "reference.",
     "A random draw (dropout, bernoulli, uniform_, normal_, rand, randn, ...) is "
     "keyed by its generator's state: the seed and the draws made since. Where "
     "a rank and the single-device run draw at the same line from generators "
     "seeded differently, they drop different elements, and a value every rank "
     "holds whole (activations after a row-parallel all-reduce, a replicated "
     "residual stream) diverges across ranks and from the reference. The "
     "report names the draw and both seeds, with values of the draws for which "
     "the results differ. Typical cause: dropout of replicated activations "
     "under a rank-dependent RNG tracker state (Megatron's "
     "`get_cuda_rng_tracker().fork()`), or a seed offset by the rank where the "
     "tensor-parallel ranks must share one. Draws that only the offset "
     "separates (other draws came first) are \"could not prove\": PyTorch's "
     "offsets depend on the earlier draws' sizes and the device."},
    {RuleCode::ExpOverflow, "SP010", "exp-overflow", Severity::Warning,
     "An exp of a value that nothing bounds above reaches an output.",
     "The proofs compare values over the reals, where exp(x) / sum(exp(x)) "
     "equals exp(x - max(x)) / sum(exp(x - max(x))). In floating point only the "
     "shifted form survives large values: exp overflows to inf past 88.7 in "
     "float32 and past 11.1 in float16, and a softmax of inf is NaN. An exp "
     "whose argument is not provably at most a constant (x - max(x) is at most "
     "0; the maximum may be all-reduced) is reported where it is computed, "
     "saying whether the single-device reference shifts where the distributed "
     "code does not. Typical cause: a hand-written vocabulary-parallel softmax "
     "or cross entropy that skips the all-reduced maximum."},
    {RuleCode::InferredLayout, "SP011", "inferred-layout", Severity::Warning,
     "A sharded parameter matches the reference only under another layout than "
     "the one it declares.",
     "A rank's shard of a parameter is tied to the reference parameter by its "
     "`partition_dim` and `partition_stride` (Megatron's attributes): stride 1 "
     "means each rank holds one contiguous block, stride s that it holds s "
     "pieces, piece c of rank r being piece c * world + r of the whole. When the "
     "declared layout makes the distributed module differ from the reference "
     "but another stride of the same module's parameters makes every obligation "
     "hold, the training itself is right and the declaration is what is wrong: "
     "the obligations are proved under the layout that reconciles, and this "
     "warning names it at the parameter. Anything that maps between the "
     "single-device and the sharded parameters (checkpoint converters, "
     "initialisation from a single-device model) must use that layout. Typical "
     "cause: a SwiGLU fc1 whose gate and up halves are sharded separately, "
     "without `partition_stride=2` on the weight. The same warning names a "
     "parameter that declares nothing at all (no `partition_dim`, no slice "
     "metadata, not made from part of a whole: picotron's zeroed "
     "column-parallel bias) when exactly one of the shards its shape fits makes "
     "the step compute the reference: it is bound to that one "
     "(docs/other-frameworks.md)."},
    {RuleCode::KernelMismatch, "SP012", "kernel-mismatch", Severity::Error,
     "A CUDA kernel's output differs from the PyTorch expression it replaces.",
     "A kernel annotated with `// shardproof: launch`, `arg` and `reference` "
     "lines is run symbolically over the annotated (reduced) grid and block: "
     "every output element becomes a term over the input buffers' elements, "
     "and is proved equal, over the reals, to the reference expression "
     "evaluated on shardproof's stand-in torch. The report names the kernel "
     "line that wrote the differing element, the thread that wrote it, and "
     "input values that show the difference. Typical causes: a shuffle of the "
     "wrong width, a wrong index into a broadcast operand, a mask off by one, "
     "an element no thread writes."},
    {RuleCode::MemoryRace, "SP013", "shared-memory-race", Severity::Error,
     "Two threads access one memory element with no barrier between, one of "
     "them writing.",
     "The threads of a block run phase by phase, a phase ending at "
     "`__syncthreads()`. A read and a write, or two writes, of one element of "
     "shared memory by different threads in the same phase (or of global "
     "memory by threads of different blocks) make the result depend on the "
     "hardware's scheduling. The report names both accesses, their threads and "
     "the element. Typical cause: a missing `__syncthreads()` between the "
     "steps of a shared-memory reduction."},
    {RuleCode::OutOfBounds, "SP014", "out-of-bounds", Severity::Error,
     "A kernel reads or writes outside a buffer on the reduced launch.",
     "Every access of a global buffer, a shared array or a local array is "
     "checked against its size on the annotated launch. The report names the "
     "access, the thread and the index. Typical causes: a missing bounds guard "
     "for the last block, an index computed with the wrong stride, dynamic "
     "shared memory smaller than the kernel uses."},
    {RuleCode::KernelNotLaunched, "SP015", "kernel-not-launched", Severity::Error,
     "A host dispatcher accepts a size for which it launches no kernel: the "
     "output is left as it was.",
     "A host function of the file that launches a profiled kernel (a "
     "dispatcher switching over sizes, such as apex's "
     "`switch (log2_elements)`) is run at concrete sizes: each integer "
     "parameter over small values and the powers of two (and one past them) up "
     "to 2^16, the others chosen so that its assertions hold. A size it "
     "accepts (no failed assertion, no throw) but for which no case launches a "
     "kernel leaves the output buffer as it was: uninitialised memory, or the "
     "previous step's values. The report names the size, the other arguments "
     "and the switch. Typical causes: a case missing from the switch, or an "
     "assertion that admits sizes beyond the largest case. Each case that is "
     "launched is checked against the kernel's profile at its smallest size."},
    {RuleCode::UninitialisedRead, "SP016", "uninitialised-shared-read", Severity::Error,
     "A kernel reads shared or local memory that no thread wrote before.",
     "Shared arrays and local arrays start undefined in every block. A read of "
     "an element no thread of the block wrote before it (in the reduced "
     "launch's order, barriers included) gives whatever the memory held: the "
     "report names the read, the thread and the element. Typical causes: a "
     "reduction reading past the partial sums its warps wrote, a tile loaded "
     "for fewer rows than it is read for, a missing initialisation of an "
     "accumulator array."},
    {RuleCode::DivergentBarrier, "SP017", "divergent-barrier", Severity::Error,
     "`__syncthreads()` is reached by some threads of a block and not by "
     "others that have not exited.",
     "CUDA requires a block's barrier to be reached by all its threads that "
     "have not exited; otherwise the behaviour is undefined (a hang, or "
     "threads passing the barrier early). A barrier reached under a branch or "
     "a loop that threads of the block decide differently is reported with a "
     "thread that reaches it and one that does not. Typical causes: "
     "`__syncthreads()` inside `if (threadIdx.x < n)`, inside a loop whose "
     "trip count depends on the thread, after an early `continue`."},
    {RuleCode::CrossRankRace, "SP018", "cross-rank-race", Severity::Error,
     "Two ranks of a multi-rank launch access one element of global memory, one "
     "of them writing, and no flag barrier orders them.",
     "A custom all-reduce runs one launch per rank (`// shardproof: ranks N`); "
     "the launches share global memory and read each other's buffers through "
     "arrays of peer pointers. Only a flag orders two ranks: a volatile store "
     "made after `__threadfence_system()` releases what its block did before "
     "its last `__syncthreads()`, and a volatile load that sees it acquires "
     "that for what the reading block does after its next `__syncthreads()`. "
     "shardproof runs the ranks' blocks one at a time, each until it waits in "
     "a spin loop for a flag not set yet, and reports a read and a write (or "
     "two writes) of one element by different ranks that no chain of such "
     "flags orders, with both accesses, their ranks, threads and the element. "
     "Typical causes: no barrier between the reduce-scatter and the "
     "all-gather stages, a flag reused for a second barrier without being "
     "reset (the second wait sees the first barrier's flag), a flag set "
     "without a fence before it."},
    {RuleCode::UncheckedPrecondition, "SP019", "unchecked-size-precondition",
     Severity::Warning,
     "A host dispatcher accepts a size at which its kernel faults, while every "
     "size tried that is a multiple of some k is proved.",
     "Each case a dispatcher launches is checked at its smallest size and at the "
     "smallest sizes whose buffers' innermost dimensions are multiples of 2, 4 "
     "and 8 (the size parameters that case depends on rounded up, the others as "
     "they were). When the kernel faults (an out-of-bounds or misaligned "
     "access, SP014, or a value that differs from the reference, SP012) only at "
     "sizes that are not multiples of k, and every size tried that is a "
     "multiple of k is proved, the fault is a precondition its callers must "
     "ensure and the C++ entry does not check: vectorised loads of float2, "
     "float4 or 16 bytes need rows that are multiples of the vector width. The "
     "frameworks' Python side usually keeps to it (Megatron's "
     "`FusedScaleMaskSoftmax.is_kernel_available` requires key_seq_len % 4 "
     "== 0); another caller of the C++ entry does not. The case counts as "
     "proved at the aligned sizes, with the precondition stated. A fault also "
     "at an aligned size stays the error it is. Fix: check the size in the "
     "entry (`TORCH_CHECK(n % 4 == 0, ...)`) or give the kernel a scalar "
     "tail."},
    {RuleCode::UndefinedShuffleValue, "SP020", "undefined-shuffle-value", Severity::Error,
     "A kernel's output depends on what a warp shuffle read from a lane that "
     "does not take part in it.",
     "A shuffle (`__shfl_sync`, `_xor`, `_up`, `_down`, or a cooperative "
     "group's) reads another lane's value; where that lane is not in the "
     "shuffle's mask, is not in the launch (past the end of a partial warp) "
     "or is inactive at that point, CUDA leaves the value read undefined. "
     "shardproof gives each such read a value of its own: a kernel whose "
     "output is the reference's whatever those values are is proved; one "
     "whose output depends on them is this finding, at the shuffle, with the "
     "output element, the thread and the lane it read. Typical causes: a warp "
     "reduction with a fixed 32-lane butterfly over a warp that the launch "
     "leaves partial (a block of 16 threads, or rows whose threads do not "
     "fill the last warp), a mask narrowed for the partial warp while the "
     "offsets still reach past it. Fix: shuffle only within the lanes that "
     "exist (a width or offsets below the live lane count, or a guard that "
     "drops what an absent lane gave) or launch whole warps."},
};

// rule(code) indexes the registry by its code.
constexpr bool registry_in_code_order() {
  for (std::size_t i = 0; i < std::size(kRules); ++i)
    if (static_cast<std::size_t>(kRules[i].code) != i)
      return false;
  return std::size(kRules) ==
         static_cast<std::size_t>(RuleCode::UndefinedShuffleValue) + 1;
}
static_assert(registry_in_code_order(), "kRules must list every RuleCode in order");
} // namespace

namespace {
// The layout rule comes from the analyzer's layout inference; the kernel
// rules, after it, from its kernel check (analyzer/kernel_check.cpp), which
// reads lifted kernels, not a program.
constexpr RuleCode kSessionRules[] = {RuleCode::InferredLayout,
                                      RuleCode::KernelMismatch,
                                      RuleCode::MemoryRace,
                                      RuleCode::OutOfBounds,
                                      RuleCode::KernelNotLaunched,
                                      RuleCode::UninitialisedRead,
                                      RuleCode::DivergentBarrier,
                                      RuleCode::CrossRankRace,
                                      RuleCode::UncheckedPrecondition,
                                      RuleCode::UndefinedShuffleValue};
static_assert(kSessionRules[0] == RuleCode::InferredLayout);
} // namespace

std::span<const RuleCode> session_rules() { return kSessionRules; }

std::span<const RuleCode> kernel_rules() { return std::span(kSessionRules).subspan(1); }

std::string_view severity_name(Severity severity) {
  switch (severity) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Note:
    return "note";
  }
  return "?";
}

std::span<const Rule> all_rules() { return kRules; }

const Rule &rule(RuleCode code) { return kRules[static_cast<std::size_t>(code)]; }

const Rule *find_rule(std::string_view text) {
  for (const Rule &r : kRules)
    if (r.id == text || r.name == text)
      return &r;
  return nullptr;
}

bool RuleSelection::reports(RuleCode code) const {
  auto listed = [code](const std::vector<RuleCode> &codes) {
    return std::find(codes.begin(), codes.end(), code) != codes.end();
  };
  return (select.empty() || listed(select)) && !listed(ignore);
}

} // namespace shardproof::checkers

// Lifting a kernel launch by symbolic execution of its AST. The threads of a
// block run in lockstep (SIMT): every expression is evaluated for all active
// threads at once, so a warp shuffle reads its partners' values directly and
// __syncthreads ends a phase for the whole block. Integers are concrete and
// computed at their C++ width; floating-point values are terms over the
// reals. Memory accesses are bounds-checked and checked for conflicts within
// a phase (a race). Anything not modelled stops the lift with its line.
#include "frontend/cuda/cuda_file.h"
#include "frontend/cuda/groups.h"
#include "frontend/cuda/memory.h"
#include "frontend/cuda/ptx.h"
#include "frontend/cuda/ranks.h"
#include "frontend/cuda/views.h"
#include "frontend/cuda/warp.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecordLayout.h>
#include <clang/AST/Stmt.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Lex/Lexer.h>
#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <tuple>
#include <unordered_map>

namespace shardproof::frontend::cuda {

using terms::TermId;

std::string ThreadId::str() const {
  return fmt::format("thread ({},{},{}) of block ({},{},{}){}", thread[0], thread[1],
                     thread[2], block[0], block[1], block[2],
                     rank < 0 ? "" : fmt::format(" of rank {}", rank));
}

namespace {

// Stops the lift: a construct not modelled (could not prove).
struct NotModelled {
  ir::SourceLoc loc;
  std::string what;
};
// Stops the lift: a finding was recorded.
struct FindingRecorded {};

enum class Flow : std::uint8_t { Running, Returned, Broken, Continued };

// Where a name refers to: a register of a frame (var, frame) or a buffer
// element (buffer, offset).
struct Place {
  const clang::VarDecl *var = nullptr; // a register
  int buffer = -1;                     // else a buffer element
  std::int64_t offset = 0;
  int frame = -1; // the register's frame (its index in the thread's frames)
};

struct Frame {
  std::unordered_map<const clang::VarDecl *, Value> registers;
  // A reference parameter: the caller's variable or element it names.
  std::unordered_map<const clang::VarDecl *, Place> references;
  Value returned;
};

struct Thread {
  std::vector<Frame> frames;
  Flow flow = Flow::Running;
  // Data-dependent branches this thread is in: writes are merged as
  // ite(condition, new, old) (a false polarity: the else side).
  std::vector<std::pair<TermId, bool>> guards;
  std::unordered_map<const clang::VarDecl *, int> locals; // local arrays
};

using Mask = std::vector<char>;
using Values = std::vector<Value>;

// Expression evaluations times the threads of the block: a launch that
// needs more is "could not prove" (an endless loop must not hang a check).
constexpr std::int64_t kMaxSteps = 100'000'000;

class Lifter {
public:
  Lifter(terms::TermStore &store, const clang::ASTUnit &unit, const KernelLaunch &launch)
      : store_(store), context_(unit.getASTContext()), sources_(unit.getSourceManager()),
        launch_(launch) {}

  LiftedLaunch run(const clang::FunctionDecl &kernel,
                   const std::map<std::string, std::vector<TermId>> &inputs) {
    LiftedLaunch lifted;
    try {
      bind_buffers(inputs);
      if (launch_.ranks > 0)
        run_ranks(kernel);
      else
        run_blocks(kernel);
    } catch (const NotModelled &e) {
      lifted.unsupported = Diagnostic{e.loc, e.what};
    } catch (const FindingRecorded &) {
    }
    lifted.findings = std::move(findings_);
    for (const KernelArg &arg : launch_.args) {
      if (!arg.is_buffer() || arg.is_concrete())
        continue;
      std::vector<TermId> &out = lifted.buffers[arg.name];
      auto &writes = lifted.writes[arg.name];
      for (int b : buffers_of(arg)) { // one per rank, in rank order
        const Buffer &buffer = buffers_[b];
        for (const Value &cell : buffer.cells) {
          // Never a term read from a value that is not one (fail closed).
          if (cell.kind != Value::Kind::Float && !lifted.unsupported)
            lifted.unsupported = Diagnostic{
                launch_.loc, fmt::format("{}[{}] holds no real value after the launch",
                                         arg.name, out.size())};
          out.push_back(cell.term);
        }
        writes.insert(writes.end(), buffer.writes.begin(), buffer.writes.end());
      }
    }
    if (lifted.findings.empty() && !lifted.unsupported)
      if (auto undefined = output_reading_undefined(lifted))
        lifted.findings.push_back(std::move(*undefined));
    return lifted;
  }

private:
  // --- setup -------------------------------------------------------------

  void bind_buffers(const std::map<std::string, std::vector<TermId>> &inputs) {
    for (const KernelArg &arg : launch_.args) {
      if (!arg.is_buffer())
        continue;
      if (!arg.is_concrete() &&
          (*arg.buffer_type == ir::DType::Int32 || *arg.buffer_type == ir::DType::Int64))
        throw NotModelled{arg.loc, fmt::format("integer buffer '{}' is not modelled "
                                               "(its contents would have to be concrete)",
                                               arg.name)};
      for (int rank = arg.per_rank ? 0 : -1; rank < (arg.per_rank ? launch_.ranks : 0);
           ++rank)
        bind_buffer(arg, rank, inputs);
    }
    bind_pointer_tables();
  }

  // `arg`'s buffer (of `rank`, -1 for one shared by all): a per-rank
  // buffer's inputs are the rank's row of the stacked ones.
  void bind_buffer(const KernelArg &arg, int rank,
                   const std::map<std::string, std::vector<TermId>> &inputs) {
    Buffer buffer;
    buffer.name = rank < 0 ? arg.name : fmt::format("{}[{}]", arg.name, rank);
    if (arg.is_concrete()) { // a profile's mask, flags: integers as given
      for (std::int64_t v : arg.concrete)
        buffer.cells.push_back(Value::integer(v));
    } else {
      const std::vector<TermId> &given = inputs.at(arg.name);
      std::size_t n = given.size() / (rank < 0 ? 1 : launch_.ranks);
      for (std::size_t k = 0; k < n; ++k)
        buffer.cells.push_back(Value::real(given[std::max(rank, 0) * n + k]));
    }
    buffer_of_[buffer_key(arg.name, rank)] = new_buffer(std::move(buffer));
  }

  int new_buffer(Buffer buffer) {
    std::size_t n = buffer.cells.size();
    buffer.cells.resize(n);
    buffer.last_write.resize(n);
    buffer.reads.resize(n);
    buffer.earlier_block_read.resize(n);
    buffer.writes.resize(n);
    buffers_.push_back(std::move(buffer));
    return static_cast<int>(buffers_.size()) - 1;
  }

  std::vector<std::pair<const clang::ParmVarDecl *, Value>>
  kernel_arguments(const clang::FunctionDecl &kernel, int rank = -1) {
    std::vector<std::pair<const clang::ParmVarDecl *, Value>> out;
    for (const clang::ParmVarDecl *param : kernel.parameters()) {
      std::string name = param->getNameAsString();
      const KernelArg *arg = launch_.arg(name);
      if (!arg)
        throw NotModelled{launch_.loc,
                          fmt::format("kernel parameter '{}' has no "
                                      "'// shardproof: arg {} = ...' annotation",
                                      name, name)};
      clang::QualType type = param->getType().getCanonicalType();
      if (arg->is_rank || arg->is_pointer_table()) {
        out.emplace_back(param, rank_argument(*arg, param, rank));
        continue;
      }
      if (arg->is_buffer() != type->isPointerType())
        throw NotModelled{arg->loc,
                          fmt::format("arg '{}' is annotated as a {} but "
                                      "the kernel's parameter is '{}'",
                                      name, arg->is_buffer() ? "buffer" : "scalar",
                                      param->getType().getAsString())};
      if (arg->is_buffer()) {
        check_element_type(*arg, param->getType()->getPointeeType(), param);
        int buffer = buffer_of_.at(buffer_key(name, arg->per_rank ? rank : -1));
        set_format(buffers_[buffer], param->getType()->getPointeeType(), arg->loc);
        out.emplace_back(param, Value::pointer(buffer, 0));
      } else if (type->isIntegerType())
        out.emplace_back(param, Value::integer(wrap(integer_scalar(*arg), type)));
      else if (type->isRealFloatingType())
        out.emplace_back(param, Value::real(store_.constant_from_double(
                                    std::strtod(arg->scalar.c_str(), nullptr))));
      else
        throw NotModelled{loc(param->getLocation()),
                          fmt::format("a kernel parameter of type '{}' is "
                                      "not modelled",
                                      param->getType().getAsString())};
    }
    return out;
  }

  // A buffer's elements are what the annotation says: a real type of its
  // width (float32: float; float16: __half; bfloat16: __nv_bfloat16).
  void check_element_type(const KernelArg &arg, clang::QualType element,
                          const clang::ParmVarDecl *param) const {
    element = element.getCanonicalType();
    if (arg.is_concrete()) {
      if (!element->isIntegerType())
        throw NotModelled{arg.loc, fmt::format("integer buffer '{}' is passed to the "
                                               "kernel's parameter '{}'",
                                               arg.name, param->getType().getAsString())};
      return;
    }
    bool real = element->isRealFloatingType() || is_sixteen_bit(element);
    auto bytes = element->isIncompleteType()
                     ? 0
                     : context_.getTypeSizeInChars(element).getQuantity();
    auto wanted = *arg.buffer_type == ir::DType::Float32 ? 4 : 2;
    if (!real || bytes != wanted)
      throw NotModelled{arg.loc, fmt::format("arg '{}' is annotated {} but the kernel's "
                                             "parameter is '{}'",
                                             arg.name, ir::dtype_name(*arg.buffer_type),
                                             param->getType().getAsString())};
  }

  // An integer scalar's value; a fraction or a number out of range is the
  // annotation's mistake.
  static std::int64_t integer_scalar(const KernelArg &arg) {
    std::int64_t value = 0;
    const std::string &text = arg.scalar;
    const char *begin = text.data() + (text.starts_with('+') ? 1 : 0);
    auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
      throw NotModelled{arg.loc, fmt::format("arg '{}' = {} is not an integer, but the "
                                             "kernel's parameter is one",
                                             arg.name, text)};
    return value;
  }

  void
  run_block(std::array<int, 3> block, const clang::FunctionDecl &kernel,
            const std::vector<std::pair<const clang::ParmVarDecl *, Value>> &params) {
    block_ = block;
    ++block_serial_;
    phase_ = 0;
    shared_.clear();
    int n = launch_.block[0] * launch_.block[1] * launch_.block[2];
    threads_.assign(n, Thread{});
    syncs_.reset(n);
    for (Thread &t : threads_) {
      t.frames.emplace_back();
      for (const auto &[param, value] : params) {
        t.frames.back().registers[param] = value;
        if (param->getType()->isRecordType()) // a struct by value: its memory
          t.locals[param] = value.buffer;
      }
    }
    Mask all(n, 1);
    exec(kernel.getBody(), all);
  }

  // --- places and messages ----------------------------------------------

  ir::SourceLoc loc(clang::SourceLocation at) const { return source_loc(sources_, at); }
  ir::SourceLoc loc(const clang::Stmt *s) const {
    return s ? loc(s->getBeginLoc()) : ir::SourceLoc{};
  }

  [[noreturn]] void not_modelled(const clang::Stmt *s, const std::string &what) const {
    throw NotModelled{loc(s),
                      fmt::format("{} at {} is not modelled", what, loc(s).str())};
  }

  std::string text_of(const clang::Stmt *s) const {
    if (!s)
      return "";
    auto range = clang::CharSourceRange::getTokenRange(s->getSourceRange());
    std::string text =
        clang::Lexer::getSourceText(range, sources_, context_.getLangOpts()).str();
    if (text.size() > 60)
      text = text.substr(0, 57) + "...";
    return text;
  }

  ThreadId thread_id(int t) const {
    int bx = launch_.block[0], by = launch_.block[1];
    return {block_, {t % bx, (t / bx) % by, t / (bx * by)}, rank_};
  }

  void step(const clang::Stmt *s) {
    steps_ += static_cast<std::int64_t>(threads_.size());
    if (steps_ > kMaxSteps)
      throw NotModelled{loc(s),
                        fmt::format("the launch did not finish "
                                    "within {} thread-steps (at {}): an endless loop?",
                                    kMaxSteps, loc(s).str())};
  }

  // --- masks --------------------------------------------------------------

  bool active(const Mask &mask, int t) const {
    return mask[t] && threads_[t].flow == Flow::Running;
  }
  Mask live(const Mask &mask) const {
    Mask out(mask.size());
    for (std::size_t t = 0; t < mask.size(); ++t)
      out[t] = active(mask, static_cast<int>(t));
    return out;
  }
  static bool any(const Mask &mask) {
    return std::find(mask.begin(), mask.end(), 1) != mask.end();
  }

  // --- statements -----------------------------------------------------------

  void exec(const clang::Stmt *s, const Mask &mask) {
    Mask on = live(mask);
    if (!s || !any(on))
      return;
    step(s);
    if (const auto *compound = llvm::dyn_cast<clang::CompoundStmt>(s)) {
      for (const clang::Stmt *child : compound->body())
        exec(child, on);
    } else if (const auto *attributed = llvm::dyn_cast<clang::AttributedStmt>(s)) {
      exec(attributed->getSubStmt(), on); // #pragma unroll: unrolled anyway
    } else if (const auto *decl = llvm::dyn_cast<clang::DeclStmt>(s)) {
      for (const clang::Decl *d : decl->decls())
        declare(d, s, on);
    } else if (const auto *branch = llvm::dyn_cast<clang::IfStmt>(s)) {
      exec_if(branch, on);
    } else if (const auto *loop = llvm::dyn_cast<clang::ForStmt>(s)) {
      exec(loop->getInit(), on);
      exec_loop(loop->getCond(), loop->getBody(), loop->getInc(), on, false);
    } else if (const auto *loop = llvm::dyn_cast<clang::WhileStmt>(s)) {
      exec_loop(loop->getCond(), loop->getBody(), nullptr, on, false);
    } else if (const auto *loop = llvm::dyn_cast<clang::DoStmt>(s)) {
      exec_loop(loop->getCond(), loop->getBody(), nullptr, on, true);
    } else if (llvm::isa<clang::BreakStmt>(s) || llvm::isa<clang::ContinueStmt>(s)) {
      leave(s, on, llvm::isa<clang::BreakStmt>(s) ? Flow::Broken : Flow::Continued);
    } else if (const auto *ret = llvm::dyn_cast<clang::ReturnStmt>(s)) {
      if (ret->getRetValue()) {
        Values v = eval(ret->getRetValue(), on);
        for (std::size_t t = 0; t < on.size(); ++t)
          if (on[t])
            threads_[t].frames.back().returned = v[t];
      }
      leave(s, on, Flow::Returned);
    } else if (llvm::isa<clang::NullStmt>(s)) {
    } else if (const auto *assembly = llvm::dyn_cast<clang::GCCAsmStmt>(s)) {
      exec_asm(assembly, on);
    } else if (const auto *e = llvm::dyn_cast<clang::Expr>(s)) {
      eval(e, on);
    } else {
      not_modelled(
          s, fmt::format("the statement '{}' ({})", text_of(s), s->getStmtClassName()));
    }
  }

  void leave(const clang::Stmt *s, const Mask &on, Flow flow) {
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t]) {
        if (!threads_[t].guards.empty())
          not_modelled(s, "leaving a branch on a data-dependent condition");
        threads_[t].flow = flow;
      }
  }

  void declare(const clang::Decl *d, const clang::Stmt *s, const Mask &on) {
    const auto *var = llvm::dyn_cast<clang::VarDecl>(d);
    if (!var)
      return; // a typedef, a using declaration
    clang::QualType type = var->getType().getCanonicalType();
    if (var->hasAttr<clang::CUDASharedAttr>()) {
      if (!shared_.count(var))
        shared_[var] = new_buffer(array_buffer(var, Space::Shared));
      return;
    }
    if (var->isStaticLocal())
      not_modelled(s, "a static local variable");
    if (address_taken(var)) { // float v; reduce(&v): a cell a pointer can point to
      declare_addressed_scalar(var, on);
      return;
    }
    if (type->isArrayType()) {
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t])
          threads_[t].locals[var] = new_buffer(array_buffer(var, Space::Local));
      if (var->hasInit())
        initialise_array(var, s, on);
      return;
    }
    if (is_group_type(type)) { // cg::thread_block b = cg::this_thread_block();
      declare_group(var, s, on);
      return;
    }
    if (const auto *record = type->getAsCXXRecordDecl();
        record && record->field_empty() && !is_sixteen_bit(type))
      return;                   // a stateless functor (Add<float> r;): nothing to hold
    if (holds_elements(type)) { // float4 q = v[i]: a local buffer of its fields
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t])
          threads_[t].locals[var] = new_buffer(array_buffer(var, Space::Local));
      if (var->hasInit())
        initialise_vector(var, on);
      return;
    }
    // A register again (a loop's next iteration), whatever to_memory made of
    // the last one.
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t])
        threads_[t].locals.erase(var);
    if (!var->hasInit()) {
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t])
          threads_[t].frames.back().registers[var] = Value{};
      return;
    }
    Values v = eval(var->getInit(), on);
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t])
        threads_[t].frames.back().registers[var] =
            convert(v[t], var->getInit()->getType(), type, var->getInit());
  }

  // Whether the function that declares `var` takes its address anywhere: a
  // scalar whose address is taken lives in a one-element local buffer, so
  // a pointer to it is a pointer like any other (read, written, passed on,
  // bounds-checked).
  bool address_taken(const clang::VarDecl *var) {
    if (!addressable(var->getType()))
      return false;
    auto [it, fresh] = address_taken_.try_emplace(var, false);
    if (fresh)
      if (const auto *fn = llvm::dyn_cast_or_null<clang::FunctionDecl>(
              var->getParentFunctionOrMethod()))
        it->second = takes_address_of(fn->getBody(), var);
    return it->second;
  }

  // A register a one-element local buffer can hold: a number, not a pointer.
  bool addressable(clang::QualType type) const {
    type = type.getCanonicalType();
    return (type->isScalarType() || is_sixteen_bit(type)) && !type->isPointerType();
  }

  static bool takes_address_of(const clang::Stmt *s, const clang::VarDecl *var) {
    if (!s)
      return false;
    if (const auto *op = llvm::dyn_cast<clang::UnaryOperator>(s);
        op && op->getOpcode() == clang::UO_AddrOf)
      if (const auto *ref =
              llvm::dyn_cast<clang::DeclRefExpr>(op->getSubExpr()->IgnoreParenImpCasts());
          ref && ref->getDecl() == var)
        return true;
    return std::any_of(s->child_begin(), s->child_end(), [&](const clang::Stmt *child) {
      return takes_address_of(child, var);
    });
  }

  // A register whose address is taken where its declaration could not tell
  // (through a reference: f(float &v) { g(&v); }): it moves into a
  // one-element local buffer for the rest of its life, and every name of it
  // (the variable, the references to it) means that cell from now on.
  Place to_memory(int t, const Place &reg, const clang::Expr *e) {
    if (!addressable(reg.var->getType()))
      not_modelled(e, "the address of a variable");
    Thread &thread = threads_[t];
    Frame &home = thread.frames[reg.frame];
    Place cell{nullptr, new_buffer(array_buffer(reg.var, Space::Local)), 0};
    if (auto it = home.registers.find(reg.var); it != home.registers.end()) {
      buffers_[cell.buffer].cells[0] = it->second; // Undef stays unwritten
      home.registers.erase(it);
    }
    thread.locals[reg.var] = cell.buffer;
    for (Frame &frame : thread.frames)
      for (auto &[param, alias] : frame.references)
        if (alias.var == reg.var && alias.frame == reg.frame)
          alias = cell;
    return cell;
  }

  void declare_addressed_scalar(const clang::VarDecl *var, const Mask &on) {
    std::vector<Place> cell(on.size());
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t]) {
        threads_[t].locals[var] = new_buffer(array_buffer(var, Space::Local));
        cell[t] = {nullptr, threads_[t].locals[var], 0};
      }
    if (!var->hasInit())
      return;
    Values v = eval(var->getInit(), on);
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t])
        v[t] = convert(v[t], var->getInit()->getType(), var->getType(), var->getInit());
    store(cell, v, on, var->getInit(), var->getType());
  }

  // T a[N]{v0, ...}: the values given, the rest zero (of one dimension,
  // of scalars).
  void initialise_array(const clang::VarDecl *var, const clang::Stmt *s, const Mask &on) {
    if (const auto *construct =
            llvm::dyn_cast<clang::CXXConstructExpr>(var->getInit()->IgnoreImplicit());
        construct && construct->getConstructor()->isTrivial())
      return; // T a[N] of a class with a trivial constructor: uninitialised
    const auto *list =
        llvm::dyn_cast<clang::InitListExpr>(var->getInit()->IgnoreImplicit());
    const auto *array = context_.getAsConstantArrayType(var->getType());
    if (!list || !array || !array->getElementType()->isScalarType())
      not_modelled(s, "an initialised local array other than T a[N]{...}");
    clang::QualType element = array->getElementType();
    std::int64_t n = array->getSize().getSExtValue();
    for (std::int64_t k = 0; k < n; ++k) {
      const clang::Expr *e = k < list->getNumInits() ? list->getInit(k) : nullptr;
      Values v = e && !llvm::isa<clang::ImplicitValueInitExpr>(e)
                     ? eval(e, on)
                     : fill(on, element->isRealFloatingType()
                                    ? Value::real(store_.constant_from_double(0))
                                    : Value::integer(0));
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t]) {
          Buffer &buffer = buffers_[threads_[t].locals.at(var)];
          buffer.cells[k] = convert(v[t], e ? e->getType() : element, element, s);
        }
    }
  }

  Buffer array_buffer(const clang::VarDecl *var, Space space) {
    Buffer buffer;
    buffer.name = var->getNameAsString();
    buffer.space = space;
    clang::QualType type = var->getType().getCanonicalType();
    std::int64_t n = 0;
    if (const auto *incomplete = context_.getAsIncompleteArrayType(type)) {
      // extern __shared__ T s[]: the launch's dynamic shared memory.
      auto bytes =
          context_.getTypeSizeInChars(incomplete->getElementType()).getQuantity();
      n = launch_.shared_bytes / bytes;
    } else if (is_union(type)) { // its first member's elements, to begin with
      set_format(buffer, type, loc(var->getLocation()));
      n = bytes_of(type) / buffer.element_bytes;
    } else { // an array, or a scalar: one element
      n = scalars_in(type, loc(var->getLocation()));
    }
    set_format(buffer, type, loc(var->getLocation()));
    buffer.retypable = space == Space::Local && holds_elements(type);
    buffer.cells.resize(n);
    return buffer;
  }

  // How many scalars a value of `type` holds (an array's elements, nested).
  std::int64_t scalars_in(clang::QualType type, const ir::SourceLoc &where) const {
    type = type.getCanonicalType();
    if (const auto *array = context_.getAsConstantArrayType(type))
      return array->getSize().getSExtValue() * scalars_in(array->getElementType(), where);
    if (type->isScalarType() || is_sixteen_bit(type))
      return 1;
    if (int fields = vector_fields(type))
      return fields;
    throw NotModelled{where, fmt::format("values of type '{}' at {} are "
                                         "not modelled",
                                         type.getAsString(), where.str())};
  }

  void exec_if(const clang::IfStmt *branch, const Mask &on) {
    if (branch->getInit() || branch->getConditionVariable())
      not_modelled(branch, "an if with an initialiser");
    Values cond = eval(branch->getCond(), on);
    Mask then_mask(on.size()), else_mask(on.size()), symbolic(on.size());
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (!on[t])
        continue;
      if (cond[t].kind == Value::Kind::SymBool)
        symbolic[t] = 1;
      else
        (truth(cond[t], branch->getCond()) ? then_mask : else_mask)[t] = 1;
    }
    exec(branch->getThen(), then_mask);
    exec(branch->getElse(), else_mask);
    if (!any(symbolic))
      return;
    // A data-dependent branch: both sides run, writes merged under its condition.
    for (bool side : {true, false}) {
      const clang::Stmt *body = side ? branch->getThen() : branch->getElse();
      if (!body)
        continue;
      for (std::size_t t = 0; t < on.size(); ++t)
        if (symbolic[t])
          threads_[t].guards.emplace_back(cond[t].term, side != cond[t].negated);
      exec(body, symbolic);
      for (std::size_t t = 0; t < on.size(); ++t)
        if (symbolic[t])
          threads_[t].guards.pop_back();
    }
  }

  void exec_loop(const clang::Expr *cond, const clang::Stmt *body, const clang::Expr *inc,
                 const Mask &on, bool body_first) {
    Mask looping = on;
    for (bool first = true;; first = false) {
      std::uint64_t writes = writes_;
      if (!(first && body_first) && cond) {
        Values c = eval(cond, looping);
        for (std::size_t t = 0; t < on.size(); ++t)
          if (looping[t] && !truth(c[t], cond))
            looping[t] = 0;
      }
      looping = live(looping);
      if (!any(looping))
        return;
      Mask entered = looping;
      exec(body, looping);
      for (std::size_t t = 0; t < on.size(); ++t) {
        if (!looping[t])
          continue;
        Flow &flow = threads_[t].flow;
        if (flow == Flow::Continued)
          flow = Flow::Running;
        if (flow == Flow::Broken) {
          flow = Flow::Running;
          looping[t] = 0;
        }
      }
      looping = live(looping);
      if (inc)
        eval(inc, looping);
      if (writes_ == writes && looping == entered && !(first && body_first))
        wait_for_peers(cond ? static_cast<const clang::Stmt *>(cond) : body, looping);
    }
  }

  // A concrete truth value; a data-dependent one here is not modelled.
  bool truth(const Value &v, const clang::Expr *e) const {
    require_elements(v, e);
    switch (v.kind) {
    case Value::Kind::Int:
      return v.i != 0;
    case Value::Kind::Pointer:
      return true;
    case Value::Kind::Float:
      if (store_.is_const(v.term))
        return store_.const_value(v.term) != 0;
      break;
    default:
      break;
    }
    not_modelled(e, fmt::format("the data-dependent condition '{}' where a concrete "
                                "truth value is needed (a loop, &&, ||, a conversion)",
                                text_of(e)));
  }

  // --- expressions ----------------------------------------------------------

  Values eval(const clang::Expr *e, const Mask &on) {
    step(e);
    e = e->IgnoreParens();
    if (is_group_type(e->getType()))
      return eval_group(e, on);
    Values out(on.size());
    if (const auto *lit = llvm::dyn_cast<clang::IntegerLiteral>(e))
      return fill(on, Value::integer(
                          wrap(static_cast<std::int64_t>(lit->getValue().getZExtValue()),
                               lit->getType())));
    if (const auto *lit = llvm::dyn_cast<clang::CXXBoolLiteralExpr>(e))
      return fill(on, Value::integer(lit->getValue()));
    if (const auto *lit = llvm::dyn_cast<clang::FloatingLiteral>(e))
      return fill(on, Value::real(float_literal(lit)));
    if (const auto *subst = llvm::dyn_cast<clang::SubstNonTypeTemplateParmExpr>(e))
      return eval(subst->getReplacement(), on);
    if (const auto *given = llvm::dyn_cast<clang::CXXDefaultArgExpr>(e))
      return eval(given->getExpr(), on);
    if (const auto *cleanups = llvm::dyn_cast<clang::ExprWithCleanups>(e))
      return eval(cleanups->getSubExpr(), on);
    if (const auto *cast = llvm::dyn_cast<clang::CastExpr>(e))
      return eval_cast(cast, on);
    if (const auto *pseudo = llvm::dyn_cast<clang::PseudoObjectExpr>(e))
      return builtin_index(pseudo, on);
    if (const auto *unary = llvm::dyn_cast<clang::UnaryOperator>(e))
      return eval_unary(unary, on);
    if (const auto *binary = llvm::dyn_cast<clang::BinaryOperator>(e))
      return eval_binary(binary, on);
    if (const auto *cond = llvm::dyn_cast<clang::ConditionalOperator>(e))
      return eval_conditional(cond, on);
    if (const auto *temporary = llvm::dyn_cast<clang::MaterializeTemporaryExpr>(e))
      return eval(temporary->getSubExpr(), on);
    if (is_sixteen_bit(e->getType()))
      if (auto values = sixteen_bit_value(e, on))
        return *values;
    if (const auto *op = llvm::dyn_cast<clang::CXXOperatorCallExpr>(e);
        op && op->getOperator() == clang::OO_Equal && op->getNumArgs() == 2)
      if (clang::QualType type = op->getArg(0)->getType(); holds_elements(type)) {
        assign_vector(place(op->getArg(0), on), op->getArg(1), type, on);
        return Values(on.size()); // the assignment's value, never read as one
      }
    if (const auto *call = llvm::dyn_cast<clang::CallExpr>(e))
      return eval_call(call, on);
    if (const auto *ref = llvm::dyn_cast<clang::DeclRefExpr>(e))
      if (const auto *constant = llvm::dyn_cast<clang::EnumConstantDecl>(ref->getDecl()))
        return fill(on, Value::integer(constant->getInitVal().getSExtValue()));
    if (llvm::isa<clang::DeclRefExpr>(e) || llvm::isa<clang::ArraySubscriptExpr>(e) ||
        llvm::isa<clang::MemberExpr>(e)) {
      // An array's name: its address (decayed by the cast around it).
      if (e->getType()->isArrayType()) {
        auto places = place(e, on);
        for (std::size_t t = 0; t < on.size(); ++t)
          if (on[t])
            out[t] = Value::pointer(places[t].buffer, places[t].offset);
        return out;
      }
    }
    // sizeof, constexpr values, template arguments: what clang can fold.
    clang::Expr::EvalResult folded;
    if (e->getType()->isIntegerType() && !e->HasSideEffects(context_) &&
        e->EvaluateAsInt(folded, context_))
      return fill(on, Value::integer(folded.Val.getInt().getExtValue()));
    not_modelled(
        e, fmt::format("the expression '{}' ({})", text_of(e), e->getStmtClassName()));
  }

  // __half and __nv_bfloat16 (structs in the headers) hold one real here.
  static bool is_sixteen_bit(clang::QualType type) {
    return sixteen_bit_format(type).has_value();
  }

  // A 16-bit value's copy (a load) or assignment (a store), which C++ spells
  // as the struct's constructor and operator=.
  std::optional<Values> sixteen_bit_value(const clang::Expr *e, const Mask &on) {
    auto value_of = [&](const clang::Expr *arg) { return value(arg, on); };
    if (const auto *construct = llvm::dyn_cast<clang::CXXConstructExpr>(e);
        construct && construct->getNumArgs() == 1 &&
        (construct->getConstructor()->isCopyOrMoveConstructor() ||
         construct->getArg(0)->getType()->isRealFloatingType())) // Half(float)
      return value_of(construct->getArg(0)->IgnoreImplicit());
    if (const auto *op = llvm::dyn_cast<clang::CXXOperatorCallExpr>(e);
        op && op->getOperator() == clang::OO_Equal && op->getNumArgs() == 2) {
      auto places = place(op->getArg(0), on);
      Values value = value_of(op->getArg(1)->IgnoreImplicit());
      store(places, value, on, op, op->getArg(0)->getType());
      return value;
    }
    return std::nullopt;
  }

  static Values fill(const Mask &on, Value v) {
    Values out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t])
        out[t] = v;
    return out;
  }

  // A literal as its decimal spelling says (as Python reads the reference's
  // constants): 0.044715f and the reference's 0.044715 are the same term.
  TermId float_literal(const clang::FloatingLiteral *lit) {
    // The spelling, also where a macro (#define EPS 1e-5f) wrote it.
    llvm::SmallString<32> buffer;
    bool invalid = false;
    std::string text =
        clang::Lexer::getSpelling(sources_.getSpellingLoc(lit->getLocation()), buffer,
                                  sources_, context_.getLangOpts(), &invalid)
            .str();
    if (invalid)
      text.clear();
    char *end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end == text.c_str())
      value = lit->getValueAsApproximateDouble();
    return store_.constant_from_double(value);
  }

  Values builtin_index(const clang::PseudoObjectExpr *pseudo, const Mask &on) {
    const auto *property =
        llvm::dyn_cast<clang::MSPropertyRefExpr>(pseudo->getSyntacticForm());
    const clang::Expr *object =
        property ? property->getBaseExpr()->IgnoreImpCasts() : nullptr;
    if (const auto *opaque = llvm::dyn_cast_or_null<clang::OpaqueValueExpr>(object))
      object = opaque->getSourceExpr()->IgnoreImpCasts();
    const auto *base = llvm::dyn_cast_or_null<clang::DeclRefExpr>(object);
    if (!base)
      not_modelled(pseudo, fmt::format("the expression '{}'", text_of(pseudo)));
    std::string var = base->getDecl()->getNameAsString();
    std::string axis = property->getPropertyDecl()->getNameAsString();
    int k = axis == "x" ? 0 : axis == "y" ? 1 : 2;
    Values out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (!on[t])
        continue;
      ThreadId id = thread_id(static_cast<int>(t));
      std::int64_t v = var == "threadIdx"  ? id.thread[k]
                       : var == "blockIdx" ? id.block[k]
                       : var == "blockDim" ? launch_.block[k]
                       : var == "gridDim"  ? launch_.grid[k]
                                           : -1;
      if (v < 0)
        not_modelled(pseudo, fmt::format("the builtin variable '{}'", var));
      out[t] = Value::integer(v);
    }
    return out;
  }

  Values eval_cast(const clang::CastExpr *cast, const Mask &on) {
    const clang::Expr *sub = cast->getSubExpr();
    switch (cast->getCastKind()) {
    case clang::CK_LValueToRValue:
      return load(sub, on);
    case clang::CK_NullToPointer: // a null pointer: the integer 0 here
      return fill(on, Value::integer(0));
    case clang::CK_UserDefinedConversion: {
      // float(h) of a 16-bit value: the same real.
      const auto *call = llvm::dyn_cast<clang::CXXMemberCallExpr>(sub->IgnoreImplicit());
      if (call && llvm::isa<clang::CXXConversionDecl>(call->getMethodDecl()) &&
          is_sixteen_bit(call->getImplicitObjectArgument()->getType()) &&
          cast->getType()->isRealFloatingType())
        return value(call->getImplicitObjectArgument()->IgnoreImpCasts(), on);
      not_modelled(cast, fmt::format("the conversion '{}' ({})", text_of(cast),
                                     cast->getCastKindName()));
    }
    case clang::CK_ArrayToPointerDecay:
    case clang::CK_NoOp:
    case clang::CK_FunctionToPointerDecay:
    case clang::CK_ToVoid:
    case clang::CK_ConstructorConversion:
      return eval(sub, on);
    case clang::CK_IntegralCast:
    case clang::CK_IntegralToFloating:
    case clang::CK_FloatingToIntegral:
    case clang::CK_FloatingCast:
    case clang::CK_IntegralToBoolean:
    case clang::CK_FloatingToBoolean: {
      Values v = eval(sub, on);
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t])
          v[t] = convert(v[t], sub->getType(), cast->getType(), cast);
      return v;
    }
    case clang::CK_BitCast:
      // reinterpret_cast<const float4 *>(x), (float2 *)halves, void *: a
      // view of the buffer; the pointer is unchanged (offsets count the
      // buffer's elements), what an access through it covers follows its type.
      if (cast->getType()->isPointerType() && sub->getType()->isPointerType())
        return eval(sub, on);
      [[fallthrough]];
    default:
      not_modelled(cast, fmt::format("the conversion '{}' ({})", text_of(cast),
                                     cast->getCastKindName()));
    }
  }

  // `v` of type `from` as a value of type `to`.
  Value convert(Value v, clang::QualType from, clang::QualType to,
                const clang::Stmt *at) {
    to = to.getCanonicalType();
    if (v.kind == Value::Kind::Undef ||
        (v.kind == Value::Kind::Group && is_group_type(to)))
      return v;
    if (v.kind == Value::Kind::Bits &&
        from.getCanonicalType().getUnqualifiedType() == to.getUnqualifiedType())
      return v; // copied as it is: still the same bits
    require_elements(v, at);
    if (to->isBooleanType() && v.kind == Value::Kind::Float) {
      if (!store_.is_const(v.term))
        not_modelled(at, "a floating-point value used as a truth value");
      return Value::integer(store_.const_value(v.term) != 0);
    }
    if (to->isIntegerType() && v.kind == Value::Kind::Int)
      return Value::integer(wrap(v.i, to));
    if (to->isIntegerType() && v.kind == Value::Kind::Float) {
      if (!store_.is_const(v.term))
        not_modelled(at, "a data-dependent floating-point value converted to an integer");
      mpz_class whole(store_.const_value(v.term)); // truncates toward zero
      return Value::integer(wrap(whole.get_si(), to));
    }
    if (to->isRealFloatingType() && v.kind == Value::Kind::Int)
      return Value::real(store_.constant(v.i));
    if ((to->isRealFloatingType() || is_sixteen_bit(to)) && v.kind == Value::Kind::Float)
      return v; // half, float, double: all reals here
    if (to->isPointerType() &&
        (v.kind == Value::Kind::Pointer || (v.kind == Value::Kind::Int && v.i == 0)))
      return v; // a buffer, or null
    if (to->isIntegerType() && v.kind == Value::Kind::SymBool)
      return v; // a comparison as 0/1, for a branch to decide
    if (to->isIntegerType() && from->isIntegerType() && v.kind == Value::Kind::Pointer)
      return v; // a shared-window address (shared_window_address), kept as it is
    not_modelled(at, fmt::format("the conversion to '{}'", to.getAsString()));
  }

  // Integer arithmetic at the type's width and signedness, as C++ wraps it.
  std::int64_t wrap(std::int64_t v, clang::QualType type) const {
    type = type.getCanonicalType();
    if (type->isBooleanType())
      return v != 0;
    unsigned width = context_.getIntWidth(type);
    if (width >= 64)
      return v;
    std::uint64_t bits =
        static_cast<std::uint64_t>(v) & ((std::uint64_t(1) << width) - 1);
    if (type->isUnsignedIntegerType())
      return static_cast<std::int64_t>(bits);
    std::uint64_t sign = std::uint64_t(1) << (width - 1);
    return static_cast<std::int64_t>((bits ^ sign) - sign);
  }

  // --- memory -------------------------------------------------------------

  std::vector<Place> place(const clang::Expr *e, const Mask &on) {
    e = e->IgnoreParens();
    std::vector<Place> out(on.size());
    if (const auto *ref = llvm::dyn_cast<clang::DeclRefExpr>(e)) {
      const auto *var = llvm::dyn_cast<clang::VarDecl>(ref->getDecl());
      if (!var)
        not_modelled(e, fmt::format("the name '{}'", text_of(e)));
      for (std::size_t t = 0; t < on.size(); ++t) {
        if (!on[t])
          continue;
        const Frame &frame = threads_[t].frames.back();
        if (auto alias = frame.references.find(var); alias != frame.references.end())
          out[t] = alias->second;
        else if (auto it = shared_.find(var); it != shared_.end())
          out[t] = {nullptr, it->second, 0};
        else if (auto local = threads_[t].locals.find(var);
                 local != threads_[t].locals.end())
          out[t] = {nullptr, local->second, 0};
        else if (var->getType()->isArrayType())
          not_modelled(e, fmt::format("the array '{}'", var->getNameAsString()));
        else
          out[t] = {var, -1, 0, static_cast<int>(threads_[t].frames.size()) - 1};
      }
      return out;
    }
    if (const auto *subscript = llvm::dyn_cast<clang::ArraySubscriptExpr>(e)) {
      Values base = eval(subscript->getBase(), on);
      Values index = eval(subscript->getIdx(), on);
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t]) {
          Value p = base[t];
          if (p.kind != Value::Kind::Pointer || index[t].kind != Value::Kind::Int)
            not_modelled(e, fmt::format("the access '{}' (not a buffer at a concrete "
                                        "index)",
                                        text_of(e)));
          std::int64_t stride = stride_in(buffers_[p.buffer], subscript->getType(), e);
          out[t] = {nullptr, p.buffer, p.offset + index[t].i * stride};
          check_aligned(out[t], subscript->getType(), e, static_cast<int>(t));
        }
      return out;
    }
    if (const auto *choice = llvm::dyn_cast<clang::ConditionalOperator>(e))
      return chosen_place(choice, on);
    if (const auto *member = llvm::dyn_cast<clang::MemberExpr>(e))
      return field_place(member, on);
    if (const auto *unary = llvm::dyn_cast<clang::UnaryOperator>(e);
        unary && unary->getOpcode() == clang::UO_Deref) {
      Values p = eval(unary->getSubExpr(), on);
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t]) {
          if (p[t].kind != Value::Kind::Pointer)
            not_modelled(e, fmt::format("the access '{}'", text_of(e)));
          out[t] = {nullptr, p[t].buffer, p[t].offset};
          check_aligned(out[t], e->getType(), e, static_cast<int>(t));
        }
      return out;
    }
    not_modelled(e, fmt::format("the assignment target '{}' ({})", text_of(e),
                                e->getStmtClassName()));
  }

  // float2, float4, __half2, uint4, any struct of fields of one scalar
  // type: their fields are consecutive scalars (of a buffer, or of a local
  // one).
  int vector_fields(clang::QualType type) const {
    const auto *record = type.getCanonicalType()->getAsRecordDecl();
    if (!record || is_sixteen_bit(type) || !record->getDefinition())
      return 0;
    if (const auto *cxx = llvm::dyn_cast<clang::CXXRecordDecl>(record);
        cxx && (cxx->getNumBases() > 0 || cxx->isPolymorphic()))
      return 0;
    std::optional<clang::QualType> element;
    int fields = 0;
    for (const clang::FieldDecl *field : record->fields()) {
      clang::QualType type = field->getType().getCanonicalType();
      if (!(type->isRealFloatingType() || type->isIntegerType() ||
            is_sixteen_bit(type)) ||
          field->isBitField() || (element && *element != type))
        return 0;
      element = type;
      ++fields;
    }
    return fields;
  }

  // The scalar element type a pointer's pointee is made of.
  clang::QualType scalar_of(clang::QualType type) const {
    type = type.getCanonicalType().getUnqualifiedType();
    if (vector_fields(type))
      return (*type->getAsRecordDecl()->field_begin())
          ->getType()
          .getCanonicalType()
          .getUnqualifiedType();
    return type;
  }

  std::vector<Place> field_place(const clang::MemberExpr *member, const Mask &on) {
    const auto *field = llvm::dyn_cast<clang::FieldDecl>(member->getMemberDecl());
    clang::QualType record = member->getBase()->getType();
    if (member->isArrow())
      record = record->getPointeeType();
    if (!field || !(holds_elements(record) || pointer_slots(record)))
      not_modelled(member, fmt::format("the member access '{}'", text_of(member)));
    std::int64_t field_bytes =
        context_.getASTRecordLayout(record->getAsRecordDecl()->getDefinition())
            .getFieldOffset(field->getFieldIndex()) /
        8;
    std::vector<Place> base(on.size());
    if (member->isArrow()) {
      Values p = eval(member->getBase(), on);
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t])
          base[t] = {nullptr, pointer_at(p[t], member).buffer, p[t].offset};
      if (member->isArrow())
        for (std::size_t t = 0; t < on.size(); ++t)
          if (on[t])
            check_aligned(base[t], record, member, static_cast<int>(t));
    } else {
      base = place(member->getBase(), on);
    }
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t]) {
        if (base[t].var)
          not_modelled(member, fmt::format("the member access '{}'", text_of(member)));
        if (field_bytes > 0) // a union's members, a vector's first field: at 0
          base[t].offset += cells_at(buffers_[base[t].buffer], field_bytes, member);
      }
    return base;
  }

  // An access of `type` starts at a multiple of its alignment (a vector's:
  // its size; the buffer's start is aligned); elsewhere the hardware faults,
  // a finding as an out-of-bounds access is.
  void check_aligned(const Place &p, clang::QualType type, const clang::Expr *e, int t) {
    check_alignment(p, access_alignment(context_, type),
                    fmt::format("'{}'", type.getUnqualifiedType().getAsString()), e, t);
  }

  void check_alignment(const Place &p, std::int64_t alignment, const std::string &what,
                       const clang::Expr *e, int t) {
    const Buffer &buffer = buffers_[p.buffer];
    if (!misaligned(buffer, p.offset, alignment))
      return;
    findings_.push_back(
        {KernelFinding::Kind::OutOfBounds, loc(e),
         fmt::format("misaligned access of {}[{}] ('{}') by {}: a {} needs {}-byte "
                     "alignment and element {} of the {} {} buffer starts at byte {}",
                     buffer.name, p.offset, text_of(e), thread_id(t).str(), what,
                     alignment, p.offset, space_name(buffer.space), buffer.format,
                     p.offset * buffer.element_bytes)});
    throw FindingRecorded{};
  }

  const Value &pointer_at(const Value &p, const clang::Stmt *at) const {
    if (p.kind != Value::Kind::Pointer)
      not_modelled(at, fmt::format("the access '{}'", text_of(at)));
    return p;
  }

  // Copies a value of a vector or union `type` element by element, each a
  // checked read and write of the elements it covers (float4 of floats: 4;
  // float2 of halves: 4), of one format on both sides.
  void copy_vector(const std::vector<Place> &to, const std::vector<Place> &from,
                   clang::QualType type, const Mask &on, const clang::Expr *e) {
    std::int64_t bytes = bytes_of(type);
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (!on[t])
        continue;
      if (to[t].var || from[t].var)
        not_modelled(e, fmt::format("the struct copy '{}'", text_of(e)));
      const Buffer &source = buffers_[from[t].buffer];
      adopt_format(to[t], source, bytes);
      const Buffer &target = buffers_[to[t].buffer];
      if (target.format != source.format)
        not_modelled(e, fmt::format("the copy '{}' of {} elements of {} into {} elements "
                                    "of {} (a reinterpretation)",
                                    text_of(e), source.format, source.name, target.format,
                                    target.name));
      std::int64_t n = stride_in(source, type, e);
      for (std::int64_t k = 0; k < n; ++k) {
        Value v = read_cell({nullptr, from[t].buffer, from[t].offset + k},
                            static_cast<int>(t), e);
        write_cell({nullptr, to[t].buffer, to[t].offset + k}, v, static_cast<int>(t), e);
      }
    }
  }

  // A local vector or union assigned whole from elements of another format
  // holds them (float4 v = *(float4 *)halves: eight halves).
  void adopt_format(const Place &to, const Buffer &source, std::int64_t bytes) {
    Buffer &target = buffers_[to.buffer];
    if (target.retypable && target.format != source.format && to.offset == 0 &&
        bytes == static_cast<std::int64_t>(target.cells.size()) * target.element_bytes &&
        bytes % source.element_bytes == 0)
      retype(target, source.format, source.element_bytes, bytes / source.element_bytes);
  }

  // The places of a vector struct's value: an lvalue's own (a copy), or
  // the fields of an initialiser list stored into `to`.
  void assign_vector(const std::vector<Place> &to, const clang::Expr *from,
                     clang::QualType type, const Mask &on) {
    from = from->IgnoreImplicit();
    if (const auto *list = llvm::dyn_cast<clang::InitListExpr>(from)) {
      int fields = vector_fields(type);
      if (static_cast<int>(list->getNumInits()) != fields)
        not_modelled(from, fmt::format("the initialiser '{}'", text_of(from)));
      for (int k = 0; k < fields; ++k) {
        std::vector<Place> field = to;
        for (std::size_t t = 0; t < on.size(); ++t)
          field[t].offset += k;
        store(field, eval(list->getInit(k), on), on, from, scalar_of(type));
      }
      return;
    }
    if (const auto *construct = llvm::dyn_cast<clang::CXXConstructExpr>(from);
        construct && construct->getNumArgs() == 1 &&
        construct->getConstructor()->isCopyOrMoveConstructor())
      from = construct->getArg(0)->IgnoreImplicit();
    if (!from->isGLValue())
      not_modelled(from, fmt::format("the struct value '{}'", text_of(from)));
    copy_vector(to, place(from, on), type, on, from);
  }

  void initialise_vector(const clang::VarDecl *var, const Mask &on) {
    if (const auto *construct = llvm::dyn_cast<clang::CXXConstructExpr>(var->getInit());
        construct && construct->getNumArgs() == 0 &&
        construct->getConstructor()->isTrivial())
      return; // float4 r;: its fields stay unassigned
    std::vector<Place> to(on.size());
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t])
        to[t] = {nullptr, threads_[t].locals.at(var), 0};
    assign_vector(to, var->getInit(), var->getType(), on);
  }

  // `c ? a : b` as an lvalue, on a concrete c.
  std::vector<Place> chosen_place(const clang::ConditionalOperator *choice,
                                  const Mask &on) {
    Values cond = eval(choice->getCond(), on);
    Mask yes(on.size()), no(on.size());
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t])
        (truth(cond[t], choice->getCond()) ? yes : no)[t] = 1;
    std::vector<Place> out(on.size());
    auto a = any(yes) ? place(choice->getTrueExpr(), yes) : out;
    auto b = any(no) ? place(choice->getFalseExpr(), no) : out;
    for (std::size_t t = 0; t < on.size(); ++t)
      out[t] = yes[t] ? a[t] : b[t];
    return out;
  }

  // The value of an expression C++ may give as an lvalue (an arm of ?:, a
  // 16-bit struct's copy): an assignment's value, else what its place holds.
  Values value(const clang::Expr *e, const Mask &on) {
    const clang::Expr *bare = e->IgnoreParens();
    if (const auto *temporary = llvm::dyn_cast<clang::MaterializeTemporaryExpr>(bare))
      return eval(temporary->getSubExpr(), on); // a const T & bound to a temporary
    bool assigns =
        llvm::isa<clang::BinaryOperator>(bare)
            ? llvm::cast<clang::BinaryOperator>(bare)->isAssignmentOp()
            : llvm::isa<clang::UnaryOperator>(bare) &&
                  llvm::cast<clang::UnaryOperator>(bare)->isPrefix() &&
                  llvm::cast<clang::UnaryOperator>(bare)->isIncrementDecrementOp();
    return e->isGLValue() && !assigns && !llvm::isa<clang::ConditionalOperator>(bare)
               ? load(e, on)
               : eval(e, on);
  }

  Values load(const clang::Expr *e, const Mask &on) {
    if (auto index = group_dim3_member(e, on)) // block.group_index().x
      return *index;
    if (const auto *choice =
            llvm::dyn_cast<clang::ConditionalOperator>(e->IgnoreParens()))
      return eval_conditional(choice, on); // its arms' values, chosen

    return load_places(place(e, on), on, e);
  }

  // The values at `places` of the type `e` reads (or `type`).
  Values load_places(const std::vector<Place> &places, const Mask &on,
                     const clang::Expr *e, std::optional<clang::QualType> type = {}) {
    Values out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (!on[t])
        continue;
      const Place &p = places[t];
      if (p.var)
        out[t] = read_register(static_cast<int>(t), p.var, e, p.frame);
      else
        out[t] = read_memory(p, type.value_or(e->getType()), static_cast<int>(t), e);
    }
    return out;
  }

  Value read_cell(const Place &p, int t, const clang::Expr *e) {
    Buffer &buffer = access(p, t, false, e);
    Value v = buffer.cells[p.offset];
    if (v.kind == Value::Kind::Undef) {
      // Memory no thread wrote: its value is whatever was there.
      findings_.push_back(
          {KernelFinding::Kind::UninitialisedRead, loc(e),
           fmt::format("read of uninitialised {} memory {}[{}] ('{}') by {}: no "
                       "thread of the block wrote it before",
                       space_name(buffer.space), buffer.name, p.offset, text_of(e),
                       thread_id(t).str())});
      throw FindingRecorded{};
    }
    return v;
  }

  void write_cell(const Place &p, const Value &v, int t, const clang::Expr *e) {
    ++writes_;
    Buffer &buffer = access(p, t, true, e);
    buffer.cells[p.offset] = v;
    buffer.writes[p.offset] = ElementWrite{loc(e), thread_id(t)};
  }

  Value read_register(int t, const clang::VarDecl *var, const clang::Expr *e,
                      int frame = -1) {
    auto &frames = threads_[t].frames;
    auto &registers = (frame < 0 ? frames.back() : frames[frame]).registers;
    auto it = registers.find(var);
    if (it != registers.end() && it->second.kind != Value::Kind::Undef)
      return it->second;
    if (var->hasGlobalStorage() && var->getType().isConstQualified() && var->hasInit()) {
      Mask one(threads_.size());
      one[t] = 1;
      return eval(var->getInit(), one)[t]; // a constant of the file
    }
    not_modelled(e, fmt::format("reading '{}', which holds no defined value (never "
                                "assigned, or an undefined shuffle result), by {}",
                                var->getNameAsString(), thread_id(t).str()));
  }

  // Stores `values` at `places`; `type`, the static type written, when a
  // view may cover other elements than one of the buffer's.
  void store(const std::vector<Place> &places, const Values &values, const Mask &on,
             const clang::Expr *e, std::optional<clang::QualType> type = {}) {
    ++writes_;
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (!on[t])
        continue;
      const Place &p = places[t];
      Thread &thread = threads_[t];
      if (p.var) {
        Value &reg = (p.frame < 0 ? thread.frames.back() : thread.frames[p.frame])
                         .registers[p.var];
        reg = guarded(thread, p.var, reg, values[t], e);
        continue;
      }
      if (!thread.guards.empty())
        not_modelled(e, "a memory write under a data-dependent condition");
      if (values[t].kind == Value::Kind::Undef)
        not_modelled(e, fmt::format("writing an undefined value ('{}', by {})",
                                    text_of(e), thread_id(static_cast<int>(t)).str()));
      write_memory(p, type, values[t], static_cast<int>(t), e);
    }
  }

  // --- inline PTX (ptx.h) ----------------------------------------------------

  // The loads and stores ptx.h models, through the operands' places (the
  // outputs) and values (the inputs); anything else is not modelled.
  void exec_asm(const clang::GCCAsmStmt *assembly, const Mask &on) {
    std::string why;
    auto program = parse_ptx(assembly->getAsmString()->getString(), why);
    if (!program)
      not_modelled(assembly, fmt::format("the inline assembly {}", why));
    Asm operands{assembly, {}, {}};
    for (unsigned k = 0; k < assembly->getNumOutputs(); ++k)
      operands.outputs.push_back(place(assembly->getOutputExpr(k), on));
    for (unsigned k = 0; k < assembly->getNumInputs(); ++k)
      operands.inputs.push_back(eval(assembly->getInputExpr(k), on));
    Mask predicate = on;
    for (const PtxInstruction &instruction : *program) {
      Mask taken = instruction.predicated ? predicate : on;
      switch (instruction.op) {
      case PtxInstruction::Op::SetPredicate:
        for (std::size_t t = 0; t < on.size(); ++t)
          if (on[t])
            predicate[t] = truth(operands.input(instruction.tested)[t],
                                 operands.expr(instruction.tested));
        break;
      case PtxInstruction::Op::Zero:
        store(operands.output(instruction.values[0]), fill(on, Value::integer(0)), on,
              operands.expr(instruction.values[0]),
              operands.expr(instruction.values[0])->getType());
        break;
      case PtxInstruction::Op::Load:
      case PtxInstruction::Op::Store:
        ptx_memory(operands, instruction, taken);
        break;
      }
    }
  }

  // An asm statement's operands: %k is output k, or input k - outputs.
  struct Asm {
    const clang::GCCAsmStmt *statement;
    std::vector<std::vector<Place>> outputs;
    std::vector<Values> inputs;

    const clang::Expr *expr(int k) const {
      auto outs = static_cast<int>(outputs.size());
      return k < outs ? statement->getOutputExpr(k) : statement->getInputExpr(k - outs);
    }
    bool is_input(int k) const {
      return k >= static_cast<int>(outputs.size()) &&
             k < static_cast<int>(outputs.size() + inputs.size());
    }
    const Values &input(int k) const { return inputs.at(k - outputs.size()); }
    const std::vector<Place> &output(int k) const { return outputs.at(k); }
  };

  // ld / st of 1, 2 or 4 words at the address operand.
  void ptx_memory(const Asm &operands, const PtxInstruction &instruction,
                  const Mask &on) {
    bool load = instruction.op == PtxInstruction::Op::Load;
    auto words = static_cast<int>(instruction.values.size());
    bool fits = operands.is_input(instruction.address);
    for (int v : instruction.values)
      fits = fits && (load ? v >= 0 && v < static_cast<int>(operands.outputs.size())
                           : operands.is_input(v));
    if (!fits)
      not_modelled(operands.statement, "inline assembly whose operands are not the "
                                       "outputs and inputs it names");
    clang::QualType word = instruction.bytes == 2   ? context_.UnsignedShortTy
                           : instruction.bytes == 4 ? context_.UnsignedIntTy
                                                    : context_.UnsignedLongLongTy;
    const clang::Expr *address = operands.expr(instruction.address);
    for (int k = 0; k < words; ++k) {
      Values values(on.size());
      for (std::size_t t = 0; t < on.size(); ++t) {
        if (!on[t])
          continue;
        if (!threads_[t].guards.empty())
          not_modelled(operands.statement, "inline assembly under a data-dependent "
                                           "condition");
        const Value &p = pointer_at(operands.input(instruction.address)[t], address);
        Place at{nullptr, p.buffer, p.offset};
        if (k == 0)
          check_alignment(at, std::int64_t(words) * instruction.bytes,
                          fmt::format("{}-byte PTX access", words * instruction.bytes),
                          address, static_cast<int>(t));
        if (k > 0)
          at.offset += cells_at(buffers_[p.buffer], k * instruction.bytes, address);
        if (load)
          values[t] = read_memory(at, word, static_cast<int>(t), address);
        else
          write_memory(at, word, operands.input(instruction.values[k])[t],
                       static_cast<int>(t), address);
      }
      if (load) {
        const clang::Expr *target = operands.expr(instruction.values[k]);
        store(operands.output(instruction.values[k]), values, on, target,
              target->getType());
      }
    }
  }

  // --- views: memory read and written through another scalar type ---------

  // Whether values of `type` live in memory as elements: a vector struct
  // (float4, uint4, __half2) or a union of such, arrays and scalars.
  bool holds_elements(clang::QualType type) const {
    return vector_fields(type) || is_union(type);
  }

  bool is_union(clang::QualType type) const {
    const auto *record = type.getCanonicalType()->getAsRecordDecl();
    if (!record || !record->isUnion() || !record->getDefinition() ||
        record->field_empty())
      return false;
    for (const clang::FieldDecl *field : record->fields()) {
      clang::QualType member = element_of(field->getType());
      if (field->isBitField() || !scalar_format(context_, member))
        return false;
    }
    return true;
  }

  // The scalar type `type`'s values are made of: an array's elements', a
  // vector's fields', a union's first member's.
  clang::QualType element_of(clang::QualType type) const {
    type = type.getCanonicalType().getUnqualifiedType();
    if (const auto *array = context_.getAsArrayType(type))
      return element_of(array->getElementType());
    if (vector_fields(type))
      return scalar_of(type);
    const auto *record = type->getAsRecordDecl();
    if (record && record->isUnion() && record->getDefinition() && !record->field_empty())
      return element_of(record->field_begin()->getType());
    return type;
  }

  // Gives `buffer` the format of the elements of `type`.
  void set_format(Buffer &buffer, clang::QualType type,
                  const ir::SourceLoc &where) const {
    clang::QualType element = element_of(type);
    auto format = scalar_format(context_, element);
    if (!format || bytes_of(element) == 0)
      throw NotModelled{where, fmt::format("memory of '{}' at {} is not modelled",
                                           type.getAsString(), where.str())};
    buffer.format = *format;
    buffer.element_bytes = static_cast<int>(bytes_of(element));
  }

  std::int64_t bytes_of(clang::QualType type) const {
    type = type.getCanonicalType();
    if (type->isIncompleteType() || type->isVoidType())
      return 0;
    return context_.getTypeSizeInChars(type).getQuantity();
  }

  // How many elements of `buffer` `bytes` bytes are; part of one is not
  // modelled (a view narrower than the elements).
  std::int64_t cells_at(const Buffer &buffer, std::int64_t bytes,
                        const clang::Expr *e) const {
    if (auto n = cells_covered(buffer, bytes))
      return *n;
    not_modelled(e, fmt::format("'{}' (a view of {} bytes of the {}-byte {} elements of "
                                "{}, part of an element)",
                                text_of(e), bytes, buffer.element_bytes, buffer.format,
                                buffer.name));
  }

  // How many elements of `buffer` a value of `type` covers (a pointer to it
  // steps over).
  std::int64_t stride_in(const Buffer &buffer, clang::QualType type,
                         const clang::Expr *e) const {
    if (buffer.format.empty())
      return scalars_in(type, loc(e));
    return cells_at(buffer, bytes_of(type), e);
  }

  // The elements an access of `type` at `p` covers as a view (float2 over
  // halves: 4), or 0 when it is one element of the buffer's own format.
  std::int64_t view_cells(const Buffer &buffer, clang::QualType type,
                          const clang::Expr *e) const {
    auto format = scalar_format(context_, type);
    if (buffer.format.empty() || (format && *format == buffer.format))
      return 0;
    return cells_at(buffer, bytes_of(type), e);
  }

  // One element, or the elements a view of another type covers, as bits.
  Value read_memory(const Place &p, clang::QualType type, int t, const clang::Expr *e) {
    std::int64_t n = view_cells(buffers_[p.buffer], type, e);
    if (n == 0)
      return read_cell(p, t, e);
    Bits bits{
        buffers_[p.buffer].format, type.getUnqualifiedType().getAsString(), loc(e), {}};
    for (std::int64_t k = 0; k < n; ++k)
      bits.elements.push_back(read_cell({nullptr, p.buffer, p.offset + k}, t, e));
    return Value::packed(std::move(bits));
  }

  // A value written at `p`: one element; through a view, the bits of
  // elements of the buffer's format read through a view, or zero bits.
  void write_memory(const Place &p, std::optional<clang::QualType> type, const Value &v,
                    int t, const clang::Expr *e) {
    const Buffer &buffer = buffers_[p.buffer];
    std::int64_t n = type ? view_cells(buffer, *type, e) : 0;
    if (v.kind == Value::Kind::Bits) {
      const Bits &bits = *v.bits;
      std::int64_t cells = std::max<std::int64_t>(n, 1);
      if (bits.format != buffer.format ||
          static_cast<std::int64_t>(bits.elements.size()) != cells)
        not_modelled(e, fmt::format("writing {} into {} {} element{} of {} (a "
                                    "reinterpretation)",
                                    describe(bits), cells, buffer.format,
                                    cells == 1 ? "" : "s", buffer.name));
      for (std::int64_t k = 0; k < cells; ++k)
        write_cell({nullptr, p.buffer, p.offset + k}, bits.elements[k], t, e);
      return;
    }
    if (n == 0)
      return write_cell(p, v, t, e);
    if (v.kind != Value::Kind::Int || v.i != 0)
      not_modelled(e, fmt::format("writing '{}' through a view of the {} elements of {} "
                                  "(only bits read from {} elements, or zero, are)",
                                  text_of(e), buffer.format, buffer.name, buffer.format));
    Value zero = buffer.format.find("float") != std::string::npos
                     ? Value::real(store_.constant(0))
                     : Value::integer(0);
    for (std::int64_t k = 0; k < n; ++k) // all bits zero: each element 0
      write_cell({nullptr, p.buffer, p.offset + k}, zero, t, e);
  }

  // A value read through a view is only copied: anything else on it
  // (arithmetic on the reinterpreted bits) is not modelled.
  void require_elements(const Value &v, const clang::Stmt *at) const {
    if (v.kind == Value::Kind::Bits)
      not_modelled(at, fmt::format("'{}' on {} (arithmetic on reinterpreted bits)",
                                   text_of(at), describe(*v.bits)));
  }

  // A register write under data-dependent branches: ite(condition, new,
  // old) for each. A register with no value before the branch holds an
  // opaque "undefined" on the side that does not assign it: that blocks a
  // proof, unless the other side assigns it too (see choose).
  Value guarded(const Thread &thread, const clang::VarDecl *var, const Value &old,
                Value v, const clang::Expr *e) {
    if (thread.guards.empty())
      return v;
    if (v.kind != Value::Kind::Float ||
        (old.kind != Value::Kind::Float && old.kind != Value::Kind::Undef))
      not_modelled(e, "a non-floating-point assignment under a data-dependent condition");
    TermId before = old.kind == Value::Kind::Float
                        ? old.term
                        : store_.var(fmt::format("undefined {}", var->getNameAsString()),
                                     terms::VarKind::Opaque, loc(e).str());
    TermId merged = v.term;
    for (auto it = thread.guards.rbegin(); it != thread.guards.rend(); ++it)
      merged = it->second ? choose(it->first, merged, before)
                          : choose(it->first, before, merged);
    return Value::real(merged);
  }

  // ite(c, a, b), where a choice on the same c inside a or b is decided
  // already: the two sides of one branch merge into one choice.
  TermId choose(TermId c, TermId a, TermId b) {
    auto side = [&](TermId t, bool then) {
      const terms::Node &n = store_.node(t);
      return n.op == terms::Op::Ite && n.args[0] == c ? n.args[then ? 1 : 2] : t;
    };
    return store_.ite(c, side(a, true), side(b, false));
  }

  // Bounds and conflicts of one access of thread `t`; the buffer accessed.
  Buffer &access(const Place &p, int t, bool write, const clang::Expr *e,
                 bool atomic = false) {
    Buffer &buffer = buffers_[p.buffer];
    std::int64_t n = static_cast<std::int64_t>(buffer.cells.size());
    if (p.offset < 0 || p.offset >= n) {
      findings_.push_back(
          {KernelFinding::Kind::OutOfBounds, loc(e),
           fmt::format("out-of-bounds {} of {}[{}] ('{}') by {}: the {} buffer has {} "
                       "element{}",
                       write ? "write" : "read", buffer.name, p.offset, text_of(e),
                       thread_id(t).str(), space_name(buffer.space), n,
                       n == 1 ? "" : "s")});
      throw FindingRecorded{};
    }
    if (buffer.space != Space::Local)
      check_conflict(buffer, p.offset, t, write, atomic, e);
    return buffer;
  }

  static std::string_view space_name(Space space) {
    return space == Space::Global   ? "global"
           : space == Space::Shared ? "shared"
                                    : "local";
  }

  // A race of this access with an earlier one is a finding.
  void check_conflict(Buffer &buffer, std::int64_t i, int t, bool write, bool atomic,
                      const clang::Expr *e) {
    auto [unit, unit_phase] = syncs_.unit(t);
    Access now{block_serial_, t, phase_, unit, unit_phase, atomic, loc(e), thread_id(t)};
    if (auto race = recorded_access(buffer, i, now, write, e))
      report_race(buffer, i, now, write, race->other, race->other_write);
  }

  [[noreturn]] void report_race(const Buffer &buffer, std::int64_t i, const Access &now,
                                bool write, const Access &other, bool other_write) {
    if (other.id.rank != now.id.rank)
      report_cross_rank_race(buffer, i, now, write, other, other_write);
    std::string who = other.id.str();
    findings_.push_back(
        {KernelFinding::Kind::SharedMemoryRace, now.loc,
         fmt::format("{} race on {}[{}]: {} {} it here and {} {} it at {} {}",
                     buffer.space == Space::Shared ? "shared-memory" : "global-memory",
                     buffer.name, i, now.id.str(), write ? "writes" : "reads", who,
                     other_write ? "writes" : "reads", other.loc.str(),
                     other.block == now.block
                         ? "with no barrier between"
                         : "(the blocks of a launch are not ordered)"),
         other.loc,
         fmt::format("{} {} {}[{}] here", who, other_write ? "writes" : "reads",
                     buffer.name, i)});
    throw FindingRecorded{};
  }

  // --- operators ----------------------------------------------------------

  Values eval_unary(const clang::UnaryOperator *op, const Mask &on) {
    const clang::Expr *sub = op->getSubExpr();
    switch (op->getOpcode()) {
    case clang::UO_PreInc:
    case clang::UO_PreDec:
    case clang::UO_PostInc:
    case clang::UO_PostDec: {
      auto places = place(sub, on);
      Values old = load(sub, on), now(on.size());
      int delta = op->isIncrementOp() ? 1 : -1;
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t])
          now[t] = arithmetic(clang::BO_Add, old[t], Value::integer(delta),
                              sub->getType(), op);
      store(places, now, on, op, sub->getType());
      return op->isPrefix() ? now : old;
    }
    case clang::UO_Deref:
      return load(op, on);
    case clang::UO_AddrOf: {
      auto places = place(sub, on);
      Values out(on.size());
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t]) {
          if (places[t].var)
            places[t] = to_memory(static_cast<int>(t), places[t], op);
          out[t] = Value::pointer(places[t].buffer, places[t].offset);
        }
      return out;
    }
    case clang::UO_Plus:
      return eval(sub, on);
    case clang::UO_Minus: {
      Values v = eval(sub, on);
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t]) {
          require_elements(v[t], op);
          v[t] = v[t].kind == Value::Kind::Float
                     ? Value::real(store_.neg(v[t].term))
                     : Value::integer(wrap(-v[t].i, op->getType()));
        }
      return v;
    }
    case clang::UO_Not: {
      Values v = eval(sub, on);
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t])
          v[t] = Value::integer(wrap(~integer(v[t], op), op->getType()));
      return v;
    }
    case clang::UO_LNot: {
      Values v = eval(sub, on);
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t]) {
          if (v[t].kind == Value::Kind::SymBool)
            v[t].negated = !v[t].negated;
          else
            v[t] = Value::integer(!truth(v[t], sub));
        }
      return v;
    }
    default:
      not_modelled(op, fmt::format("the operator in '{}'", text_of(op)));
    }
  }

  std::int64_t integer(const Value &v, const clang::Stmt *at) const {
    require_elements(v, at);
    if (v.kind != Value::Kind::Int)
      not_modelled(
          at, fmt::format("'{}' on a value that is not a concrete integer", text_of(at)));
    return v.i;
  }

  Values eval_binary(const clang::BinaryOperator *op, const Mask &on) {
    clang::BinaryOperatorKind kind = op->getOpcode();
    if (kind == clang::BO_Comma) {
      eval(op->getLHS(), on);
      return eval(op->getRHS(), on);
    }
    if (kind == clang::BO_LAnd || kind == clang::BO_LOr)
      return eval_logical(op, on);
    if (op->isAssignmentOp()) {
      auto places = place(op->getLHS(), on);
      Values value = eval(op->getRHS(), on);
      if (op->isCompoundAssignmentOp()) {
        const auto *compound = llvm::cast<clang::CompoundAssignOperator>(op);
        Values old = load(op->getLHS(), on);
        for (std::size_t t = 0; t < on.size(); ++t)
          if (on[t]) {
            clang::QualType computation = compound->getComputationResultType();
            Value lhs = convert(old[t], op->getLHS()->getType(),
                                compound->getComputationLHSType(), op);
            Value rhs = computation->isPointerType() // p += n: n stays an integer
                            ? value[t]
                            : convert(value[t], op->getRHS()->getType(), computation, op);
            Value result =
                arithmetic(clang::BinaryOperator::getOpForCompoundAssignment(kind), lhs,
                           rhs, computation, op);
            value[t] = convert(result, computation, op->getLHS()->getType(), op);
          }
      }
      store(places, value, on, op, op->getLHS()->getType());
      return value;
    }
    Values lhs = eval(op->getLHS(), on), rhs = eval(op->getRHS(), on);
    Values out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t])
        out[t] = op->isComparisonOp()
                     ? compare(kind, lhs[t], rhs[t], op,
                               op->getLHS()->getType()->isUnsignedIntegerType())
                     : arithmetic(kind, lhs[t], rhs[t], op->getType(), op);
    return out;
  }

  Values eval_logical(const clang::BinaryOperator *op, const Mask &on) {
    bool is_and = op->getOpcode() == clang::BO_LAnd;
    Values lhs = eval(op->getLHS(), on);
    Mask rest(on.size());
    Values out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t]) {
        bool l = truth(lhs[t], op->getLHS());
        if (l == is_and)
          rest[t] = 1;
        else
          out[t] = Value::integer(l);
      }
    if (any(rest)) {
      Values rhs = eval(op->getRHS(), rest);
      for (std::size_t t = 0; t < on.size(); ++t)
        if (rest[t])
          out[t] = Value::integer(truth(rhs[t], op->getRHS()));
    }
    return out;
  }

  template <class T> static Value compare_as(clang::BinaryOperatorKind kind, T x, T y) {
    switch (kind) {
    case clang::BO_LT:
      return Value::integer(x < y);
    case clang::BO_GT:
      return Value::integer(x > y);
    case clang::BO_LE:
      return Value::integer(x <= y);
    case clang::BO_GE:
      return Value::integer(x >= y);
    case clang::BO_EQ:
      return Value::integer(x == y);
    default:
      return Value::integer(x != y);
    }
  }

  // `is_unsigned`: the operands' (common) type is unsigned.
  Value compare(clang::BinaryOperatorKind kind, const Value &a, const Value &b,
                const clang::Stmt *at, bool is_unsigned = false) {
    require_defined(a, b, at);
    if (a.kind == Value::Kind::Int && b.kind == Value::Kind::Int)
      return is_unsigned ? compare_as<std::uint64_t>(kind, a.i, b.i)
                         : compare_as<std::int64_t>(kind, a.i, b.i);
    if (a.kind == Value::Kind::Pointer && b.kind == Value::Kind::Pointer &&
        a.buffer == b.buffer)
      return compare(kind, Value::integer(a.offset), Value::integer(b.offset), at);
    // A buffer is never null (p != NULL, p == nullptr).
    if ((kind == clang::BO_EQ || kind == clang::BO_NE) &&
        ((a.kind == Value::Kind::Pointer && b.kind == Value::Kind::Int && b.i == 0) ||
         (b.kind == Value::Kind::Pointer && a.kind == Value::Kind::Int && a.i == 0)))
      return Value::integer(kind == clang::BO_NE);
    if (a.kind != Value::Kind::Float || b.kind != Value::Kind::Float)
      not_modelled(at, fmt::format("the comparison '{}'", text_of(at)));
    if (store_.is_const(a.term) && store_.is_const(b.term))
      return compare(
          kind,
          Value::integer(cmp(store_.const_value(a.term), store_.const_value(b.term))),
          Value::integer(0), at);
    Value out{Value::Kind::SymBool};
    switch (kind) {
    case clang::BO_LT:
      out.term = store_.lt(a.term, b.term);
      break;
    case clang::BO_GT:
      out.term = store_.lt(b.term, a.term);
      break;
    case clang::BO_LE:
      out.term = store_.le(a.term, b.term);
      break;
    case clang::BO_GE:
      out.term = store_.le(b.term, a.term);
      break;
    default: // a == b as max(a, b) <= min(a, b); != is its negation
      out.term = store_.le(store_.max(a.term, b.term), store_.min(a.term, b.term));
      out.negated = kind == clang::BO_NE;
      if (store_.is_const(out.term))
        return Value::integer((store_.const_value(out.term) != 0) != out.negated);
      return out;
    }
    if (store_.is_const(out.term)) // decided by the extended reals' rules
      return Value::integer(store_.const_value(out.term) != 0);
    return out;
  }

  // An undefined operand (a shuffle from a lane that does not take part):
  // what follows from it is not modelled.
  void require_defined(const Value &a, const Value &b, const clang::Stmt *at) const {
    require_elements(a, at);
    require_elements(b, at);
    if (a.kind == Value::Kind::Undef || b.kind == Value::Kind::Undef)
      not_modelled(at, fmt::format("'{}' on an undefined value (a shuffle from a lane "
                                   "that does not take part)",
                                   text_of(at)));
  }

  Value arithmetic(clang::BinaryOperatorKind kind, const Value &a, const Value &b,
                   clang::QualType type, const clang::Stmt *at) {
    require_defined(a, b, at);
    if (a.kind == Value::Kind::Pointer || b.kind == Value::Kind::Pointer)
      return pointer_arithmetic(kind, a, b, at);
    if (a.kind == Value::Kind::Float && b.kind == Value::Kind::Float) {
      switch (kind) {
      case clang::BO_Add:
        return Value::real(store_.add(a.term, b.term));
      case clang::BO_Sub:
        return Value::real(store_.sub(a.term, b.term));
      case clang::BO_Mul:
        return Value::real(store_.mul(a.term, b.term));
      case clang::BO_Div:
        return Value::real(store_.div(a.term, b.term));
      default:
        break;
      }
      not_modelled(at, fmt::format("the floating-point operation '{}'", text_of(at)));
    }
    std::int64_t x = integer(a, at), y = integer(b, at), r = 0;
    bool is_unsigned = type->isUnsignedIntegerType();
    if ((kind == clang::BO_Shl || kind == clang::BO_Shr) && (y < 0 || y >= 64))
      not_modelled(at, fmt::format("a shift by {} in '{}'", y, text_of(at)));
    auto divisor = [&] {
      if (y == 0 || (y == -1 && !is_unsigned && x == INT64_MIN))
        not_modelled(at, fmt::format("an integer division by zero or overflowing in '{}'",
                                     text_of(at)));
      return y;
    };
    switch (kind) {
    case clang::BO_Add: // as unsigned: wraps without undefined behaviour
      r = static_cast<std::int64_t>(static_cast<std::uint64_t>(x) +
                                    static_cast<std::uint64_t>(y));
      break;
    case clang::BO_Sub:
      r = static_cast<std::int64_t>(static_cast<std::uint64_t>(x) -
                                    static_cast<std::uint64_t>(y));
      break;
    case clang::BO_Mul:
      r = static_cast<std::int64_t>(static_cast<std::uint64_t>(x) *
                                    static_cast<std::uint64_t>(y));
      break;
    case clang::BO_Div:
      r = is_unsigned ? static_cast<std::int64_t>(static_cast<std::uint64_t>(x) /
                                                  static_cast<std::uint64_t>(divisor()))
                      : x / divisor();
      break;
    case clang::BO_Rem:
      r = is_unsigned ? static_cast<std::int64_t>(static_cast<std::uint64_t>(x) %
                                                  static_cast<std::uint64_t>(divisor()))
                      : x % divisor();
      break;
    case clang::BO_Shl:
      r = static_cast<std::int64_t>(static_cast<std::uint64_t>(x) << y);
      break;
    case clang::BO_Shr:
      r = is_unsigned ? static_cast<std::int64_t>(static_cast<std::uint64_t>(x) >> y)
                      : x >> y;
      break;
    case clang::BO_And:
      r = x & y;
      break;
    case clang::BO_Or:
      r = x | y;
      break;
    case clang::BO_Xor:
      r = x ^ y;
      break;
    default:
      not_modelled(at, fmt::format("the operation '{}'", text_of(at)));
    }
    return Value::integer(wrap(r, type));
  }

  Value pointer_arithmetic(clang::BinaryOperatorKind kind, const Value &a, const Value &b,
                           const clang::Stmt *at) {
    const auto *op = llvm::dyn_cast<clang::BinaryOperator>(at);
    auto stride = [&](const clang::Expr *pointer, const Value &p) {
      return stride_in(buffers_[p.buffer], pointer->getType()->getPointeeType(), pointer);
    };
    if (op && kind == clang::BO_Add && a.kind == Value::Kind::Pointer &&
        b.kind == Value::Kind::Int)
      return Value::pointer(a.buffer, a.offset + b.i * stride(op->getLHS(), a));
    if (op && kind == clang::BO_Add && b.kind == Value::Kind::Pointer &&
        a.kind == Value::Kind::Int)
      return Value::pointer(b.buffer, b.offset + a.i * stride(op->getRHS(), b));
    if (op && kind == clang::BO_Sub && a.kind == Value::Kind::Pointer &&
        b.kind == Value::Kind::Int)
      return Value::pointer(a.buffer, a.offset - b.i * stride(op->getLHS(), a));
    not_modelled(at, fmt::format("the pointer arithmetic '{}'", text_of(at)));
  }

  static int cmp(const mpq_class &a, const mpq_class &b) {
    return a < b ? -1 : (a > b ? 1 : 0);
  }

  Values eval_conditional(const clang::ConditionalOperator *op, const Mask &on) {
    Values cond = eval(op->getCond(), on);
    Mask yes(on.size()), no(on.size()), symbolic(on.size());
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t]) {
        if (cond[t].kind == Value::Kind::SymBool)
          symbolic[t] = 1;
        else
          (truth(cond[t], op->getCond()) ? yes : no)[t] = 1;
      }
    // A data-dependent choice evaluates both arms, each under its side of
    // the condition: what they assign merges, what they store is refused.
    auto arm = [&](const clang::Expr *e, const Mask &taken, bool side) {
      Mask both = taken;
      for (std::size_t t = 0; t < on.size(); ++t)
        if (symbolic[t]) {
          both[t] = 1;
          threads_[t].guards.emplace_back(cond[t].term, side != cond[t].negated);
        }
      Values v = any(both) ? value(e, both) : Values(on.size());
      for (std::size_t t = 0; t < on.size(); ++t)
        if (symbolic[t])
          threads_[t].guards.pop_back();
      return v;
    };
    Values a = arm(op->getTrueExpr(), yes, true);
    Values b = arm(op->getFalseExpr(), no, false);
    Values out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (yes[t])
        out[t] = a[t];
      else if (no[t])
        out[t] = b[t];
      else if (symbolic[t]) {
        if (a[t].kind != Value::Kind::Float || b[t].kind != Value::Kind::Float)
          not_modelled(op, "a data-dependent choice between values that are not reals");
        out[t] =
            Value::real(cond[t].negated ? select(cond[t].term, b[t].term, a[t].term)
                                        : select(cond[t].term, a[t].term, b[t].term));
      }
    }
    return out;
  }

  // c ? a : b; the maximum or minimum of the two values compared, as such
  // (x < y ? y : x is max(x, y) for every x and y).
  TermId select(TermId c, TermId a, TermId b) {
    const terms::Node &n = store_.node(c);
    if (n.op == terms::Op::Lt || n.op == terms::Op::Le) {
      TermId x = n.args[0], y = n.args[1];
      if (a == y && b == x)
        return store_.max(x, y);
      if (a == x && b == y)
        return store_.min(x, y);
    }
    return store_.ite(c, a, b);
  }

  // --- calls --------------------------------------------------------------

  Values eval_call(const clang::CallExpr *call, const Mask &on) {
    const clang::FunctionDecl *callee = call->getDirectCallee();
    if (callee && in_cooperative_groups(callee)) // before the toolkit's bodies
      return group_call_value(call, *callee, on);
    if (const auto *functor = stateless_functor(call))
      return inline_call(call, *functor, on,
                         llvm::isa<clang::CXXOperatorCallExpr>(call) ? 1 : 0);
    if (const auto *op = llvm::dyn_cast<clang::CXXOperatorCallExpr>(call);
        op && is_c10_operator(*op))
      return c10_operator(op, on);
    if (!callee || llvm::isa<clang::CXXMemberCallExpr>(call) ||
        llvm::isa<clang::CXXOperatorCallExpr>(call))
      not_modelled(call, fmt::format("the call '{}'", text_of(call)));
    std::string name = callee->getNameAsString();
    if (name == "__syncthreads") {
      barrier(call, on);
      return Values(on.size());
    }
    if (name == "__syncwarp") {
      lane_barrier(call, on, kWarpSize, "__syncwarp()");
      return Values(on.size());
    }
    if (name == "__threadfence" || name == "__threadfence_system")
      fence(on, name == "__threadfence_system");
    if (name == "__threadfence" || name == "__threadfence_block" ||
        name == "__threadfence_system")
      return Values(on.size()); // lockstep threads already see each other's writes
    if (name == "__builtin_inff" || name == "__builtin_inf" ||
        name == "__builtin_huge_valf")
      return fill(on, Value::real(store_.extended(terms::Extended::PosInf))); // INFINITY
    if (auto kind = shuffle_kind(name))
      return shuffle(call, name, *kind, on);
    if (auto kind = aten_shuffle_kind(name))
      return aten_shuffle(call, name, *kind, on);
    if (name == "atomicAdd")
      return atomic_add(call, on);
    if (name == "sincosf" || name == "__sincosf" || name == "sincos")
      return sincos(call, on);
    if (name == "__cvta_generic_to_shared")
      return shared_window_address(call, on);
    if (auto fn = intrinsic(name, call))
      return apply(call, *fn, on);
    const clang::FunctionDecl *body = callee->getDefinition();
    if (!body || !body->hasBody() || callee->getBuiltinID() != 0)
      not_modelled(call, fmt::format("the function '{}'", name));
    // A header's body is a stand-in (ours) or inline assembly (the
    // toolkit's): only the names intercepted above have a meaning here.
    if (sources_.isInSystemHeader(body->getLocation())) {
      if (auto constant = folded_real(call)) // std::numeric_limits<float>::infinity()
        return fill(on, Value::real(*constant));
      not_modelled(call, fmt::format("the toolkit function '{}'", name));
    }
    return inline_call(call, *body, on);
  }

  // PyTorch's operators of c10::Half and c10::BFloat16 (c10/util/Half-inl.h;
  // the stand-in headers declare them alike): computed in float, as every
  // 16-bit value is a real here.
  bool is_c10_operator(const clang::CXXOperatorCallExpr &op) const {
    const auto *callee = op.getDirectCallee();
    const auto *space = callee ? llvm::dyn_cast<clang::NamespaceDecl>(
                                     callee->getDeclContext()->getRedeclContext())
                               : nullptr;
    if (!space || space->getName() != "c10" || llvm::isa<clang::CXXMethodDecl>(callee))
      return false;
    return std::any_of(op.arg_begin(), op.arg_end(), [](const clang::Expr *arg) {
      return is_sixteen_bit(arg->getType());
    });
  }

  Values c10_operator(const clang::CXXOperatorCallExpr *op, const Mask &on) {
    clang::OverloadedOperatorKind kind = op->getOperator();
    auto real = [&](unsigned k) {
      Values v = value(op->getArg(k)->IgnoreImplicit(), on);
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t])
          v[t] = convert(v[t], op->getArg(k)->IgnoreImplicit()->getType(),
                         context_.FloatTy, op);
      return v;
    };
    Values a = real(0), out(on.size());
    if (op->getNumArgs() == 1 && kind == clang::OO_Minus) {
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t])
          out[t] = arithmetic(clang::BO_Sub, Value::real(store_.constant(0)), a[t],
                              context_.FloatTy, op);
      return out;
    }
    auto binary = clang::BinaryOperator::getOverloadedOpcode(kind);
    if (op->getNumArgs() != 2)
      not_modelled(op, fmt::format("the operator '{}'", text_of(op)));
    bool assigns = clang::BinaryOperator::isCompoundAssignmentOp(binary);
    if (assigns)
      binary = clang::BinaryOperator::getOpForCompoundAssignment(binary);
    Values b = real(1);
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t])
        out[t] = clang::BinaryOperator::isComparisonOp(binary)
                     ? compare(binary, a[t], b[t], op)
                     : arithmetic(binary, a[t], b[t], context_.FloatTy, op);
    if (assigns)
      store(place(op->getArg(0), on), out, on, op, op->getArg(0)->getType());
    return out;
  }

  enum class Intrinsic {
    Fn,
    Max,
    Min,
    Fma,
    Div,
    Reciprocal,
    Identity,
    Abs,
    IntMin,
    IntMax
  };
  struct IntrinsicFn {
    Intrinsic kind;
    terms::Fn fn = terms::Fn::Exp;
  };

  // Math functions and intrinsics by name (their bodies, when the real
  // headers give them, are inline assembly): their meaning over the reals.
  std::optional<IntrinsicFn> intrinsic(const std::string &name,
                                       const clang::CallExpr *call) const {
    static const std::map<std::string, terms::Fn, std::less<>> functions{
        {"expf", terms::Fn::Exp},          {"__expf", terms::Fn::Exp},
        {"exp", terms::Fn::Exp},           {"logf", terms::Fn::Log},
        {"__logf", terms::Fn::Log},        {"log", terms::Fn::Log},
        {"sqrtf", terms::Fn::Sqrt},        {"sqrt", terms::Fn::Sqrt},
        {"rsqrtf", terms::Fn::Rsqrt},      {"rsqrt", terms::Fn::Rsqrt},
        {"__frsqrt_rn", terms::Fn::Rsqrt}, {"__fsqrt_rn", terms::Fn::Sqrt},
        {"tanhf", terms::Fn::Tanh},        {"tanh", terms::Fn::Tanh},
        {"erff", terms::Fn::Erf},          {"erf", terms::Fn::Erf},
        {"sinf", terms::Fn::Sin},          {"__sinf", terms::Fn::Sin},
        {"sin", terms::Fn::Sin},           {"cosf", terms::Fn::Cos},
        {"__cosf", terms::Fn::Cos},        {"cos", terms::Fn::Cos}};
    if (auto it = functions.find(name); it != functions.end())
      return IntrinsicFn{Intrinsic::Fn, it->second};
    bool real = call->getType()->isRealFloatingType();
    if (name == "fmaxf" || name == "fmax" || (name == "max" && real))
      return IntrinsicFn{Intrinsic::Max};
    if (name == "fminf" || name == "fmin" || (name == "min" && real))
      return IntrinsicFn{Intrinsic::Min};
    if (name == "max")
      return IntrinsicFn{Intrinsic::IntMax};
    if (name == "min")
      return IntrinsicFn{Intrinsic::IntMin};
    if (name == "fmaf" || name == "fma" || name == "__fmaf_rn")
      return IntrinsicFn{Intrinsic::Fma};
    if (name == "__fdividef" || name == "fdividef" || name == "__fdiv_rn")
      return IntrinsicFn{Intrinsic::Div};
    if (name == "__frcp_rn")
      return IntrinsicFn{Intrinsic::Reciprocal};
    if (name == "fabsf" || name == "fabs")
      return IntrinsicFn{Intrinsic::Abs};
    // 16-bit formats are reals here (the obligation is over the reals).
    if (name == "__half2float" || name == "__float2half" || name == "__float2half_rn" ||
        name == "__bfloat162float" || name == "__float2bfloat16")
      return IntrinsicFn{Intrinsic::Identity};
    return std::nullopt;
  }

  // __cvta_generic_to_shared(p): p's address in the shared window, an
  // integer that only inline PTX's ld.shared / st.shared take as their
  // address (DeepSpeed's mem_access::load_shared). It stays the pointer it
  // was; arithmetic on it is not modelled (it would count bytes, not elements).
  Values shared_window_address(const clang::CallExpr *call, const Mask &on) {
    if (call->getNumArgs() != 1)
      not_modelled(call, fmt::format("the call '{}'", text_of(call)));
    Values p = eval(call->getArg(0), on);
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t] && (p[t].kind != Value::Kind::Pointer ||
                    buffers_[p[t].buffer].space != Space::Shared))
        not_modelled(call, fmt::format("'{}' of a pointer that is not into shared memory",
                                       text_of(call)));
    return p;
  }

  Values apply(const clang::CallExpr *call, IntrinsicFn fn, const Mask &on) {
    std::vector<Values> args;
    for (const clang::Expr *arg : call->arguments())
      args.push_back(eval(arg, on));
    Values out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (!on[t])
        continue;
      if (fn.kind == Intrinsic::IntMin || fn.kind == Intrinsic::IntMax) {
        std::int64_t a = integer(args[0][t], call), b = integer(args[1][t], call);
        out[t] = Value::integer(fn.kind == Intrinsic::IntMin ? std::min(a, b)
                                                             : std::max(a, b));
        continue;
      }
      std::vector<TermId> x;
      for (const Values &a : args) {
        require_elements(a[t], call);
        if (a[t].kind != Value::Kind::Float)
          not_modelled(call,
                       fmt::format("'{}' on a value that is not a real", text_of(call)));
        x.push_back(a[t].term);
      }
      TermId r = 0;
      switch (fn.kind) {
      case Intrinsic::Fn:
        r = store_.app(fn.fn, x[0]);
        break;
      case Intrinsic::Max:
        r = store_.max(x[0], x[1]);
        break;
      case Intrinsic::Min:
        r = store_.min(x[0], x[1]);
        break;
      case Intrinsic::Fma:
        r = store_.add(store_.mul(x[0], x[1]), x[2]);
        break;
      case Intrinsic::Div:
        r = store_.div(x[0], x[1]);
        break;
      case Intrinsic::Reciprocal:
        r = store_.inv(x[0]);
        break;
      case Intrinsic::Identity:
        r = x[0];
        break;
      case Intrinsic::Abs:
        r = store_.max(x[0], store_.neg(x[0]));
        break;
      default:
        break;
      }
      out[t] = Value::real(r);
    }
    return out;
  }

  // r(a, b) or o.f(a) on an object of a class with no fields (apex's
  // Add<T>, Max<T>, SharedMemory<T>::getPointer()): the method's body, the
  // object unused.
  const clang::FunctionDecl *stateless_functor(const clang::CallExpr *call) const {
    const auto *op = llvm::dyn_cast<clang::CXXOperatorCallExpr>(call);
    if ((!op || op->getOperator() != clang::OO_Call) &&
        !llvm::isa<clang::CXXMemberCallExpr>(call))
      return nullptr;
    const auto *method =
        llvm::dyn_cast_or_null<clang::CXXMethodDecl>(call->getDirectCallee());
    if (!method || method->isVirtual() || !method->getParent()->field_empty())
      return nullptr;
    const clang::FunctionDecl *body = method->getDefinition();
    if (!body || !body->hasBody() || sources_.isInSystemHeader(body->getLocation()))
      return nullptr;
    return body;
  }

  // A real constant clang folds a toolkit call to (an infinity of
  // std::numeric_limits); nullopt for anything else.
  std::optional<TermId> folded_real(const clang::CallExpr *call) const {
    llvm::APFloat value(0.0);
    if (!call->getType()->isRealFloatingType() || !call->EvaluateAsFloat(value, context_))
      return std::nullopt;
    if (value.isInfinity())
      return store_.extended(value.isNegative() ? terms::Extended::NegInf
                                                : terms::Extended::PosInf);
    if (value.isNaN())
      return std::nullopt;
    bool lost = false;
    value.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return store_.constant_from_double(value.convertToDouble());
  }

  // sincosf(x, &s, &c): s = sin(x), c = cos(x).
  Values sincos(const clang::CallExpr *call, const Mask &on) {
    Values x = eval(call->getArg(0), on);
    for (unsigned k : {1u, 2u}) {
      const auto *address =
          llvm::dyn_cast<clang::UnaryOperator>(call->getArg(k)->IgnoreParenImpCasts());
      if (!address || address->getOpcode() != clang::UO_AddrOf)
        not_modelled(call, fmt::format("'{}' with an output that is not '&variable'",
                                       text_of(call)));
      Values out(on.size());
      for (std::size_t t = 0; t < on.size(); ++t)
        if (on[t]) {
          if (x[t].kind != Value::Kind::Float)
            not_modelled(
                call, fmt::format("'{}' on a value that is not a real", text_of(call)));
          out[t] = Value::real(
              store_.app(k == 1 ? terms::Fn::Sin : terms::Fn::Cos, x[t].term));
        }
      store(place(address->getSubExpr(), on), out, on, call,
            address->getSubExpr()->getType());
    }
    return Values(on.size());
  }

  Values inline_call(const clang::CallExpr *call, const clang::FunctionDecl &fn,
                     const Mask &on, unsigned first_arg = 0) {
    if (++call_depth_ > 64)
      not_modelled(call, "recursion deeper than 64 calls");
    // A reference parameter names its argument's place (a variable, an
    // element); a const one of a scalar is a copy of the value.
    std::vector<Values> args;
    std::map<unsigned, std::vector<Place>> references;
    for (unsigned i = first_arg; i < call->getNumArgs(); ++i) {
      const clang::ParmVarDecl *param = fn.getParamDecl(i - first_arg);
      clang::QualType type = param->getType();
      if (is_group_type(type)) { // a group, by value or by reference: its value
        args.push_back(eval_group(call->getArg(i), on));
        continue;
      }
      if (type->isReferenceType() && !(type.getNonReferenceType().isConstQualified() &&
                                       type.getNonReferenceType()->isScalarType())) {
        const clang::Expr *arg = call->getArg(i)->IgnoreImplicit();
        if (!arg->isGLValue() || !type.getNonReferenceType()->isScalarType())
          not_modelled(call, fmt::format("the reference parameter '{}' of '{}'",
                                         param->getNameAsString(), fn.getNameAsString()));
        references[i - first_arg] = place(arg, on);
        args.emplace_back(on.size());
        continue;
      }
      args.push_back(value(call->getArg(i), on));
    }
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t]) {
        Frame frame;
        for (unsigned i = 0; i < fn.getNumParams(); ++i) {
          const clang::ParmVarDecl *param = fn.getParamDecl(i);
          if (auto ref = references.find(i); ref != references.end()) {
            frame.references[param] = ref->second[t];
            continue;
          }
          frame.registers[param] =
              convert(args[i][t], call->getArg(i + first_arg)->getType(),
                      param->getType().getNonReferenceType(), call);
        }
        threads_[t].frames.push_back(std::move(frame));
      }
    exec(fn.getBody(), on);
    Values out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t]) {
        Thread &thread = threads_[t];
        out[t] = thread.frames.back().returned;
        thread.frames.pop_back();
        if (thread.flow == Flow::Returned)
          thread.flow = Flow::Running;
      }
    --call_depth_;
    return out;
  }

  // __syncthreads(), or a block's sync() (`what` names it).
  void barrier(const clang::CallExpr *call, const Mask &on,
               std::string_view what = "__syncthreads()") {
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t] && !threads_[t].guards.empty())
        not_modelled(call, fmt::format("{} under a data-dependent condition (by {})",
                                       what, thread_id(static_cast<int>(t)).str()));
    auto first = std::find(on.begin(), on.end(), 1) - on.begin();
    for (std::size_t t = 0; t < on.size(); ++t) {
      bool exited = threads_[t].flow == Flow::Returned && threads_[t].frames.size() == 1;
      if (!exited && !on[t]) { // a barrier in divergent code: undefined behaviour
        findings_.push_back(
            {KernelFinding::Kind::DivergentBarrier, loc(call),
             fmt::format("{} is reached by {} but not by {}, which has not "
                         "exited: a barrier in divergent code",
                         what, thread_id(static_cast<int>(first)).str(),
                         thread_id(static_cast<int>(t)).str())});
        throw FindingRecorded{};
      }
    }
    ++phase_;
  }

  // __syncwarp() (width 32), or a tile's sync(): orders the accesses of the
  // lanes of each tile of `width` the calling threads are in. Reached by
  // only some lanes of a tile it is not modelled (the mask is not read).
  void lane_barrier(const clang::CallExpr *call, const Mask &on, int width,
                    std::string_view what) {
    int n = static_cast<int>(on.size());
    for (int first = 0; first < n; first += width) {
      int last = std::min(n, first + width);
      if (std::find(on.begin() + first, on.begin() + last, 1) == on.begin() + last)
        continue;
      for (int lane = first; lane < last; ++lane) {
        bool exited =
            threads_[lane].flow == Flow::Returned && threads_[lane].frames.size() == 1;
        if (!exited && (!on[lane] || !threads_[lane].guards.empty()))
          not_modelled(call,
                       fmt::format("{} reached by some lanes of a {} but not by {}", what,
                                   width == kWarpSize ? std::string("warp")
                                                      : fmt::format("tile of {}", width),
                                   thread_id(lane).str()));
      }
      syncs_.sync(first, width);
    }
  }

  // __shfl_sync, __shfl_xor_sync, __shfl_down_sync, __shfl_up_sync: the
  // value of another lane of the warp, within segments of `width` lanes.
  Values shuffle(const clang::CallExpr *call, const std::string &name, Shuffle kind,
                 const Mask &on) {
    if (call->getNumArgs() < 3)
      not_modelled(call, fmt::format("'{}' with {} arguments", name, call->getNumArgs()));
    Values member_mask = eval(call->getArg(0), on);
    Values var = eval(call->getArg(1), on);
    Values lane_arg = eval(call->getArg(2), on);
    Values width = call->getNumArgs() > 3 ? eval(call->getArg(3), on)
                                          : fill(on, Value::integer(kWarpSize));
    return shuffled(call, name, kind, {member_mask, var, lane_arg, width}, on);
  }

  struct ShuffleArgs {
    Values member_mask, var, lane_arg, width;
  };

  // ATen's WARP_SHFL(value, lane, width = warpSize, mask = 0xffffffff) and
  // its _XOR, _UP and _DOWN (ATen/cuda/DeviceUtils.cuh): the intrinsics
  // they call, their arguments in ATen's order.
  static std::optional<Shuffle> aten_shuffle_kind(std::string_view name) {
    if (!name.starts_with("WARP_SHFL"))
      return std::nullopt;
    std::string suffix(name.substr(9)); // "", "_XOR", "_UP", "_DOWN"
    for (char &c : suffix)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return shuffle_kind("__shfl" + suffix + "_sync");
  }

  Values aten_shuffle(const clang::CallExpr *call, const std::string &name, Shuffle kind,
                      const Mask &on) {
    if (call->getNumArgs() != 4)
      not_modelled(call, fmt::format("'{}' with {} arguments", name, call->getNumArgs()));
    Values var = eval(call->getArg(0), on), lane_arg = eval(call->getArg(1), on);
    Values width = eval(call->getArg(2), on), member_mask = eval(call->getArg(3), on);
    return shuffled(call, name, kind, {member_mask, var, lane_arg, width}, on);
  }

  // A shuffle's values, its arguments evaluated.
  Values shuffled(const clang::CallExpr *call, const std::string &name, Shuffle kind,
                  const ShuffleArgs &args, const Mask &on) {
    const auto &[member_mask, var, lane_arg, width] = args;
    Values out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (!on[t])
        continue;
      if (!threads_[t].guards.empty())
        not_modelled(call, "a shuffle under a data-dependent condition");
      std::int64_t w = integer(width[t], call), arg = integer(lane_arg[t], call);
      if (!shuffle_modelled(kind, arg, w))
        not_modelled(call,
                     fmt::format("'{}' with argument {} and width {}", name, arg, w));
      int lane = static_cast<int>(t) % kWarpSize;
      std::int64_t warp_base = static_cast<std::int64_t>(t) - lane;
      int src = shuffle_source(kind, lane, arg, static_cast<int>(w));
      std::int64_t source = warp_base + src;
      std::uint64_t members = static_cast<std::uint64_t>(integer(member_mask[t], call));
      if (!((members >> lane) & 1))
        not_modelled(call, fmt::format("'{}' by {}, a lane its mask leaves out", name,
                                       thread_id(static_cast<int>(t)).str()));
      // A lane that does not take part (inactive, outside the block, not in
      // the mask) gives an undefined value: any real (a finding if an output
      // depends on it); any other kind of value, not modelled when used.
      const char *absent = !((members >> src) & 1) ? "which its mask leaves out"
                           : source < 0 || source >= static_cast<std::int64_t>(on.size())
                               ? "which is not in the launch"
                           : !on[source] ? "which is inactive here"
                                         : nullptr;
      if (!absent)
        out[t] = var[source];
      else if (var[t].kind == Value::Kind::Float)
        out[t] = undefined_shuffle_result(call, name, static_cast<int>(t), src, absent);
      else
        out[t] = Value{};
    }
    return out;
  }

  // A fresh real for what a shuffle reads from a lane that does not take
  // part, remembered with the read that made it.
  Value undefined_shuffle_result(const clang::CallExpr *call, const std::string &name,
                                 int t, int lane, const char *absent) {
    TermId v = store_.var(fmt::format("undefined#{} (lane {} of {})",
                                      undefined_shuffles_.size(), lane, name),
                          terms::VarKind::Opaque, loc(call).str());
    undefined_shuffles_[v] = {loc(call),
                              fmt::format("the {} of {} reads lane {}, {}", name,
                                          thread_id(t).str(), lane, absent)};
    return Value::real(v);
  }

  // The launch's output element whose value depends on an undefined shuffle
  // result, as a finding at that shuffle (what the hardware gives there is
  // unspecified, so the kernel's output is).
  std::optional<KernelFinding>
  output_reading_undefined(const LiftedLaunch &lifted) const {
    auto it = lifted.buffers.find(launch_.output);
    const KernelArg *out = launch_.arg(launch_.output);
    if (undefined_shuffles_.empty() || it == lifted.buffers.end() || !out)
      return std::nullopt;
    // One pass over the whole output first: element by element only if some
    // undefined value reaches it.
    std::vector<TermId> reached = terms::variables_of(store_, it->second);
    if (std::none_of(reached.begin(), reached.end(),
                     [&](TermId v) { return undefined_shuffles_.count(v); }))
      return std::nullopt;
    for (std::size_t i = 0; i < it->second.size(); ++i)
      for (TermId v : terms::variables_of(store_, std::span(&it->second[i], 1))) {
        auto read = undefined_shuffles_.find(v);
        if (read == undefined_shuffles_.end())
          continue;
        return KernelFinding{
            KernelFinding::Kind::UndefinedShuffleValue, read->second.first,
            fmt::format("{}{} depends on an undefined value: {} (a lane that does not "
                        "take part in a shuffle gives no defined value)",
                        out->name, ir::index_str(launch_.reference_shape(*out), i),
                        read->second.second)};
      }
    return std::nullopt;
  }

  // atomicAdd(address, v): read-modify-write, one thread after another (the
  // sum's order does not matter over the reals); atomics do not race.
  Values atomic_add(const clang::CallExpr *call, const Mask &on) {
    ++writes_;
    Values address = eval(call->getArg(0), on), value = eval(call->getArg(1), on);
    Values out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (!on[t])
        continue;
      if (!threads_[t].guards.empty())
        not_modelled(call, "an atomic under a data-dependent condition");
      const Value &p = address[t];
      if (p.kind != Value::Kind::Pointer)
        not_modelled(call, "an atomic on something other than a buffer element");
      if (view_cells(buffers_[p.buffer], call->getArg(0)->getType()->getPointeeType(),
                     call) != 0)
        not_modelled(call, fmt::format("'{}' through a view of the {} elements of {}",
                                       text_of(call), buffers_[p.buffer].format,
                                       buffers_[p.buffer].name));
      Buffer &buffer =
          access({nullptr, p.buffer, p.offset}, static_cast<int>(t), true, call, true);
      Value &cell = buffer.cells[p.offset];
      if (cell.kind != Value::Kind::Float || value[t].kind != Value::Kind::Float)
        not_modelled(call, "an integer or uninitialised atomicAdd");
      out[t] = cell;
      cell = Value::real(store_.add(cell.term, value[t].term));
      buffer.writes[p.offset] = ElementWrite{loc(call), thread_id(static_cast<int>(t))};
    }
    return out;
  }

  // --- cooperative groups (groups.h) -------------------------------------
  // Their calls are intercepted by name before the toolkit's bodies (inline
  // templates of builtins and assembly) or the stand-in header's.

  // A declaration of namespace cooperative_groups (the toolkit's inline
  // namespace and its details included).
  static bool in_cooperative_groups(const clang::Decl *d) {
    for (const clang::DeclContext *c = d->getDeclContext(); c; c = c->getParent())
      if (const auto *ns = llvm::dyn_cast<clang::NamespaceDecl>(c);
          ns && ns->getName() == "cooperative_groups")
        return true;
    return false;
  }

  // A group's class (thread_block, thread_block_tile<N>, thread_group,
  // grid_group, their bases), by value or by reference; not a functor.
  static bool is_group_type(clang::QualType type) {
    const auto *record =
        type.getNonReferenceType().getCanonicalType()->getAsCXXRecordDecl();
    if (!record || !in_cooperative_groups(record))
      return false;
    llvm::StringRef name = record->getName();
    return name.ends_with("group") || name.starts_with("thread_group") ||
           name == "thread_block" || (name.contains("tile") && !name.contains("memory"));
  }

  [[noreturn]] void unmodelled_group(const clang::Expr *e) const {
    not_modelled(e, fmt::format("the cooperative-groups call '{}' (modelled: "
                                "this_thread_block, tiled_partition of 1 to 32 threads, "
                                "this_grid of a one-block launch, their members)",
                                text_of(e)));
  }

  // A group-valued expression: a register, a call making one, a copy.
  Values eval_group(const clang::Expr *e, const Mask &on) {
    e = e->IgnoreParens();
    Values out;
    if (const auto *full = llvm::dyn_cast<clang::FullExpr>(e))
      out = eval_group(full->getSubExpr(), on);
    else if (const auto *temporary = llvm::dyn_cast<clang::MaterializeTemporaryExpr>(e))
      out = eval_group(temporary->getSubExpr(), on);
    else if (const auto *bind = llvm::dyn_cast<clang::CXXBindTemporaryExpr>(e))
      out = eval_group(bind->getSubExpr(), on);
    else if (const auto *cast = llvm::dyn_cast<clang::CastExpr>(e);
             cast && is_group_type(cast->getSubExpr()->getType()))
      out = eval_group(cast->getSubExpr(), on); // to a base, or a tile's parentless type
    else if (const auto *construct = llvm::dyn_cast<clang::CXXConstructExpr>(e);
             construct && construct->getNumArgs() == 1 &&
             is_group_type(construct->getArg(0)->getType()))
      out = eval_group(construct->getArg(0), on);
    else if (const auto *conversion = llvm::dyn_cast<clang::CXXMemberCallExpr>(e);
             conversion &&
             llvm::isa_and_nonnull<clang::CXXConversionDecl>(conversion->getMethodDecl()))
      out =
          eval_group(conversion->getImplicitObjectArgument(), on); // to a parentless tile
    else if (const auto *call = llvm::dyn_cast<clang::CallExpr>(e))
      out = eval_call(call, on);
    else if (llvm::isa<clang::DeclRefExpr>(e))
      out = load_places(place(e, on), on, e);
    else
      not_modelled(e, fmt::format("the cooperative group '{}' ({})", text_of(e),
                                  e->getStmtClassName()));
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t] && out[t].kind != Value::Kind::Group)
        not_modelled(e, fmt::format("the cooperative group '{}'", text_of(e)));
    return out;
  }

  void declare_group(const clang::VarDecl *var, const clang::Stmt *s, const Mask &on) {
    if (!var->hasInit())
      not_modelled(s, fmt::format("the cooperative group '{}' without an initialiser",
                                  var->getNameAsString()));
    Values v = eval_group(var->getInit(), on);
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t])
        threads_[t].frames.back().registers[var] = v[t];
  }

  // The group all active threads hold (a tile: each its own of that width).
  Group uniform_group(const clang::Expr *e, const Values &g, const Mask &on) const {
    std::optional<Group> group;
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (!on[t])
        continue;
      Group mine = group_of(g[t]);
      if (group && (mine.scope != group->scope || mine.size != group->size ||
                    mine.parent_size != group->parent_size))
        not_modelled(e, fmt::format("'{}' on groups of different shapes", text_of(e)));
      group = mine;
    }
    return group.value_or(Group{}); // no thread active: nothing reads it
  }

  // The object a member call is made on (a static member's too: block.sync()).
  const clang::Expr *group_object(const clang::CallExpr *call) const {
    if (const auto *member = llvm::dyn_cast<clang::CXXMemberCallExpr>(call))
      return member->getImplicitObjectArgument();
    if (const auto *member =
            llvm::dyn_cast<clang::MemberExpr>(call->getCallee()->IgnoreParenImpCasts()))
      return member->getBase();
    unmodelled_group(call);
  }

  int block_threads() const { return static_cast<int>(threads_.size()); }

  Values group_call_value(const clang::CallExpr *call, const clang::FunctionDecl &callee,
                          const Mask &on) {
    auto kind = group_call(callee.getNameAsString());
    bool method = llvm::isa<clang::CXXMethodDecl>(callee);
    if (!kind || method != (*kind >= GroupCall::Sync))
      unmodelled_group(call);
    if (!method)
      return group_function(call, callee, *kind, on);
    const clang::Expr *object = group_object(call);
    Group g = uniform_group(object, eval_group(object, on), on);
    switch (*kind) {
    case GroupCall::Sync:
      if (g.scope == Group::Scope::Tile)
        lane_barrier(call, on, g.size, fmt::format("'{}'", text_of(call)));
      else
        barrier(call, on, fmt::format("'{}'", text_of(call)));
      return Values(on.size());
    case GroupCall::Shfl:
    case GroupCall::ShflXor:
    case GroupCall::ShflDown:
    case GroupCall::ShflUp:
      return tile_shuffle(call, *kind, g, on);
    case GroupCall::Any:
    case GroupCall::All:
    case GroupCall::Ballot:
      return tile_votes(call, *kind, g, on);
    default:
      return group_integers(call, *kind, g, on);
    }
  }

  // this_thread_block(), this_grid(), tiled_partition, reduce.
  Values group_function(const clang::CallExpr *call, const clang::FunctionDecl &callee,
                        GroupCall kind, const Mask &on) {
    int blocks = launch_.grid[0] * launch_.grid[1] * launch_.grid[2];
    switch (kind) {
    case GroupCall::ThisThreadBlock:
      if (call->getNumArgs() != 0)
        unmodelled_group(call);
      return fill(on, group_value({Group::Scope::Block, block_threads(), 0}));
    case GroupCall::ThisGrid:
      if (blocks != 1)
        not_modelled(call,
                     fmt::format("'{}' on a launch of {} blocks (a grid-wide group)",
                                 text_of(call), blocks));
      return fill(on, group_value({Group::Scope::Grid, block_threads(), 0}));
    case GroupCall::TiledPartition:
      return tiled_partition(call, callee, on);
    case GroupCall::Reduce:
      return tile_reduce(call, on);
    default:
      unmodelled_group(call);
    }
  }

  // tiled_partition<N>(parent) or tiled_partition(parent, n).
  Values tiled_partition(const clang::CallExpr *call, const clang::FunctionDecl &callee,
                         const Mask &on) {
    if (call->getNumArgs() < 1)
      unmodelled_group(call);
    Values parent = eval_group(call->getArg(0), on);
    Values width(on.size());
    const clang::TemplateArgumentList *template_args =
        callee.getTemplateSpecializationArgs();
    if (call->getNumArgs() >= 2)
      width = eval(call->getArg(1), on);
    else if (template_args && template_args->size() > 0 &&
             template_args->get(0).getKind() == clang::TemplateArgument::Integral)
      width =
          fill(on, Value::integer(template_args->get(0).getAsIntegral().getExtValue()));
    else
      unmodelled_group(call);
    Values out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (!on[t])
        continue;
      std::int64_t w = integer(width[t], call);
      auto tile = Group::tile_of(group_of(parent[t]), w);
      if (!tile)
        not_modelled(call, fmt::format("'{}': a tile of {} threads (modelled: 1 to 32, a "
                                       "power of two, of a block or a wider tile)",
                                       text_of(call), w));
      out[t] = group_value(*tile);
      syncs_.split(tile->size);
    }
    return out;
  }

  // g.thread_rank(), g.size(), g.meta_group_rank(), ...: integers.
  Values group_integers(const clang::CallExpr *call, GroupCall kind, const Group &g,
                        const Mask &on) {
    bool tile = g.scope == Group::Scope::Tile, grid = g.scope == Group::Scope::Grid;
    if (((kind == GroupCall::MetaGroupRank || kind == GroupCall::MetaGroupSize) &&
         !tile) ||
        ((kind == GroupCall::BlockRank || kind == GroupCall::NumBlocks) && !grid))
      unmodelled_group(call);
    Values out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (!on[t])
        continue;
      int rank = static_cast<int>(t);
      std::int64_t v = 0;
      switch (kind) {
      case GroupCall::ThreadRank:
        v = g.thread_rank(rank);
        break;
      case GroupCall::Size:
        v = g.size;
        break;
      case GroupCall::MetaGroupRank:
        v = g.meta_group_rank(rank, block_threads());
        break;
      case GroupCall::MetaGroupSize:
        v = g.meta_group_size(block_threads());
        break;
      case GroupCall::BlockRank: // of the one block
        v = 0;
        break;
      case GroupCall::NumBlocks:
      case GroupCall::IsValid:
        v = 1;
        break;
      default: // a dim3, other than through its .x, .y, .z
        unmodelled_group(call);
      }
      out[t] = Value::integer(wrap(v, call->getType()));
    }
    return out;
  }

  // block.group_index().x, block.thread_index().y, grid.dim_blocks().z, ...
  std::optional<Values> group_dim3_member(const clang::Expr *e, const Mask &on) {
    const auto *member = llvm::dyn_cast<clang::MemberExpr>(e->IgnoreParens());
    const auto *call =
        member ? llvm::dyn_cast<clang::CallExpr>(member->getBase()->IgnoreImplicit())
               : nullptr;
    const clang::FunctionDecl *callee = call ? call->getDirectCallee() : nullptr;
    if (!callee || !in_cooperative_groups(callee))
      return std::nullopt;
    auto kind = group_call(callee->getNameAsString());
    std::string axis = member->getMemberDecl()->getNameAsString();
    int k = axis == "x" ? 0 : axis == "y" ? 1 : axis == "z" ? 2 : -1;
    if (!kind || k < 0 || !llvm::isa<clang::CXXMethodDecl>(callee))
      unmodelled_group(call);
    const clang::Expr *object = group_object(call);
    Group g = uniform_group(object, eval_group(object, on), on);
    bool grid = g.scope == Group::Scope::Grid;
    if (g.scope == Group::Scope::Tile || (*kind == GroupCall::DimBlocks && !grid))
      unmodelled_group(call);
    Values out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (!on[t])
        continue;
      ThreadId id = thread_id(static_cast<int>(t));
      std::int64_t block = launch_.block[k], v = 0;
      switch (*kind) {
      case GroupCall::GroupIndex: // a block's blockIdx; a grid's block_index()
        v = id.block[k];
        break;
      case GroupCall::ThreadIndex:
        v = id.thread[k] + (grid ? id.block[k] * block : 0);
        break;
      case GroupCall::GroupDim:
        v = grid ? launch_.grid[k] : block;
        break;
      case GroupCall::DimThreads:
        v = grid ? launch_.grid[k] * block : block;
        break;
      case GroupCall::DimBlocks:
        v = launch_.grid[k];
        break;
      default:
        unmodelled_group(call);
      }
      out[t] = Value::integer(wrap(v, e->getType()));
    }
    return out;
  }

  // tile.shfl(v, rank), .shfl_xor, .shfl_down, .shfl_up: __shfl_*_sync over
  // the tile's lanes with the tile's width.
  Values tile_shuffle(const clang::CallExpr *call, GroupCall kind, const Group &g,
                      const Mask &on) {
    if (g.scope != Group::Scope::Tile || call->getNumArgs() != 2)
      unmodelled_group(call);
    Shuffle shuffle = kind == GroupCall::Shfl       ? Shuffle::Idx
                      : kind == GroupCall::ShflXor  ? Shuffle::Xor
                      : kind == GroupCall::ShflDown ? Shuffle::Down
                                                    : Shuffle::Up;
    ShuffleArgs args{Values(on.size()), value(call->getArg(0), on),
                     eval(call->getArg(1), on), fill(on, Value::integer(g.size))};
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t])
        args.member_mask[t] = Value::integer(g.lane_mask(static_cast<int>(t)));
    return shuffled(call, text_of(call->getCallee()), shuffle, args, on);
  }

  // The block ranks of the tile of thread `t`, every one of them active,
  // outside any data-dependent branch, and in the block.
  std::vector<int> whole_tile(const clang::CallExpr *call, const Group &g, int t,
                              const Mask &on) const {
    auto [first, last] = g.threads_of(t, block_threads());
    if (last - first != g.size)
      not_modelled(call, fmt::format("'{}' by a tile of {} with {} threads in the block",
                                     text_of(call), g.size, last - first));
    std::vector<int> lanes;
    for (int lane = first; lane < last; ++lane) {
      if (!on[lane] || !threads_[lane].guards.empty())
        not_modelled(call,
                     fmt::format("'{}' reached by some threads of a tile but not by "
                                 "{}",
                                 text_of(call), thread_id(lane).str()));
      lanes.push_back(lane);
    }
    return lanes;
  }

  // tile.any(p), .all(p), .ballot(p) on concrete predicates.
  Values tile_votes(const clang::CallExpr *call, GroupCall kind, const Group &g,
                    const Mask &on) {
    if (g.scope != Group::Scope::Tile || call->getNumArgs() != 1)
      unmodelled_group(call);
    Values predicate = eval(call->getArg(0), on), out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (!on[t])
        continue;
      std::vector<std::int64_t> bits;
      for (int lane : whole_tile(call, g, static_cast<int>(t), on))
        bits.push_back(integer(predicate[lane], call));
      out[t] = Value::integer(wrap(tile_vote(kind, bits), call->getType()));
    }
    return out;
  }

  // cg::reduce(tile, v, cg::plus<T>() / cg::less<T>() / cg::greater<T>()):
  // every thread of the tile gets the sum, minimum or maximum of its values.
  Values tile_reduce(const clang::CallExpr *call, const Mask &on) {
    if (call->getNumArgs() != 3)
      unmodelled_group(call);
    Group g = uniform_group(call, eval_group(call->getArg(0), on), on);
    const auto *op =
        call->getArg(2)->getType().getNonReferenceType()->getAsCXXRecordDecl();
    std::string name = op && in_cooperative_groups(op) ? op->getNameAsString() : "";
    if (g.scope != Group::Scope::Tile ||
        (name != "plus" && name != "less" && name != "greater"))
      unmodelled_group(call);
    Values v = value(call->getArg(1), on), out(on.size());
    for (std::size_t t = 0; t < on.size(); ++t) {
      if (!on[t])
        continue;
      std::vector<TermId> terms;
      for (int lane : whole_tile(call, g, static_cast<int>(t), on)) {
        if (v[lane].kind != Value::Kind::Float)
          not_modelled(call,
                       fmt::format("'{}' on a value that is not a real", text_of(call)));
        terms.push_back(v[lane].term);
      }
      TermId r = terms[0];
      if (name == "plus")
        r = store_.add(terms);
      for (std::size_t k = 1; k < terms.size() && name != "plus"; ++k)
        r = name == "less" ? store_.min(r, terms[k]) : store_.max(r, terms[k]);
      out[t] = Value::real(r);
    }
    return out;
  }

  // --- one launch, or one per rank (ranks.h) -----------------------------------

  void run_blocks(const clang::FunctionDecl &kernel) {
    auto parameters = kernel_arguments(kernel);
    for (int bz = 0; bz < launch_.grid[2]; ++bz)
      for (int by = 0; by < launch_.grid[1]; ++by)
        for (int bx = 0; bx < launch_.grid[0]; ++bx)
          run_block({bx, by, bz}, kernel, parameters);
  }

  // Each block of each rank's launch is a unit; units run one at a time
  // until they finish or wait in a spin loop (wait_for_peers).
  void run_ranks(const clang::FunctionDecl &kernel) {
    std::vector<std::vector<std::pair<const clang::ParmVarDecl *, Value>>> parameters;
    for (int rank = 0; rank < launch_.ranks; ++rank)
      parameters.push_back(kernel_arguments(kernel, rank));
    auto [gx, gy, gz] = launch_.grid;
    int blocks = gx * gy * gz;
    RankOrder order(launch_.ranks, blocks);
    UnitScheduler scheduler;
    order_ = &order;
    scheduler_ = &scheduler;
    struct Done { // however the run ends, they are gone
      Lifter &lifter;
      ~Done() { lifter.order_ = nullptr, lifter.scheduler_ = nullptr; }
    } done{*this};
    auto unit_body = [&](int unit) {
      unit_ = unit;
      rank_ = order.rank_of(unit);
      order.enter(unit);
      int b = unit % blocks;
      run_block({b % gx, b / gx % gy, b / (gx * gy)}, kernel, parameters[rank_]);
    };
    scheduler.run(launch_.ranks * blocks, unit_body, [this] { return writes_; });
  }

  // A loop iteration that changed nothing: the loop waits for memory that
  // another unit of a multi-rank launch writes (a flag). The others run,
  // then it goes on; when none can, or there are no others, it never ends.
  void wait_for_peers(const clang::Stmt *at, const Mask &looping) {
    if (scheduler_) {
      auto saved =
          std::make_tuple(std::move(threads_), std::move(shared_), block_, block_serial_,
                          phase_, std::move(syncs_), call_depth_, rank_, unit_);
      bool resumed = scheduler_->wait();
      std::tie(threads_, shared_, block_, block_serial_, phase_, syncs_, call_depth_,
               rank_, unit_) = std::move(saved);
      order_->enter(unit_);
      if (resumed)
        return;
    }
    auto spinning = std::find(looping.begin(), looping.end(), 1) - looping.begin();
    throw NotModelled{
        loc(at),
        fmt::format("the loop at {} never ends: {} spins on '{}' and {}", loc(at).str(),
                    thread_id(static_cast<int>(spinning)).str(), text_of(at),
                    scheduler_ ? "every rank's launch waits with nothing written since "
                                 "(a flag no rank sets, or sets to another value)"
                               : "an iteration changes nothing (a wait for memory no "
                                 "thread wrote before it; a wait on another block of "
                                 "one launch is not modelled)")};
  }

  static std::string buffer_key(const std::string &name, int rank) {
    return rank < 0 ? name : fmt::format("{}@{}", name, rank);
  }

  // The buffers of a buffer arg: one, or one per rank in rank order.
  std::vector<int> buffers_of(const KernelArg &arg) const {
    if (!arg.per_rank)
      return {buffer_of_.at(arg.name)};
    std::vector<int> out;
    for (int rank = 0; rank < launch_.ranks; ++rank)
      out.push_back(buffer_of_.at(buffer_key(arg.name, rank)));
    return out;
  }

  // ptrs(BUF): a device array of the ranks' BUF buffers, in rank order.
  void bind_pointer_tables() {
    for (const KernelArg &arg : launch_.args) {
      if (!arg.is_pointer_table())
        continue;
      Buffer table;
      table.name = arg.name;
      for (int b : buffers_of(*launch_.arg(arg.pointers_to)))
        table.cells.push_back(Value::pointer(b, 0));
      buffer_of_[arg.name] = new_buffer(std::move(table));
    }
  }

  // The value of a `rank` or ptrs(BUF) parameter in rank `rank`'s launch:
  // ptrs(BUF) is a T**, or a struct of one array of pointers (vLLM's
  // RankData) by value or through a pointer, its slots past the ranks null.
  Value rank_argument(const KernelArg &arg, const clang::ParmVarDecl *param, int rank) {
    clang::QualType type = param->getType().getCanonicalType();
    if (arg.is_rank && type->isIntegerType())
      return Value::integer(wrap(rank, type));
    clang::QualType pointee = type->isPointerType() ? type->getPointeeType() : type;
    const clang::ConstantArrayType *slots = pointer_slots(pointee);
    clang::QualType element = slots ? slots->getElementType() : pointee;
    if (arg.is_pointer_table() && element->isPointerType() &&
        (slots || type->isPointerType())) {
      check_element_type(*launch_.arg(arg.pointers_to), element->getPointeeType(), param);
      int table = buffer_of_.at(arg.name);
      if (!slots)
        return Value::pointer(table, 0);
      Buffer copy; // the struct's memory: the table and null slots
      copy.name = arg.name;
      copy.cells = buffers_[table].cells;
      if (slots->getSize().getSExtValue() >=
          static_cast<std::int64_t>(copy.cells.size())) {
        copy.cells.resize(slots->getSize().getSExtValue(), Value::integer(0));
        return Value::pointer(new_buffer(std::move(copy)), 0);
      }
    }
    throw NotModelled{arg.loc,
                      fmt::format("arg '{}' is annotated as {} but the kernel's "
                                  "parameter is '{}'",
                                  arg.name,
                                  arg.is_rank ? "the rank (an integer)"
                                              : "an array of pointers (T**, or a "
                                                "struct of one array of at least "
                                                "as many pointers as ranks)",
                                  param->getType().getAsString())};
  }

  // A struct whose one field is an array of pointers: that array's type.
  const clang::ConstantArrayType *pointer_slots(clang::QualType type) const {
    const auto *record = type.getCanonicalType()->getAsRecordDecl();
    if (!record || !record->getDefinition() || record->isUnion() ||
        std::distance(record->field_begin(), record->field_end()) != 1)
      return nullptr;
    const auto *array = context_.getAsConstantArrayType(record->field_begin()->getType());
    return array && array->getElementType()->isPointerType() ? array : nullptr;
  }

  // In a multi-rank launch, global memory is shared by the ranks' units:
  // their accesses are ordered by flags (RankOrder); a volatile access is
  // a flag's.
  std::optional<Race> recorded_access(Buffer &buffer, std::int64_t i, const Access &now,
                                      bool write, const clang::Expr *e) {
    if (!order_ || buffer.space != Space::Global)
      return record_access(buffer, i, now, write);
    return order_->access(static_cast<int>(&buffer - buffers_.data()),
                          static_cast<std::int64_t>(buffer.cells.size()), i, now, write,
                          volatile_access(e));
  }

  static bool volatile_access(const clang::Expr *e) {
    e = e->IgnoreParens();
    if (const auto *op = llvm::dyn_cast<clang::BinaryOperator>(e);
        op && op->isAssignmentOp())
      e = op->getLHS();
    else if (const auto *op = llvm::dyn_cast<clang::UnaryOperator>(e);
             op && op->isIncrementDecrementOp())
      e = op->getSubExpr();
    return e->getType().isVolatileQualified();
  }

  void fence(const Mask &on, bool system) {
    if (!order_)
      return;
    for (std::size_t t = 0; t < on.size(); ++t)
      if (on[t])
        order_->fence(static_cast<int>(t), phase_, system);
  }

  [[noreturn]] void report_cross_rank_race(const Buffer &buffer, std::int64_t i,
                                           const Access &now, bool write,
                                           const Access &other, bool other_write) {
    std::string who = other.id.str();
    findings_.push_back(
        {KernelFinding::Kind::CrossRankRace, now.loc,
         fmt::format(
             "cross-rank race on {}[{}]: {} {} it here and {} {} it at {}, and no "
             "flag orders the two (a flag set after __threadfence_system() and "
             "awaited, with __syncthreads() before the set and after the wait)",
             buffer.name, i, now.id.str(), write ? "writes" : "reads", who,
             other_write ? "writes" : "reads", other.loc.str()),
         other.loc,
         fmt::format("{} {} {}[{}] here", who, other_write ? "writes" : "reads",
                     buffer.name, i)});
    throw FindingRecorded{};
  }

  terms::TermStore &store_;
  const clang::ASTContext &context_;
  const clang::SourceManager &sources_;
  const KernelLaunch &launch_;

  std::vector<Buffer> buffers_;
  std::map<std::string, int> buffer_of_;
  std::unordered_map<const clang::VarDecl *, int> shared_; // of the current block
  std::unordered_map<const clang::VarDecl *, bool> address_taken_;
  std::vector<Thread> threads_;
  std::array<int, 3> block_{};
  int block_serial_ = -1, phase_ = 0, call_depth_ = 0;
  SyncUnits syncs_; // __syncwarp and tile-sync phases of the block's warps
  std::int64_t steps_ = 0;
  std::vector<KernelFinding> findings_;
  // Each undefined shuffle result's variable: the shuffle and what it read.
  std::map<TermId, std::pair<ir::SourceLoc, std::string>> undefined_shuffles_;
  // A multi-rank launch: the order of its units' accesses, their scheduler,
  // the unit running and its rank (-1: one launch).
  RankOrder *order_ = nullptr;
  UnitScheduler *scheduler_ = nullptr;
  int rank_ = -1, unit_ = -1;
  std::uint64_t writes_ = 0; // stores so far: a loop iteration with none spins
};

} // namespace

LiftedLaunch
CudaFile::lift(terms::TermStore &store, const KernelLaunch &launch,
               const std::map<std::string, std::vector<TermId>> &inputs) const {
  const clang::FunctionDecl *kernel = impl_->kernels.at(launch.callee());
  Lifter lifter(store, *impl_->unit, launch);
  return lifter.run(*kernel, inputs);
}

} // namespace shardproof::frontend::cuda

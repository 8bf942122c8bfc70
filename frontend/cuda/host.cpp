// Running a host dispatcher at concrete sizes (issue 13): integer code,
// branches, switches over sizes, calls of the file's functions, dim3 values
// and kernel launches, which are recorded as the host computed them, never
// run. A failed assertion or a throw is the host refusing the sizes.
// Pointers and reals are opaque: a decision on one is not followed. Device
// queries answer for the reference device (device.h).
//
// An extension function's host code (CudaExtension::run) runs the same way
// over its sources together, with at::Tensor values: their sizes, dtypes and
// storages, the factories that allocate one (empty, zeros, empty_like, ...),
// data pointers into them, and floating-point scalars. There it fails
// closed: a call it cannot follow that is given a tensor or a pointer into
// one (a cuBLAS call, a copy, a tensor method it does not model) stops the
// run, as does a pointer a kernel is given that points into no storage.
#include "frontend/cuda/cuda_file.h"
#include "frontend/cuda/device.h"

#include <clang/AST/ASTContext.h>
#include <clang/AST/Attr.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/Stmt.h>
#include <clang/AST/StmtCXX.h>
#include <clang/Lex/Lexer.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <unordered_map>

namespace shardproof::frontend::cuda {

namespace {

struct HostValue {
  // Pointer: not null; into `storage` at element `i` when it is not -1.
  // Device: the reference device's cudaDeviceProp (or a pointer to it). Dim3
  // also holds a three-element array of it. Tensor: tensors_[i]. Options:
  // at::TensorOptions of `dtype`. List: an IntArrayRef, an initializer list
  // or a std::vector, its `items`. Nothing: an empty std::optional (a tensor
  // in one is the tensor). Reference: a non-const reference parameter bound
  // to the caller's local `target` in frames_[i].
  enum class Kind : std::uint8_t {
    Opaque,
    Int,
    Dim3,
    Pointer,
    Device,
    Real,
    Tensor,
    Options,
    List,
    Nothing,
    Reference
  };
  Kind kind = Kind::Opaque;
  std::int64_t i = 0;
  std::array<std::int64_t, 3> dim{1, 1, 1};
  double real = 0;
  int storage = -1;
  ir::DType dtype = ir::DType::Float32;
  std::vector<HostValue> items;
  const clang::VarDecl *target = nullptr;
  static HostValue integer(std::int64_t v) { return {Kind::Int, v}; }
  static HostValue floating(double v) {
    HostValue out{Kind::Real};
    out.real = v;
    return out;
  }
  static HostValue pointer_into(int storage, std::int64_t offset) {
    HostValue out{Kind::Pointer, offset};
    out.storage = storage;
    return out;
  }
};

// A tensor the host code holds: a contiguous view of a storage, or a
// strided argument (whose data pointer is not modelled).
struct TensorState {
  int storage = -1;
  ir::DType dtype = ir::DType::Float32;
  ir::Shape sizes;
  std::int64_t offset = 0;
  bool contiguous = true;
  int argument = -1; // the call's argument it is
};

struct Returning {
  HostValue value;
};
struct Rejecting {
  ir::SourceLoc at;
  std::string why;
};
struct NotFollowed {
  ir::SourceLoc at;
  std::string why;
};

enum class Flow : std::uint8_t { Running, Broken, Continued };

constexpr std::int64_t kMaxHostSteps = 1'000'000;

// The 16-bit float a record type is (c10::Half, __half, c10::BFloat16,
// __nv_bfloat16): its significant bits and least normal exponent.
struct SixteenBit {
  int digits, min_exponent;
};
std::optional<SixteenBit> sixteen_bit(clang::QualType type) {
  const auto *record = type.getCanonicalType()->getAsCXXRecordDecl();
  if (!record)
    return std::nullopt;
  llvm::StringRef name = record->getName();
  if (name == "Half" || name == "__half")
    return SixteenBit{11, -14};
  if (name == "BFloat16" || name == "__nv_bfloat16")
    return SixteenBit{8, -126};
  return std::nullopt;
}

// v rounded to nearest-even in that format (subnormals included); nullopt
// past its largest finite value.
std::optional<double> round_to(double v, SixteenBit format) {
  if (v == 0 || !std::isfinite(v))
    return v;
  int e = 0;
  std::frexp(v, &e); // v = m * 2^e with 0.5 <= |m| < 1
  int exponent = std::max(e, format.min_exponent + 1);
  double unit = std::ldexp(1.0, exponent - format.digits);
  double out = std::nearbyint(v / unit) * unit;
  double largest = std::ldexp(2.0 - std::ldexp(1.0, 1 - format.digits),
                              format.digits == 11 ? 15 : 127);
  if (std::fabs(out) > largest)
    return std::nullopt;
  return out;
}

class HostInterpreter {
public:
  // `files`: the parsed sources (one for a dispatcher of one file);
  // `definitions`: their functions by qualified name, for an extension
  // call, whose host code runs across them and is given tensors.
  explicit HostInterpreter(
      std::vector<CudaFile::Impl *> files,
      const std::map<std::string, const clang::FunctionDecl *> *definitions = nullptr)
      : files_(std::move(files)), definitions_(definitions) {
    enter(*files_.front()->unit);
  }

  HostRun run(const clang::FunctionDecl &fn,
              const std::map<std::string, std::int64_t> &ints,
              const std::set<std::string> &null_pointers) {
    Frame frame;
    for (const clang::ParmVarDecl *param : fn.parameters()) {
      auto it = ints.find(param->getNameAsString());
      HostValue value;
      if (it != ints.end() && param->getType()->isIntegerType())
        value = HostValue::integer(wrap(it->second, param->getType()));
      else if (param->getType()->isPointerType() &&
               null_pointers.count(param->getNameAsString()))
        value = HostValue::integer(0); // an optional argument left out
      else if (param->getType()->isPointerType())
        value.kind = HostValue::Kind::Pointer; // a tensor's data: not null
      frame[param] = value;
    }
    return execute(fn, std::move(frame)).first;
  }

  ExtensionHostRun run_extension(const clang::FunctionDecl &fn,
                                 const std::vector<HostArgument> &args) {
    ExtensionHostRun out;
    enter_function(fn);
    if (args.size() != fn.getNumParams()) { // pybind11 refuses the call (TypeError)
      out.run = {HostRun::End::NotModelled,
                 {},
                 loc(&fn),
                 fmt::format("{} takes {} arguments, given {} (defaults and keyword "
                             "arguments are not modelled)",
                             fn.getQualifiedNameAsString(), fn.getNumParams(),
                             args.size())};
      return out;
    }
    Frame frame;
    for (unsigned k = 0; k < fn.getNumParams(); ++k)
      frame[fn.getParamDecl(k)] =
          argument_value(static_cast<int>(k), args[k], fn.getParamDecl(k)->getType());
    auto [run, returned] = execute(fn, std::move(frame));
    out.run = std::move(run);
    out.storages = storages_;
    if (out.run.end != HostRun::End::Returned)
      return out;
    if (fn.getReturnType()->isVoidType()) {
      out.returns_none = true;
    } else if (returned.kind == HostValue::Kind::Tensor) {
      out.returned.push_back(view_of(returned, fn.getBody()));
    } else if (auto number = number_of(returned, fn.getReturnType())) {
      out.returned_number = *number;
    } else if (returned.kind == HostValue::Kind::List) {
      out.returns_sequence = true;
      out.returns_tuple = returned.i == 1;
      for (const HostValue &item : returned.items)
        out.returned.push_back(view_of(item, fn.getBody()));
    } else {
      out.run.end = HostRun::End::NotModelled;
      out.run.why =
          fmt::format("what {} returns ({}) is not modelled",
                      fn.getQualifiedNameAsString(), fn.getReturnType().getAsString());
    }
    return out;
  }

private:
  using Frame = std::unordered_map<const clang::VarDecl *, HostValue>;

  // Runs `fn`'s body in `frame`: how it ended, and what it returned.
  std::pair<HostRun, HostValue> execute(const clang::FunctionDecl &fn, Frame frame) {
    HostRun result;
    HostValue returned;
    try {
      frames_.push_back(std::move(frame));
      exec(fn.getBody());
    } catch (const Returning &r) {
      returned = r.value;
    } catch (const Rejecting &r) {
      last_switch_.reset();
      result.end = HostRun::End::Rejected;
      result.at = r.at;
      result.why = r.why;
    } catch (const NotFollowed &n) {
      result.end = HostRun::End::NotModelled;
      result.at = n.at;
      result.why = n.why;
    }
    if (result.end == HostRun::End::Returned && last_switch_) {
      context_ = last_switch_->context;
      sources_ = last_switch_->sources;
      result.at = loc(last_switch_->statement);
      result.switch_on = text_of(last_switch_->statement->getCond());
      result.switch_value = last_switch_->value;
    }
    result.launches = std::move(launches_);
    return {std::move(result), std::move(returned)};
  }

  // The parsed source `fn` is in: its locations and sizes are read there.
  CudaFile::Impl &file_of(const clang::Decl &decl) const {
    for (CudaFile::Impl *file : files_)
      if (&file->unit->getASTContext() == &decl.getASTContext())
        return *file;
    return *files_.front();
  }
  int file_index(const clang::Decl &decl) const {
    for (std::size_t k = 0; k < files_.size(); ++k)
      if (&files_[k]->unit->getASTContext() == &decl.getASTContext())
        return static_cast<int>(k);
    return 0;
  }
  void enter(const clang::ASTUnit &unit) {
    context_ = &unit.getASTContext();
    sources_ = &unit.getSourceManager();
  }
  void enter_function(const clang::FunctionDecl &fn) { enter(*file_of(fn).unit); }

  ir::SourceLoc loc(const clang::Decl *d) const {
    return source_loc(*sources_, d->getLocation());
  }
  ir::SourceLoc loc(const clang::Stmt *s) const {
    return source_loc(*sources_, s->getBeginLoc());
  }

  std::string text_of(const clang::Stmt *s) const {
    auto range = clang::CharSourceRange::getTokenRange(s->getSourceRange());
    return clang::Lexer::getSourceText(range, *sources_, context_->getLangOpts()).str();
  }

  [[noreturn]] void not_followed(const clang::Stmt *s, const std::string &what) const {
    throw NotFollowed{loc(s), fmt::format("the host code's {} at {} is not followed",
                                          what, loc(s).str())};
  }

  void step(const clang::Stmt *s) {
    if (++steps_ > kMaxHostSteps)
      not_followed(s, "loop (over a million steps)");
  }

  std::int64_t wrap(std::int64_t v, clang::QualType type) const {
    type = type.getCanonicalType();
    if (type->isBooleanType())
      return v != 0;
    unsigned width = context_->getIntWidth(type);
    if (width >= 64)
      return v;
    std::uint64_t bits =
        static_cast<std::uint64_t>(v) & ((std::uint64_t(1) << width) - 1);
    if (type->isUnsignedIntegerType())
      return static_cast<std::int64_t>(bits);
    std::uint64_t sign = std::uint64_t(1) << (width - 1);
    return static_cast<std::int64_t>((bits ^ sign) - sign);
  }

  std::int64_t integer(const HostValue &v, const clang::Stmt *at) const {
    if (v.kind != HostValue::Kind::Int)
      not_followed(at, fmt::format("use of a value that is not a known integer in '{}'",
                                   at->getStmtClassName()));
    return v.i;
  }

  // --- statements -----------------------------------------------------------

  void exec(const clang::Stmt *s) {
    if (!s || flow_ != Flow::Running)
      return;
    step(s);
    if (const auto *compound = llvm::dyn_cast<clang::CompoundStmt>(s)) {
      for (const clang::Stmt *child : compound->body())
        exec(child);
    } else if (const auto *decl = llvm::dyn_cast<clang::DeclStmt>(s)) {
      for (const clang::Decl *d : decl->decls())
        if (const auto *var = llvm::dyn_cast<clang::VarDecl>(d))
          frames_.back()[var] = var->hasInit() ? eval(var->getInit()) : HostValue{};
    } else if (const auto *branch = llvm::dyn_cast<clang::IfStmt>(s)) {
      if (branch->getInit() || branch->getConditionVariable())
        not_followed(s, "if with an initialiser");
      if (integer(eval(branch->getCond()), branch->getCond()))
        exec(branch->getThen());
      else
        exec(branch->getElse());
    } else if (const auto *sw = llvm::dyn_cast<clang::SwitchStmt>(s)) {
      exec_switch(sw);
    } else if (const auto *loop = llvm::dyn_cast<clang::ForStmt>(s)) {
      exec(loop->getInit());
      exec_loop(loop->getCond(), loop->getBody(), loop->getInc());
    } else if (const auto *loop = llvm::dyn_cast<clang::WhileStmt>(s)) {
      exec_loop(loop->getCond(), loop->getBody(), nullptr);
    } else if (llvm::isa<clang::BreakStmt>(s)) {
      flow_ = Flow::Broken;
    } else if (llvm::isa<clang::ContinueStmt>(s)) {
      flow_ = Flow::Continued;
    } else if (const auto *ret = llvm::dyn_cast<clang::ReturnStmt>(s)) {
      throw Returning{ret->getRetValue() ? eval(ret->getRetValue()) : HostValue{}};
    } else if (const auto *label = llvm::dyn_cast<clang::SwitchCase>(s)) {
      exec(label->getSubStmt());
    } else if (const auto *attributed = llvm::dyn_cast<clang::AttributedStmt>(s)) {
      exec(attributed->getSubStmt());
    } else if (const auto *e = llvm::dyn_cast<clang::Expr>(s)) {
      eval(e);
    } else if (!llvm::isa<clang::NullStmt>(s)) {
      not_followed(s, fmt::format("statement ({})", s->getStmtClassName()));
    }
  }

  void exec_loop(const clang::Expr *cond, const clang::Stmt *body,
                 const clang::Expr *inc) {
    while (!cond || integer(eval(cond), cond)) {
      step(body);
      exec(body);
      if (flow_ == Flow::Broken) {
        flow_ = Flow::Running;
        return;
      }
      flow_ = Flow::Running;
      if (inc)
        eval(inc);
    }
  }

  // The case the value selects, run from its label to a break (falling
  // through the labels after it); no case and no default: nothing runs.
  void exec_switch(const clang::SwitchStmt *sw) {
    if (sw->getInit() || sw->getConditionVariable())
      not_followed(sw, "switch with an initialiser");
    std::int64_t value = integer(eval(sw->getCond()), sw->getCond());
    const auto *body = llvm::dyn_cast<clang::CompoundStmt>(sw->getBody());
    if (!body)
      not_followed(sw, "switch without a braced body");
    auto labels = [&](const clang::Stmt *s, bool defaults) {
      // case 1: case 2: stmt nests its labels
      for (const clang::Stmt *at = s; at;) {
        if (const auto *c = llvm::dyn_cast<clang::CaseStmt>(at)) {
          if (!defaults && !c->getRHS() &&
              c->getLHS()->EvaluateKnownConstInt(*context_).getExtValue() == value)
            return true;
          at = c->getSubStmt();
        } else if (const auto *d = llvm::dyn_cast<clang::DefaultStmt>(at)) {
          if (defaults)
            return true;
          at = d->getSubStmt();
        } else {
          return false;
        }
      }
      return false;
    };
    auto children = body->body();
    auto start = children.end();
    for (bool defaults : {false, true}) {
      for (auto it = children.begin(); it != children.end() && start == children.end();
           ++it)
        if (labels(*it, defaults))
          start = it;
    }
    last_switch_ = LastSwitch{sw, value, context_, sources_};
    for (auto it = start; it != children.end() && flow_ == Flow::Running; ++it)
      exec(*it);
    if (flow_ == Flow::Broken)
      flow_ = Flow::Running;
  }

  // --- expressions ----------------------------------------------------------

  // A local variable's value, in the innermost frame that holds it (a
  // lambda's body reads its enclosing function's variables).
  HostValue *local(const clang::VarDecl *var) {
    for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame)
      if (auto it = frame->find(var); it != frame->end()) {
        if (it->second.kind == HostValue::Kind::Reference)
          return &frames_[it->second.i].at(it->second.target);
        return &it->second;
      }
    return nullptr;
  }

  // A non-const reference parameter (apex's `int &n1`): bound to the
  // caller's local variable, which the callee's writes change.
  HostValue reference_to(const clang::Expr *arg) {
    const auto *ref = llvm::dyn_cast<clang::DeclRefExpr>(arg->IgnoreParenImpCasts());
    const auto *var = ref ? llvm::dyn_cast<clang::VarDecl>(ref->getDecl()) : nullptr;
    for (std::size_t k = frames_.size(); var && k-- > 0;)
      if (auto it = frames_[k].find(var); it != frames_[k].end()) {
        if (it->second.kind == HostValue::Kind::Reference)
          return it->second;
        HostValue out{HostValue::Kind::Reference, static_cast<std::int64_t>(k)};
        out.target = var;
        return out;
      }
    not_followed(arg, "output argument that is not a local variable");
  }

  HostValue &variable(const clang::Expr *e) {
    const auto *ref = llvm::dyn_cast<clang::DeclRefExpr>(e->IgnoreParenImpCasts());
    const auto *var = ref ? llvm::dyn_cast<clang::VarDecl>(ref->getDecl()) : nullptr;
    HostValue *value = var ? local(var) : nullptr;
    if (!value)
      not_followed(e, "assignment to something other than a local variable");
    return *value;
  }

  HostValue eval(const clang::Expr *e) {
    step(e);
    e = e->IgnoreParens();
    if (const auto *lit = llvm::dyn_cast<clang::IntegerLiteral>(e))
      return HostValue::integer(wrap(
          static_cast<std::int64_t>(lit->getValue().getZExtValue()), lit->getType()));
    if (const auto *lit = llvm::dyn_cast<clang::CXXBoolLiteralExpr>(e))
      return HostValue::integer(lit->getValue());
    if (const auto *lit = llvm::dyn_cast<clang::FloatingLiteral>(e))
      return HostValue::floating(lit->getValueAsApproximateDouble());
    if (const auto *list = llvm::dyn_cast<clang::InitListExpr>(e))
      return list_of(list->inits());
    if (const auto *list = llvm::dyn_cast<clang::CXXStdInitializerListExpr>(e))
      return eval(list->getSubExpr());
    if (const auto *c = llvm::dyn_cast<clang::ExprWithCleanups>(e))
      return eval(c->getSubExpr());
    if (const auto *c = llvm::dyn_cast<clang::MaterializeTemporaryExpr>(e))
      return eval(c->getSubExpr());
    if (const auto *c = llvm::dyn_cast<clang::CXXBindTemporaryExpr>(e))
      return eval(c->getSubExpr());
    if (const auto *c = llvm::dyn_cast<clang::SubstNonTypeTemplateParmExpr>(e))
      return eval(c->getReplacement());
    if (const auto *c = llvm::dyn_cast<clang::CXXDefaultArgExpr>(e))
      return eval(c->getExpr());
    if (llvm::isa<clang::CXXThrowExpr>(e))
      throw Rejecting{loc(e), "it throws"};
    if (const auto *cast = llvm::dyn_cast<clang::CastExpr>(e)) {
      if (cast->getCastKind() == clang::CK_NullToPointer)
        return HostValue::integer(0);
      HostValue v = eval(cast->getSubExpr());
      clang::QualType to = cast->getType();
      if (to->isPointerType() && (v.kind == HostValue::Kind::Pointer ||
                                  (v.kind == HostValue::Kind::Int && v.i == 0)))
        return v; // a pointer, or null
      if (v.kind == HostValue::Kind::Int && to->isIntegerType())
        return HostValue::integer(wrap(v.i, to));
      if (v.kind == HostValue::Kind::Int && to->isEnumeralType()) // at::ScalarType
        return v;
      if (v.kind == HostValue::Kind::Real && to->isIntegerType())
        return HostValue::integer(wrap(static_cast<std::int64_t>(v.real), to));
      if ((v.kind == HostValue::Kind::Int || v.kind == HostValue::Kind::Real) &&
          to->isRealFloatingType())
        return HostValue::floating(
            rounded(v.kind == HostValue::Kind::Int ? double(v.i) : v.real, to));
      if (auto format = sixteen_bit(to); format && v.kind == HostValue::Kind::Real)
        return sixteen_bit_value(*format, v.real, cast);
      if (to->isRecordType() &&
          (v.kind == HostValue::Kind::Dim3 || v.kind == HostValue::Kind::Tensor ||
           v.kind == HostValue::Kind::Options || v.kind == HostValue::Kind::List))
        return v;
      return HostValue{};
    }
    if (const auto *construct = llvm::dyn_cast<clang::CXXConstructExpr>(e))
      return construct_value(construct);
    if (const auto *ref = llvm::dyn_cast<clang::DeclRefExpr>(e)) {
      if (const auto *constant = llvm::dyn_cast<clang::EnumConstantDecl>(ref->getDecl()))
        return HostValue::integer(constant->getInitVal().getSExtValue());
      if (const auto *var = llvm::dyn_cast<clang::VarDecl>(ref->getDecl()))
        if (HostValue *value = local(var))
          return *value;
    }
    if (const auto *member = llvm::dyn_cast<clang::MemberExpr>(e)) {
      HostValue base = eval(member->getBase());
      std::string field = member->getMemberDecl()->getNameAsString();
      if (base.kind == HostValue::Kind::Dim3 &&
          (field == "x" || field == "y" || field == "z"))
        return HostValue::integer(base.dim[field[0] - 'x']);
      if (base.kind == HostValue::Kind::Device)
        return device_field(member, field);
      return HostValue{};
    }
    if (const auto *subscript = llvm::dyn_cast<clang::ArraySubscriptExpr>(e)) {
      HostValue base = eval(subscript->getBase()->IgnoreImpCasts());
      HostValue index = eval(subscript->getIdx());
      if (base.kind == HostValue::Kind::Dim3 && index.kind == HostValue::Kind::Int &&
          index.i >= 0 && index.i < 3) // prop.maxGridSize[1]
        return HostValue::integer(base.dim[index.i]);
      return HostValue{};
    }
    if (const auto *op = llvm::dyn_cast<clang::UnaryOperator>(e))
      return eval_unary(op);
    if (const auto *op = llvm::dyn_cast<clang::BinaryOperator>(e))
      return eval_binary(op);
    if (const auto *op = llvm::dyn_cast<clang::ConditionalOperator>(e))
      return integer(eval(op->getCond()), op->getCond()) ? eval(op->getTrueExpr())
                                                         : eval(op->getFalseExpr());
    if (const auto *launch = llvm::dyn_cast<clang::CUDAKernelCallExpr>(e)) {
      record_launch(launch);
      return HostValue{};
    }
    if (const auto *call = llvm::dyn_cast<clang::CallExpr>(e))
      return eval_call(call);
    clang::Expr::EvalResult folded;
    if (e->getType()->isIntegralOrEnumerationType() && !e->isValueDependent() &&
        !e->HasSideEffects(*context_) && e->EvaluateAsInt(folded, *context_))
      return HostValue::integer(folded.Val.getInt().getExtValue());
    return HostValue{}; // a pointer, a real, a stream: opaque
  }

  HostValue construct_value(const clang::CXXConstructExpr *construct) {
    const clang::CXXRecordDecl *record = construct->getConstructor()->getParent();
    // A copy (of a tensor: the same tensor), or a list from an initializer
    // list (std::vector<at::Tensor>{...}, IntArrayRef{...}).
    if (construct->getNumArgs() >= 1 &&
        (construct->getConstructor()->isCopyOrMoveConstructor() ||
         llvm::isa<clang::CXXStdInitializerListExpr>(
             construct->getArg(0)->IgnoreImplicit())))
      return eval(construct->getArg(0));
    if (auto format = sixteen_bit(construct->getType());
        format && construct->getNumArgs() == 1) {
      HostValue v = eval(construct->getArg(0));
      if (v.kind == HostValue::Kind::Int || v.kind == HostValue::Kind::Real)
        return sixteen_bit_value(
            *format, v.kind == HostValue::Kind::Int ? double(v.i) : v.real, construct);
      return HostValue{};
    }
    if (record->getName() == "tuple" && definitions_) { // std::tuple<at::Tensor, ...>
      HostValue tuple =
          list_of(llvm::ArrayRef(construct->getArgs(), construct->getNumArgs()));
      tuple.i = 1;
      return tuple;
    }
    if (record->getName() == "optional") {
      // std::optional<at::Tensor>: the tensor, or nothing (nullopt, {}).
      HostValue v =
          construct->getNumArgs() == 1 ? eval(construct->getArg(0)) : HostValue{};
      if (v.kind == HostValue::Kind::Tensor || v.kind == HostValue::Kind::Nothing)
        return v;
      return HostValue{HostValue::Kind::Nothing};
    }
    if (record->getName() == "TensorOptions" && construct->getNumArgs() == 0) {
      HostValue options{HostValue::Kind::Options};
      options.dtype = ir::DType::Float32; // PyTorch's default dtype
      return options;
    }
    if (record->getName() != "dim3") {
      // A class of the sources built from a tensor may keep its memory and
      // launch on it from a method: not followed.
      if (definitions_ && users(*record))
        for (const clang::Expr *arg : construct->arguments())
          if (holds_memory(eval(arg)))
            not_followed(construct, fmt::format("construction of '{}' from a tensor or "
                                                "its memory",
                                                record->getQualifiedNameAsString()));
      return HostValue{};
    }
    HostValue out;
    out.kind = HostValue::Kind::Dim3;
    for (unsigned k = 0; k < std::min(3u, construct->getNumArgs()); ++k)
      out.dim[k] = integer(eval(construct->getArg(k)), construct->getArg(k));
    return out;
  }

  HostValue eval_unary(const clang::UnaryOperator *op) {
    // A tensor's address or a pointer to one dereferenced (apex passes
    // at::Tensor* to its launchers) is the tensor.
    if (op->getOpcode() == clang::UO_AddrOf || op->getOpcode() == clang::UO_Deref)
      if (HostValue v = eval(op->getSubExpr()); v.kind == HostValue::Kind::Tensor)
        return v;
    if (op->isIncrementDecrementOp()) {
      HostValue &v = variable(op->getSubExpr());
      std::int64_t before = integer(v, op);
      v = HostValue::integer(
          wrap(before + (op->isIncrementOp() ? 1 : -1), op->getType()));
      return op->isPrefix() ? v : HostValue::integer(before);
    }
    HostValue v = eval(op->getSubExpr());
    if (v.kind != HostValue::Kind::Int)
      return HostValue{};
    switch (op->getOpcode()) {
    case clang::UO_Minus:
      return HostValue::integer(wrap(-v.i, op->getType()));
    case clang::UO_Plus:
      return v;
    case clang::UO_Not:
      return HostValue::integer(wrap(~v.i, op->getType()));
    case clang::UO_LNot:
      return HostValue::integer(v.i == 0);
    default:
      return HostValue{};
    }
  }

  HostValue eval_binary(const clang::BinaryOperator *op) {
    using K = clang::BinaryOperatorKind;
    K kind = op->getOpcode();
    if (kind == clang::BO_LAnd || kind == clang::BO_LOr) {
      bool lhs = integer(eval(op->getLHS()), op->getLHS()) != 0;
      if (lhs == (kind == clang::BO_LOr))
        return HostValue::integer(lhs);
      return HostValue::integer(integer(eval(op->getRHS()), op->getRHS()) != 0);
    }
    if (kind == clang::BO_Comma) {
      eval(op->getLHS());
      return eval(op->getRHS());
    }
    if (op->isAssignmentOp()) {
      HostValue rhs = eval(op->getRHS());
      HostValue &target = variable(op->getLHS());
      if (kind == clang::BO_Assign) {
        target = rhs.kind == HostValue::Kind::Int && op->getType()->isIntegerType()
                     ? HostValue::integer(wrap(rhs.i, op->getType()))
                     : rhs;
        return target;
      }
      target = arithmetic(clang::BinaryOperator::getOpForCompoundAssignment(kind), target,
                          rhs, op->getType(), op);
      return target;
    }
    HostValue a = eval(op->getLHS()), b = eval(op->getRHS());
    return arithmetic(kind, a, b, op->getType(), op);
  }

  HostValue arithmetic(clang::BinaryOperatorKind kind, const HostValue &av,
                       const HostValue &bv, clang::QualType type,
                       const clang::BinaryOperator *op) {
    // A pointer parameter is never null (p == nullptr is false).
    auto null_test = [&](const HostValue &p, const HostValue &n) {
      return p.kind == HostValue::Kind::Pointer && n.kind == HostValue::Kind::Int &&
             n.i == 0;
    };
    if ((kind == clang::BO_EQ || kind == clang::BO_NE) &&
        (null_test(av, bv) || null_test(bv, av)))
      return HostValue::integer(kind == clang::BO_NE);
    if (av.kind == HostValue::Kind::Pointer && av.storage >= 0 &&
        bv.kind == HostValue::Kind::Int &&
        (kind == clang::BO_Add || kind == clang::BO_Sub))
      return HostValue::pointer_into(av.storage,
                                     kind == clang::BO_Add ? av.i + bv.i : av.i - bv.i);
    if (av.kind == HostValue::Kind::Real || bv.kind == HostValue::Kind::Real)
      return real_arithmetic(kind, av, bv, type);
    if (av.kind != HostValue::Kind::Int || bv.kind != HostValue::Kind::Int)
      return HostValue{};
    std::int64_t a = av.i, b = bv.i;
    bool is_unsigned = op->getLHS()->getType()->isUnsignedIntegerType() ||
                       op->getRHS()->getType()->isUnsignedIntegerType();
    auto less = [&](std::int64_t x, std::int64_t y) {
      return is_unsigned ? static_cast<std::uint64_t>(x) < static_cast<std::uint64_t>(y)
                         : x < y;
    };
    switch (kind) {
    case clang::BO_Add:
      return HostValue::integer(
          wrap(static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + b), type));
    case clang::BO_Sub:
      return HostValue::integer(
          wrap(static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - b), type));
    case clang::BO_Mul:
      return HostValue::integer(
          wrap(static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * b), type));
    case clang::BO_Div:
    case clang::BO_Rem:
      if (b == 0)
        not_followed(op, "division by zero");
      if (is_unsigned) {
        auto x = static_cast<std::uint64_t>(a), y = static_cast<std::uint64_t>(b);
        return HostValue::integer(
            wrap(static_cast<std::int64_t>(kind == clang::BO_Div ? x / y : x % y), type));
      }
      return HostValue::integer(wrap(kind == clang::BO_Div ? a / b : a % b, type));
    case clang::BO_Shl:
      if (b < 0 || b >= 63)
        not_followed(op, "shift out of range");
      return HostValue::integer(
          wrap(static_cast<std::int64_t>(static_cast<std::uint64_t>(a) << b), type));
    case clang::BO_Shr:
      if (b < 0 || b >= 63)
        not_followed(op, "shift out of range");
      return HostValue::integer(wrap(a >> b, type));
    case clang::BO_And:
      return HostValue::integer(wrap(a & b, type));
    case clang::BO_Or:
      return HostValue::integer(wrap(a | b, type));
    case clang::BO_Xor:
      return HostValue::integer(wrap(a ^ b, type));
    case clang::BO_LT:
      return HostValue::integer(less(a, b));
    case clang::BO_GT:
      return HostValue::integer(less(b, a));
    case clang::BO_LE:
      return HostValue::integer(!less(b, a));
    case clang::BO_GE:
      return HostValue::integer(!less(a, b));
    case clang::BO_EQ:
      return HostValue::integer(a == b);
    case clang::BO_NE:
      return HostValue::integer(a != b);
    default:
      not_followed(op, "operator");
    }
  }

  // Arithmetic and comparisons of floating-point scalars (a softmax's
  // scale), rounded to the result's type.
  HostValue real_arithmetic(clang::BinaryOperatorKind kind, const HostValue &av,
                            const HostValue &bv, clang::QualType type) const {
    auto as_real = [](const HostValue &v) -> std::optional<double> {
      if (v.kind == HostValue::Kind::Real)
        return v.real;
      if (v.kind == HostValue::Kind::Int)
        return double(v.i);
      return std::nullopt;
    };
    auto a = as_real(av), b = as_real(bv);
    if (!a || !b)
      return HostValue{};
    switch (kind) {
    case clang::BO_Add:
      return HostValue::floating(rounded(*a + *b, type));
    case clang::BO_Sub:
      return HostValue::floating(rounded(*a - *b, type));
    case clang::BO_Mul:
      return HostValue::floating(rounded(*a * *b, type));
    case clang::BO_Div:
      return *b == 0 ? HostValue{} : HostValue::floating(rounded(*a / *b, type));
    case clang::BO_LT:
      return HostValue::integer(*a < *b);
    case clang::BO_GT:
      return HostValue::integer(*a > *b);
    case clang::BO_LE:
      return HostValue::integer(*a <= *b);
    case clang::BO_GE:
      return HostValue::integer(*a >= *b);
    case clang::BO_EQ:
      return HostValue::integer(*a == *b);
    case clang::BO_NE:
      return HostValue::integer(*a != *b);
    default:
      return HostValue{};
    }
  }

  HostValue sixteen_bit_value(SixteenBit format, double v, const clang::Stmt *at) const {
    auto out = round_to(v, format);
    if (!out)
      not_followed(at, "conversion to a 16-bit float past its range");
    return HostValue::floating(*out);
  }

  // A value of `type`: a float's is rounded to single precision.
  double rounded(double v, clang::QualType type) const {
    type = type.getCanonicalType();
    if (type->isRealFloatingType() && context_->getTypeSize(type) == 32)
      return static_cast<double>(static_cast<float>(v));
    return v;
  }

  HostValue list_of(llvm::ArrayRef<const clang::Expr *> elements) {
    HostValue list{HostValue::Kind::List};
    for (const clang::Expr *element : elements)
      list.items.push_back(eval(element));
    return list;
  }

  HostValue eval_call(const clang::CallExpr *call) {
    const clang::FunctionDecl *callee = call->getDirectCallee();
    if (callee && (callee->isNoReturn() || callee->hasAttr<clang::NoReturnAttr>()))
      throw Rejecting{loc(call), refusal(call, *callee)};
    if (auto answer = device_query(call))
      return *answer;
    if (const auto *member = llvm::dyn_cast<clang::CXXMemberCallExpr>(call))
      return eval_member_call(member);
    if (auto element = list_subscript(call))
      return *element;
    if (auto tensor = tensor_access(call))
      return *tensor;
    if (auto assigned = class_assignment(call))
      return *assigned;
    if (!callee) {
      if (definitions_) // it may be a launcher
        not_followed(call, "call through a function pointer");
      return HostValue{};
    }
    if (std::string name = callee->getQualifiedNameAsString();
        definitions_ && (name == "std::make_tuple" || name == "std::forward_as_tuple")) {
      HostValue tuple = list_of(llvm::ArrayRef(call->getArgs(), call->getNumArgs()));
      tuple.i = 1; // a std::tuple
      return tuple;
    }
    const clang::FunctionDecl *body = definition_of(*callee);
    if (!body) {
      if (auto made = tensor_function(call, *callee))
        return *made;
      unknown_call(call, callee->getQualifiedNameAsString());
      return HostValue{};
    }
    Frame frame;
    unsigned first = llvm::isa<clang::CXXOperatorCallExpr>(call) ? 1 : 0;
    for (unsigned i = 0; i < body->getNumParams() && i + first < call->getNumArgs();
         ++i) {
      const clang::ParmVarDecl *param = body->getParamDecl(i);
      clang::QualType type = param->getType();
      if (type->isLValueReferenceType() &&
          !type.getNonReferenceType().isConstQualified() &&
          !type.getNonReferenceType()->isRecordType()) {
        frame[param] = reference_to(call->getArg(i + first));
        continue;
      }
      HostValue v = eval(call->getArg(i + first));
      frame[param] = v.kind == HostValue::Kind::Int && type->isIntegerType()
                         ? HostValue::integer(wrap(v.i, type))
                         : v;
    }
    if (frames_.size() > 64)
      not_followed(call, "recursion deeper than 64 calls");
    frames_.push_back(std::move(frame));
    Flow outer = flow_;
    flow_ = Flow::Running;
    const clang::ASTContext *caller_context = context_;
    const clang::SourceManager *caller_sources = sources_;
    enter_function(*body);
    HostValue result;
    try {
      exec(body->getBody());
    } catch (const Returning &r) {
      result = r.value;
    }
    context_ = caller_context;
    sources_ = caller_sources;
    flow_ = outer;
    frames_.pop_back();
    if (result.kind == HostValue::Kind::Int && call->getType()->isIntegerType())
      result.i = wrap(result.i, call->getType());
    return result;
  }

  // Why a call that does not return refuses the arguments: a TORCH_CHECK's
  // condition, or the function called.
  std::string refusal(const clang::CallExpr *call, const clang::FunctionDecl &callee) {
    if (callee.getName() == "__shardproof_torch_error" && call->getNumArgs() == 1)
      if (const auto *text = llvm::dyn_cast<clang::StringLiteral>(
              call->getArg(0)->IgnoreParenImpCasts()))
        return text->getString() == "AT_ERROR"
                   ? "AT_ERROR: no case of its dispatch takes these arguments"
                   : fmt::format("the check '{}' failed", text->getString().str());
    return fmt::format("it calls '{}'", callee.getNameAsString());
  }

  // The body that runs for `callee`: its own, or in an extension call, the
  // definition another source gives the function of that name.
  const clang::FunctionDecl *definition_of(const clang::FunctionDecl &callee) const {
    if (const clang::FunctionDecl *body = callee.getDefinition(); body && body->hasBody())
      return body;
    if (!definitions_)
      return nullptr;
    auto it = definitions_->find(callee.getQualifiedNameAsString());
    if (it == definitions_->end() || it->second->getNumParams() != callee.getNumParams())
      return nullptr;
    return it->second;
  }

  // Declared by the analysed sources, not by the toolkit's, the system's or
  // shardproof's stand-in PyTorch headers.
  bool users(const clang::Decl &decl) const {
    const clang::SourceManager &sources = decl.getASTContext().getSourceManager();
    if (sources.isInSystemHeader(decl.getLocation()))
      return false;
    return !source_loc(sources, decl.getLocation())
                .file.starts_with(SHARDPROOF_CUDA_TORCH_SHIM_DIR);
  }

  bool holds_memory(const HostValue &v) const {
    if (v.kind == HostValue::Kind::Tensor ||
        (v.kind == HostValue::Kind::Pointer && v.storage >= 0))
      return true;
    return std::any_of(v.items.begin(), v.items.end(),
                       [&](const HostValue &item) { return holds_memory(item); });
  }

  // A call the interpreter cannot follow: in an extension call, one given a
  // tensor or a pointer into one may read or write it, and stops the run;
  // any other is opaque (a stream, an error check).
  void unknown_call(const clang::CallExpr *call, const std::string &name) {
    if (!definitions_)
      return;
    for (const clang::Expr *arg : call->arguments())
      if (holds_memory(eval(arg)))
        not_followed(call, fmt::format("call of '{}' with a tensor or its memory "
                                       "(defined in none of the sources)",
                                       name));
  }

  // --- tensors (extension calls) -----------------------------------------

  HostValue argument_value(int index, const HostArgument &arg, clang::QualType type) {
    if (const auto *tensor = std::get_if<HostTensor>(&arg)) {
      storages_.push_back(
          {HostStorage::Init::Argument, tensor->dtype, elements(tensor->shape), index});
      return new_tensor({static_cast<int>(storages_.size()) - 1, tensor->dtype,
                         tensor->shape, 0, tensor->contiguous, index});
    }
    if (const auto *v = std::get_if<std::int64_t>(&arg))
      return type->isRealFloatingType() ? HostValue::floating(rounded(double(*v), type))
                                        : HostValue::integer(wrap(*v, type));
    if (const auto *v = std::get_if<bool>(&arg))
      return HostValue::integer(*v);
    if (const auto *v = std::get_if<std::vector<std::int64_t>>(&arg))
      return int_list(*v);
    if (const auto *v = std::get_if<double>(&arg))
      if (type->isRealFloatingType())
        return HostValue::floating(rounded(*v, type));
    if (std::holds_alternative<std::monostate>(arg)) // None: an empty std::optional
      return HostValue{HostValue::Kind::Nothing};
    return HostValue{}; // a float given for an integer: opaque
  }

  // A number the function returns as its return type has it.
  static std::optional<HostArgument> number_of(const HostValue &v, clang::QualType type) {
    type = type.getCanonicalType();
    if (v.kind == HostValue::Kind::Int && type->isBooleanType())
      return HostArgument{v.i != 0};
    if (v.kind == HostValue::Kind::Int && type->isIntegerType())
      return HostArgument{v.i};
    if (v.kind == HostValue::Kind::Real && type->isRealFloatingType())
      return HostArgument{v.real};
    return std::nullopt;
  }

  HostValue new_tensor(TensorState state) {
    tensors_.push_back(std::move(state));
    return HostValue{HostValue::Kind::Tensor,
                     static_cast<std::int64_t>(tensors_.size()) - 1};
  }

  HostValue new_storage_tensor(HostStorage::Init init, ir::DType dtype,
                               const ir::Shape &sizes, const clang::CallExpr *made_by) {
    storages_.push_back({init, dtype, elements(sizes), -1,
                         made_by->getDirectCallee()->getQualifiedNameAsString(),
                         loc(made_by)});
    return new_tensor({static_cast<int>(storages_.size()) - 1, dtype, sizes});
  }

  HostTensorView view_of(const HostValue &v, const clang::Stmt *at) {
    if (v.kind != HostValue::Kind::Tensor)
      not_followed(at, "return of a sequence holding something other than tensors");
    const TensorState &t = tensors_[v.i];
    if (!t.contiguous)
      not_followed(at, "return of a strided argument");
    return {t.storage, t.sizes, t.offset};
  }

  static std::int64_t elements(const ir::Shape &shape) {
    std::int64_t n = 1;
    for (std::int64_t size : shape)
      n *= size;
    return n;
  }
  static std::int64_t numel(const TensorState &t) { return elements(t.sizes); }

  static HostValue int_list(const std::vector<std::int64_t> &values) {
    HostValue list{HostValue::Kind::List};
    for (std::int64_t v : values)
      list.items.push_back(HostValue::integer(v));
    return list;
  }

  // ir::DType <-> at::ScalarType, by the enumerators' names.
  static constexpr std::array<std::pair<ir::DType, std::string_view>, 7> kScalarTypes{{
      {ir::DType::Float32, "Float"},
      {ir::DType::Float16, "Half"},
      {ir::DType::BFloat16, "BFloat16"},
      {ir::DType::Float64, "Double"},
      {ir::DType::Int32, "Int"},
      {ir::DType::Int64, "Long"},
      {ir::DType::Bool, "Bool"},
  }};

  HostValue scalar_type_value(ir::DType dtype, clang::QualType type,
                              const clang::Stmt *at) {
    const auto *enum_type = type.getCanonicalType()->getAs<clang::EnumType>();
    for (const auto &[known, name] : kScalarTypes)
      if (known == dtype && enum_type)
        for (const clang::EnumConstantDecl *e : enum_type->getDecl()->enumerators())
          if (e->getName() == llvm::StringRef(name))
            return HostValue::integer(e->getInitVal().getSExtValue());
    not_followed(at, fmt::format("dtype {} as an at::ScalarType", ir::dtype_name(dtype)));
  }

  ir::DType dtype_of(const clang::Expr *e) {
    HostValue v = eval(e);
    const auto *enum_type = e->getType().getCanonicalType()->getAs<clang::EnumType>();
    if (v.kind == HostValue::Kind::Int && enum_type)
      for (const clang::EnumConstantDecl *c : enum_type->getDecl()->enumerators())
        if (c->getInitVal().getSExtValue() == v.i)
          for (const auto &[dtype, name] : kScalarTypes)
            if (c->getName() == llvm::StringRef(name))
              return dtype;
    not_followed(e, "dtype that is not a known at::ScalarType");
  }

  static bool floating(ir::DType dtype) {
    return dtype == ir::DType::Float64 || dtype == ir::DType::Float32 ||
           dtype == ir::DType::Float16 || dtype == ir::DType::BFloat16;
  }

  static std::int64_t element_bytes(ir::DType dtype) {
    switch (dtype) {
    case ir::DType::Float64:
    case ir::DType::Int64:
      return 8;
    case ir::DType::Float32:
    case ir::DType::Int32:
      return 4;
    case ir::DType::Float16:
    case ir::DType::BFloat16:
      return 2;
    default:
      return 1;
    }
  }

  HostValue eval_member_call(const clang::CXXMemberCallExpr *call) {
    const clang::CXXMethodDecl *method = call->getMethodDecl();
    const clang::Expr *object = call->getImplicitObjectArgument();
    if (!method || !object || !definitions_)
      return HostValue{}; // a stream, a query: opaque
    HostValue self = eval(object);
    std::string name = method->getNameAsString();
    if (self.kind == HostValue::Kind::Real && llvm::isa<clang::CXXConversionDecl>(method))
      return call->getType()->isIntegerType()
                 ? HostValue::integer(
                       wrap(static_cast<std::int64_t>(self.real), call->getType()))
                 : HostValue::floating(rounded(self.real, call->getType()));
    if (self.kind == HostValue::Kind::Tensor)
      return tensor_method(call, tensors_[self.i], self, name);
    if (self.kind == HostValue::Kind::Options)
      return options_method(call, self, name);
    if (self.kind == HostValue::Kind::List)
      if (auto out = list_method(call, self, name))
        return *out;
    if (self.kind == HostValue::Kind::Nothing && name == "has_value")
      return HostValue::integer(0);
    if (holds_memory(self))
      not_followed(call, fmt::format("method '{}' of a list of tensors", name));
    if (users(*method) && definition_of(*method)) // it may launch kernels
      not_followed(call, fmt::format("method '{}' of a class of the sources",
                                     method->getQualifiedNameAsString()));
    unknown_call(call, method->getQualifiedNameAsString());
    return HostValue{};
  }

  HostValue tensor_method(const clang::CXXMemberCallExpr *call, const TensorState &t,
                          const HostValue &self, const std::string &name) {
    auto dim_arg = [&](unsigned k) {
      std::int64_t d = integer(eval(call->getArg(k)), call->getArg(k));
      auto rank = static_cast<std::int64_t>(t.sizes.size());
      if (d < -rank || d >= rank)
        throw Rejecting{loc(call), fmt::format("Dimension out of range (expected to be "
                                               "in range of [{}, {}], but got {})",
                                               -rank, rank - 1, d)};
      return d < 0 ? d + rank : d;
    };
    std::vector<std::int64_t> strides(t.sizes.size(), 1);
    for (std::size_t k = t.sizes.size(); k-- > 1;)
      strides[k - 1] = strides[k] * t.sizes[k];
    if (name == "size" && call->getNumArgs() == 1)
      return HostValue::integer(t.sizes[dim_arg(0)]);
    if (name == "sizes")
      return int_list(t.sizes);
    if (name == "dim" || name == "ndimension")
      return HostValue::integer(static_cast<std::int64_t>(t.sizes.size()));
    if (name == "numel")
      return HostValue::integer(numel(t));
    if (name == "element_size")
      return HostValue::integer(element_bytes(t.dtype));
    if (name == "is_contiguous")
      return HostValue::integer(t.contiguous);
    if (name == "is_cuda" || name == "defined")
      return HostValue::integer(1);
    if (name == "get_device")
      return HostValue::integer(0);
    if (t.contiguous && name == "stride" && call->getNumArgs() == 1)
      return HostValue::integer(strides[dim_arg(0)]);
    if (t.contiguous && name == "strides")
      return int_list(strides);
    if (name == "scalar_type" || name == "dtype")
      return scalar_type_value(t.dtype, call->getType(), call);
    if (name == "options" || name == "type") {
      HostValue options{HostValue::Kind::Options};
      options.dtype = t.dtype;
      return options;
    }
    if (name == "contiguous" && t.contiguous)
      return self;
    if (name == "has_value") // a std::optional holding it
      return HostValue::integer(1);
    if (name == "value")
      return self;
    if (name == "contiguous" && t.argument >= 0) { // a copy, made in row-major order
      storages_.push_back(
          {HostStorage::Init::CopyOfArgument, t.dtype, numel(t), t.argument});
      return new_tensor({static_cast<int>(storages_.size()) - 1, t.dtype, t.sizes});
    }
    if (name == "data_ptr" || name == "const_data_ptr" || name == "mutable_data_ptr" ||
        name == "data")
      return data_pointer(call, t);
    not_followed(call, fmt::format("at::Tensor::{}", name));
  }

  // A tensor's data pointer: PyTorch's data_ptr<T>() refuses a T that is
  // not the tensor's dtype.
  HostValue data_pointer(const clang::CXXMemberCallExpr *call, const TensorState &t) {
    if (!t.contiguous)
      not_followed(call, "data pointer of a strided tensor");
    clang::QualType element = call->getType()->getPointeeType().getCanonicalType();
    if (t.dtype == ir::DType::Other && // uint8, int8 (masks); other dtypes not modelled
        !element->isVoidType() &&
        (!element->isIntegerType() ||
         context_->getTypeSizeInChars(element).getQuantity() != 1))
      not_followed(call, fmt::format("data pointer of a tensor of a dtype shardproof "
                                     "does not model, as '{}'",
                                     element.getAsString()));
    if (!element->isVoidType()) {
      bool real = element->isRealFloatingType();
      std::int64_t bytes = context_->getTypeSizeInChars(element).getQuantity();
      bool matches = bytes == element_bytes(t.dtype) &&
                     (real || element->isRecordType()) == floating(t.dtype);
      if (!matches)
        throw Rejecting{loc(call),
                        fmt::format("expected scalar type {} but found {}",
                                    element.getAsString(), ir::dtype_name(t.dtype))};
    }
    return HostValue::pointer_into(t.storage, t.offset);
  }

  HostValue options_method(const clang::CXXMemberCallExpr *call, HostValue options,
                           const std::string &name) {
    if (name == "dtype" && call->getNumArgs() == 1) {
      options.dtype = dtype_of(call->getArg(0));
      options.i = 1; // set
      return options;
    }
    if (name == "dtype")
      return scalar_type_value(options.dtype, call->getType(), call);
    if (name == "device" || name == "layout" || name == "requires_grad")
      return options;
    not_followed(call, fmt::format("at::TensorOptions::{}", name));
  }

  // IntArrayRef's size, equals and slice; nullopt for another method.
  std::optional<HostValue> list_method(const clang::CXXMemberCallExpr *call,
                                       const HostValue &list, const std::string &name) {
    auto n = static_cast<std::int64_t>(list.items.size());
    if (name == "size")
      return HostValue::integer(n);
    if (name == "empty")
      return HostValue::integer(n == 0);
    if (name == "equals" && call->getNumArgs() == 1) {
      HostValue other = eval(call->getArg(0));
      if (other.kind != HostValue::Kind::List || other.items.size() != list.items.size())
        return HostValue::integer(0);
      for (std::size_t k = 0; k < list.items.size(); ++k)
        if (integer(list.items[k], call) != integer(other.items[k], call))
          return HostValue::integer(0);
      return HostValue::integer(1);
    }
    if (name == "slice" && call->getNumArgs() >= 1) {
      std::int64_t start = integer(eval(call->getArg(0)), call->getArg(0));
      std::int64_t length = call->getNumArgs() > 1
                                ? integer(eval(call->getArg(1)), call->getArg(1))
                                : n - start;
      if (start < 0 || length < 0 || start + length > n)
        throw Rejecting{loc(call), "ArrayRef: invalid slice"};
      HostValue out{HostValue::Kind::List};
      out.items.assign(list.items.begin() + start, list.items.begin() + start + length);
      return out;
    }
    return std::nullopt;
  }

  // *t and t-> of a std::optional<at::Tensor> (or a pointer to a tensor):
  // the tensor; nullopt for another operator.
  std::optional<HostValue> tensor_access(const clang::CallExpr *call) {
    const auto *op = llvm::dyn_cast<clang::CXXOperatorCallExpr>(call);
    if (!op || !definitions_ || op->getNumArgs() != 1 ||
        (op->getOperator() != clang::OO_Star && op->getOperator() != clang::OO_Arrow))
      return std::nullopt;
    HostValue v = eval(op->getArg(0));
    if (v.kind == HostValue::Kind::Tensor)
      return v;
    if (v.kind == HostValue::Kind::Nothing)
      throw Rejecting{loc(call), "bad optional access (it holds no tensor)"};
    return std::nullopt;
  }

  // `t = u` of a class type (at::Tensor, its options) in an extension
  // call: the local variable t now holds u; nullopt for another operator.
  std::optional<HostValue> class_assignment(const clang::CallExpr *call) {
    const auto *op = llvm::dyn_cast<clang::CXXOperatorCallExpr>(call);
    if (!op || !definitions_ || op->getOperator() != clang::OO_Equal ||
        op->getNumArgs() != 2)
      return std::nullopt;
    HostValue value = eval(op->getArg(1));
    HostValue &target = variable(op->getArg(0));
    target = value;
    return target;
  }

  // IntArrayRef's or a vector's operator[].
  std::optional<HostValue> list_subscript(const clang::CallExpr *call) {
    const auto *op = llvm::dyn_cast<clang::CXXOperatorCallExpr>(call);
    if (!op || op->getOperator() != clang::OO_Subscript || op->getNumArgs() != 2)
      return std::nullopt;
    HostValue list = eval(op->getArg(0));
    if (list.kind != HostValue::Kind::List)
      return std::nullopt;
    std::int64_t k = integer(eval(op->getArg(1)), op->getArg(1));
    if (k < 0 || k >= static_cast<std::int64_t>(list.items.size()))
      not_followed(call, "index past the end of a list");
    return list.items[k];
  }

  // ATen's factories and queries, by name (the stand-in headers declare
  // them); nullopt for another function.
  std::optional<HostValue> tensor_function(const clang::CallExpr *call,
                                           const clang::FunctionDecl &callee) {
    if (!definitions_)
      return std::nullopt;
    std::string name = callee.getQualifiedNameAsString();
    auto options_dtype = [&](unsigned k, std::optional<ir::DType> otherwise) {
      if (k >= call->getNumArgs() || llvm::isa<clang::CXXDefaultArgExpr>(call->getArg(k)))
        return otherwise.value_or(ir::DType::Float32);
      HostValue options = eval(call->getArg(k));
      if (options.kind != HostValue::Kind::Options)
        not_followed(call, "tensor options that are not modelled");
      return options.i || !otherwise ? options.dtype : *otherwise;
    };
    auto tensor_arg = [&](unsigned k) -> const TensorState & {
      HostValue v = eval(call->getArg(k));
      if (v.kind != HostValue::Kind::Tensor)
        not_followed(call, fmt::format("'{}' of something other than a tensor", name));
      return tensors_[v.i];
    };
    if (name == "at::numel" && call->getNumArgs() == 1)
      return HostValue::integer(numel(tensor_arg(0)));
    if (name == "at::device_of") // for a device guard: every tensor is on the one GPU
      return HostValue{};
    HostStorage::Init init = HostStorage::Init::Empty;
    if (name == "at::zeros_like" || name == "at::zeros")
      init = HostStorage::Init::Zeros;
    if (name == "at::ones_like" || name == "at::ones")
      init = HostStorage::Init::Ones;
    if (name == "at::empty_like" || name == "at::zeros_like" || name == "at::ones_like") {
      TensorState like = tensor_arg(0);
      return new_storage_tensor(init, options_dtype(1, like.dtype), like.sizes, call);
    }
    if (name == "at::empty" || name == "at::zeros" || name == "at::ones") {
      HostValue sizes = eval(call->getArg(0));
      ir::Shape shape;
      for (const HostValue &size : sizes.items)
        shape.push_back(integer(size, call->getArg(0)));
      if (sizes.kind != HostValue::Kind::List)
        not_followed(call, "sizes that are not a list of integers");
      return new_storage_tensor(init, options_dtype(1, std::nullopt), shape, call);
    }
    return std::nullopt;
  }

  // --- device queries: the reference device's answers ----------------------

  // ATen's getCurrentDeviceProperties() / getDeviceProperties(d), the
  // runtime's cudaGetDeviceProperties(&prop, d) and
  // cudaDeviceGetAttribute(&value, attr, d); nullopt for other calls.
  std::optional<HostValue> device_query(const clang::CallExpr *call) {
    const clang::FunctionDecl *callee = call->getDirectCallee();
    if (!callee)
      return std::nullopt;
    std::string name = callee->getNameAsString();
    HostValue device{HostValue::Kind::Device};
    if (name == "getCurrentDeviceProperties" || name == "getDeviceProperties")
      return device;
    if ((name == "cudaGetDeviceProperties" || name == "cudaGetDeviceProperties_v2") &&
        call->getNumArgs() == 2) {
      output(call->getArg(0)) = device;
      return HostValue::integer(0); // cudaSuccess
    }
    if (name == "cudaDeviceGetAttribute" && call->getNumArgs() == 3) {
      output(call->getArg(0)) = device_attribute_value(call->getArg(1));
      return HostValue::integer(0);
    }
    return std::nullopt;
  }

  // The variable a query's `&variable` argument names.
  HostValue &output(const clang::Expr *arg) {
    const auto *address =
        llvm::dyn_cast<clang::UnaryOperator>(arg->IgnoreParenImpCasts());
    if (!address || address->getOpcode() != clang::UO_AddrOf)
      not_followed(arg, "device query with an output that is not '&variable'");
    return variable(address->getSubExpr());
  }

  HostValue device_attribute_value(const clang::Expr *attr) {
    const auto *ref = llvm::dyn_cast<clang::DeclRefExpr>(attr->IgnoreParenImpCasts());
    const auto *enumerator =
        ref ? llvm::dyn_cast<clang::EnumConstantDecl>(ref->getDecl()) : nullptr;
    if (!enumerator)
      not_followed(attr, "device attribute that is not a cudaDevAttr enumerator");
    auto value = device_attribute(enumerator->getName());
    if (!value)
      not_followed(attr,
                   fmt::format("device attribute '{}', which the reference device "
                               "({}) does not give",
                               enumerator->getName().str(), reference_device_name()));
    return HostValue::integer(*value);
  }

  HostValue device_field(const clang::MemberExpr *member, const std::string &field) {
    if (auto triple = device_property_triple(field)) {
      HostValue out{HostValue::Kind::Dim3};
      out.dim = *triple;
      return out;
    }
    if (auto value = device_property(field))
      return HostValue::integer(wrap(*value, member->getType()));
    not_followed(member, fmt::format("device property '{}', which the reference device "
                                     "({}) does not give",
                                     field, reference_device_name()));
  }

  void record_launch(const clang::CUDAKernelCallExpr *launch) {
    const clang::FunctionDecl *kernel = launch->getDirectCallee();
    if (!kernel || !kernel->getDefinition())
      not_followed(launch, "launch of a kernel it does not define");
    kernel = kernel->getDefinition();
    const clang::CallExpr *config = launch->getConfig();
    auto dims = [&](unsigned k) {
      HostValue v = eval(config->getArg(k));
      if (v.kind == HostValue::Kind::Int) { // an integer converted to dim3
        HostValue d;
        d.kind = HostValue::Kind::Dim3;
        d.dim = {v.i, 1, 1};
        return d;
      }
      if (v.kind != HostValue::Kind::Dim3)
        not_followed(config->getArg(k), "launch configuration");
      return v;
    };
    HostValue grid = dims(0), block = dims(1);
    HostLaunch out;
    out.kernel = kernel->getNameAsString();
    out.loc = loc(launch);
    out.choice.template_args = template_arguments(*kernel);
    // CUDA refuses an empty grid or block (cudaErrorInvalidConfiguration) and
    // runs nothing: unless the host code checks, the memory stays as it was.
    bool empty = false;
    for (int k = 0; k < 3; ++k)
      empty = empty || grid.dim[k] == 0 || block.dim[k] == 0;
    if (empty && definitions_)
      return;
    for (int k = 0; k < 3; ++k) {
      if (grid.dim[k] <= 0 || block.dim[k] <= 0 || grid.dim[k] > INT32_MAX ||
          block.dim[k] > 1024)
        not_followed(launch, "launch with an empty or oversized grid or block");
      out.choice.grid[k] = static_cast<int>(grid.dim[k]);
      out.choice.block[k] = static_cast<int>(block.dim[k]);
    }
    if (config->getNumArgs() > 2) {
      HostValue shared = eval(config->getArg(2));
      if (shared.kind != HostValue::Kind::Int)
        not_followed(config->getArg(2), "dynamic shared memory size");
      out.choice.shared_bytes = static_cast<int>(shared.i);
    }
    for (unsigned i = 0; i < kernel->getNumParams() && i < launch->getNumArgs(); ++i) {
      HostValue v = eval(launch->getArg(i));
      const clang::ParmVarDecl *param = kernel->getParamDecl(i);
      if (v.kind == HostValue::Kind::Int && param->getType()->isIntegerType())
        out.choice.ints[param->getNameAsString()] = v.i;
      if (v.kind == HostValue::Kind::Int && param->getType()->isPointerType())
        out.null_buffer = true;
      if (definitions_)
        bind_kernel_argument(launch->getArg(i), *param, v, out);
    }
    std::string callee = out.kernel;
    if (!out.choice.template_args.empty())
      callee += "<" + fmt::format("{}", fmt::join(out.choice.template_args, ", ")) + ">";
    file_of(*kernel).kernels[callee] = kernel;
    out.file = file_index(*kernel);
    launches_.push_back(std::move(out));
  }

  // In an extension call every kernel argument must be known: a pointer
  // into a storage (no two into one: the lifter's buffers do not alias), an
  // integer, or a floating-point value.
  void bind_kernel_argument(const clang::Expr *arg, const clang::ParmVarDecl &param,
                            const HostValue &v, HostLaunch &out) {
    clang::QualType type = param.getType().getCanonicalType();
    std::string name = param.getNameAsString();
    if (type->isPointerType() && v.kind == HostValue::Kind::Pointer && v.storage >= 0) {
      for (const auto &[other, ref] : out.buffers)
        if (ref.storage == v.storage)
          not_followed(arg, fmt::format("launch given one tensor's memory twice ('{}' "
                                        "and '{}')",
                                        other, name));
      out.buffers[name] = {v.storage, v.i};
    } else if (type->isIntegerType() && v.kind == HostValue::Kind::Int) {
    } else if (type->isRealFloatingType() && v.kind == HostValue::Kind::Real) {
      out.reals[name] = v.real;
    } else {
      not_followed(arg, fmt::format("kernel argument '{}' ({}), which is not a known "
                                    "{}",
                                    name, param.getType().getAsString(),
                                    type->isPointerType() ? "tensor's memory" : "value"));
    }
  }

  std::vector<CudaFile::Impl *> files_;
  const std::map<std::string, const clang::FunctionDecl *> *definitions_;
  const clang::ASTContext *context_ = nullptr;
  const clang::SourceManager *sources_ = nullptr;
  std::vector<TensorState> tensors_;
  std::vector<HostStorage> storages_;
  std::vector<std::unordered_map<const clang::VarDecl *, HostValue>> frames_;
  Flow flow_ = Flow::Running;
  std::int64_t steps_ = 0;
  std::vector<HostLaunch> launches_;
  struct LastSwitch {
    const clang::SwitchStmt *statement;
    std::int64_t value;
    const clang::ASTContext *context;
    const clang::SourceManager *sources;
  };
  std::optional<LastSwitch> last_switch_;
};

} // namespace

HostRun CudaFile::run_host(const std::string &callee,
                           const std::map<std::string, std::int64_t> &ints,
                           const std::set<std::string> &null_pointers) const {
  auto it = impl_->hosts.find(callee);
  if (it == impl_->hosts.end())
    return {HostRun::End::NotModelled,
            {},
            {},
            "the host function " + callee + " could not be instantiated"};
  HostInterpreter interpreter({impl_.get()});
  return interpreter.run(*it->second, ints, null_pointers);
}

ExtensionHostRun
run_extension_host(const std::vector<CudaFile::Impl *> &files,
                   const std::map<std::string, const clang::FunctionDecl *> &definitions,
                   const clang::FunctionDecl &fn, const std::vector<HostArgument> &args) {
  HostInterpreter interpreter(files, &definitions);
  return interpreter.run_extension(fn, args);
}

} // namespace shardproof::frontend::cuda

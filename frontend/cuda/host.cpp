// Running a host dispatcher at concrete sizes (issue 13): integer code,
// branches, switches over sizes, calls of the file's functions, dim3 values
// and kernel launches, which are recorded as the host computed them, never
// run. A failed assertion or a throw is the host refusing the sizes.
// Pointers and reals are opaque: a decision on one is not followed. Device
// queries answer for the reference device (device.h).
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

#include <unordered_map>

namespace shardproof::frontend::cuda {

namespace {

struct HostValue {
  // Pointer: not null. Device: the reference device's cudaDeviceProp (or a
  // pointer to it). Dim3 also holds a three-element array of it.
  enum class Kind : std::uint8_t { Opaque, Int, Dim3, Pointer, Device };
  Kind kind = Kind::Opaque;
  std::int64_t i = 0;
  std::array<std::int64_t, 3> dim{1, 1, 1};
  static HostValue integer(std::int64_t v) { return {Kind::Int, v}; }
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

class HostInterpreter {
public:
  HostInterpreter(const clang::ASTUnit &unit, CudaFile::Impl &impl)
      : context_(unit.getASTContext()), sources_(unit.getSourceManager()), impl_(impl) {}

  HostRun run(const clang::FunctionDecl &fn,
              const std::map<std::string, std::int64_t> &ints,
              const std::set<std::string> &null_pointers) {
    HostRun result;
    try {
      frames_.emplace_back();
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
        frames_.back()[param] = value;
      }
      exec(fn.getBody());
    } catch (const Returning &) {
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
      result.at = loc(last_switch_->first);
      result.switch_on = text_of(last_switch_->first->getCond());
      result.switch_value = last_switch_->second;
    }
    result.launches = std::move(launches_);
    return result;
  }

private:
  ir::SourceLoc loc(const clang::Stmt *s) const {
    return source_loc(sources_, s->getBeginLoc());
  }

  std::string text_of(const clang::Stmt *s) const {
    auto range = clang::CharSourceRange::getTokenRange(s->getSourceRange());
    return clang::Lexer::getSourceText(range, sources_, context_.getLangOpts()).str();
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
              c->getLHS()->EvaluateKnownConstInt(context_).getExtValue() == value)
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
    last_switch_ = {sw, value};
    for (auto it = start; it != children.end() && flow_ == Flow::Running; ++it)
      exec(*it);
    if (flow_ == Flow::Broken)
      flow_ = Flow::Running;
  }

  // --- expressions ----------------------------------------------------------

  HostValue &variable(const clang::Expr *e) {
    const auto *ref = llvm::dyn_cast<clang::DeclRefExpr>(e->IgnoreParenImpCasts());
    const auto *var = ref ? llvm::dyn_cast<clang::VarDecl>(ref->getDecl()) : nullptr;
    if (!var || !frames_.back().count(var))
      not_followed(e, "assignment to something other than a local variable");
    return frames_.back()[var];
  }

  HostValue eval(const clang::Expr *e) {
    step(e);
    e = e->IgnoreParens();
    if (const auto *lit = llvm::dyn_cast<clang::IntegerLiteral>(e))
      return HostValue::integer(wrap(
          static_cast<std::int64_t>(lit->getValue().getZExtValue()), lit->getType()));
    if (const auto *lit = llvm::dyn_cast<clang::CXXBoolLiteralExpr>(e))
      return HostValue::integer(lit->getValue());
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
      if (v.kind == HostValue::Kind::Dim3 && to->isRecordType())
        return v;
      return HostValue{};
    }
    if (const auto *construct = llvm::dyn_cast<clang::CXXConstructExpr>(e))
      return construct_value(construct);
    if (const auto *ref = llvm::dyn_cast<clang::DeclRefExpr>(e)) {
      if (const auto *constant = llvm::dyn_cast<clang::EnumConstantDecl>(ref->getDecl()))
        return HostValue::integer(constant->getInitVal().getSExtValue());
      if (const auto *var = llvm::dyn_cast<clang::VarDecl>(ref->getDecl())) {
        auto it = frames_.back().find(var);
        if (it != frames_.back().end())
          return it->second;
      }
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
    if (e->getType()->isIntegerType() && !e->isValueDependent() &&
        !e->HasSideEffects(context_) && e->EvaluateAsInt(folded, context_))
      return HostValue::integer(folded.Val.getInt().getExtValue());
    return HostValue{}; // a pointer, a real, a stream: opaque
  }

  HostValue construct_value(const clang::CXXConstructExpr *construct) {
    const clang::CXXRecordDecl *record = construct->getConstructor()->getParent();
    if (record->getName() != "dim3")
      return HostValue{};
    if (construct->getNumArgs() == 1 &&
        construct->getConstructor()->isCopyOrMoveConstructor())
      return eval(construct->getArg(0));
    HostValue out;
    out.kind = HostValue::Kind::Dim3;
    for (unsigned k = 0; k < std::min(3u, construct->getNumArgs()); ++k)
      out.dim[k] = integer(eval(construct->getArg(k)), construct->getArg(k));
    return out;
  }

  HostValue eval_unary(const clang::UnaryOperator *op) {
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

  HostValue eval_call(const clang::CallExpr *call) {
    const clang::FunctionDecl *callee = call->getDirectCallee();
    if (callee && (callee->isNoReturn() || callee->hasAttr<clang::NoReturnAttr>()))
      throw Rejecting{loc(call), fmt::format("it calls '{}'", callee->getNameAsString())};
    if (auto answer = device_query(call))
      return *answer;
    if (!callee || llvm::isa<clang::CXXMemberCallExpr>(call))
      return HostValue{}; // a stream, a device query: opaque
    const clang::FunctionDecl *body = callee->getDefinition();
    if (!body || !body->hasBody())
      return HostValue{};
    std::unordered_map<const clang::VarDecl *, HostValue> frame;
    unsigned first = llvm::isa<clang::CXXOperatorCallExpr>(call) ? 1 : 0;
    for (unsigned i = 0; i < body->getNumParams() && i + first < call->getNumArgs();
         ++i) {
      HostValue v = eval(call->getArg(i + first));
      const clang::ParmVarDecl *param = body->getParamDecl(i);
      frame[param] = v.kind == HostValue::Kind::Int && param->getType()->isIntegerType()
                         ? HostValue::integer(wrap(v.i, param->getType()))
                         : v;
    }
    if (frames_.size() > 64)
      not_followed(call, "recursion deeper than 64 calls");
    frames_.push_back(std::move(frame));
    Flow outer = flow_;
    flow_ = Flow::Running;
    HostValue result;
    try {
      exec(body->getBody());
    } catch (const Returning &r) {
      result = r.value;
    }
    flow_ = outer;
    frames_.pop_back();
    if (result.kind == HostValue::Kind::Int && call->getType()->isIntegerType())
      result.i = wrap(result.i, call->getType());
    return result;
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
    }
    std::string callee = out.kernel;
    if (!out.choice.template_args.empty())
      callee += "<" + fmt::format("{}", fmt::join(out.choice.template_args, ", ")) + ">";
    impl_.kernels[callee] = kernel;
    launches_.push_back(std::move(out));
  }

  const clang::ASTContext &context_;
  const clang::SourceManager &sources_;
  CudaFile::Impl &impl_;
  std::vector<std::unordered_map<const clang::VarDecl *, HostValue>> frames_;
  Flow flow_ = Flow::Running;
  std::int64_t steps_ = 0;
  std::vector<HostLaunch> launches_;
  std::optional<std::pair<const clang::SwitchStmt *, std::int64_t>> last_switch_;
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
  HostInterpreter interpreter(*impl_->unit, *impl_);
  return interpreter.run(*it->second, ints, null_pointers);
}

} // namespace shardproof::frontend::cuda

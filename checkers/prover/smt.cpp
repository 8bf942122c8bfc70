#include "checkers/prover/smt.h"

#include <nlohmann/json.hpp>
#include <z3++.h>

#include <stdexcept>
#include <unordered_map>

namespace shardproof::prover {

using terms::Op;
using terms::TermId;

namespace {
class Encoder {
public:
  Encoder(z3::context &ctx, const terms::TermStore &store) : ctx_(ctx), store_(store) {}

  z3::expr operator()(TermId term) {
    if (auto it = memo_.find(term); it != memo_.end())
      return it->second;
    z3::expr e = encode(term);
    memo_.emplace(term, e);
    return e;
  }

  const std::unordered_map<TermId, z3::expr> &variables() const { return vars_; }

private:
  z3::expr encode(TermId term) {
    const terms::Node &n = store_.node(term);
    switch (n.op) {
    case Op::Const: {
      const mpq_class &q = store_.const_value(term);
      return ctx_.real_val(q.get_str().c_str());
    }
    case Op::Var: {
      z3::expr v = ctx_.real_const(("v" + std::to_string(term)).c_str());
      vars_.emplace(term, v);
      return v;
    }
    case Op::Add: {
      z3::expr_vector args(ctx_);
      for (TermId a : n.args)
        args.push_back((*this)(a));
      return z3::sum(args);
    }
    case Op::Mul: {
      z3::expr product = (*this)(n.args[0]);
      for (std::size_t i = 1; i < n.args.size(); ++i)
        product = product * (*this)(n.args[i]);
      return product;
    }
    case Op::Inv: {
      z3::expr x = (*this)(n.args[0]);
      return z3::ite(x == ctx_.real_val(0), ctx_.real_val(0), ctx_.real_val(1) / x);
    }
    case Op::App: {
      auto fn = static_cast<terms::Fn>(n.payload);
      z3::func_decl f = ctx_.function(std::string(terms::fn_name(fn)).c_str(),
                                      ctx_.real_sort(), ctx_.real_sort());
      return f((*this)(n.args[0]));
    }
    case Op::Lt:
      return (*this)(n.args[0]) < (*this)(n.args[1]);
    case Op::Le:
      return (*this)(n.args[0]) <= (*this)(n.args[1]);
    case Op::Max:
    case Op::Min: {
      z3::expr best = (*this)(n.args[0]);
      for (std::size_t i = 1; i < n.args.size(); ++i) {
        z3::expr x = (*this)(n.args[i]);
        best = n.op == Op::Max ? z3::ite(best < x, x, best) : z3::ite(x < best, x, best);
      }
      return best;
    }
    case Op::Ite:
      return z3::ite((*this)(n.args[0]), (*this)(n.args[1]), (*this)(n.args[2]));
    case Op::Ext:
      // The prover decides extended elements before the solver runs; a real
      // cannot stand for one.
      throw std::logic_error("an extended value reached the solver");
    }
    return ctx_.real_val(0);
  }

  z3::context &ctx_;
  const terms::TermStore &store_;
  std::unordered_map<TermId, z3::expr> memo_;
  std::unordered_map<TermId, z3::expr> vars_;
};

// Exact for rationals; algebraic numbers (roots from nonlinear models) are
// rounded to 20 decimals, and the caller re-checks the model concretely anyway.
mpq_class numeral_to_mpq(const z3::expr &value) {
  if (value.is_numeral() && !value.is_algebraic())
    return mpq_class(Z3_get_numeral_string(value.ctx(), value));
  std::string text = value.get_decimal_string(20);
  if (!text.empty() && text.back() == '?')
    text.pop_back();
  auto dot = text.find('.');
  if (dot == std::string::npos)
    return mpq_class(text);
  std::string digits = text.substr(0, dot) + text.substr(dot + 1);
  mpq_class result(digits);
  mpz_class scale;
  mpz_ui_pow_ui(scale.get_mpz_t(), 10, text.size() - dot - 1);
  result /= scale;
  result.canonicalize();
  return result;
}
} // namespace

SmtAnswer find_disequality(const terms::TermStore &store,
                           std::span<const std::pair<TermId, TermId>> pairs,
                           unsigned timeout_ms) {
  z3::context ctx;
  z3::solver solver(ctx);
  z3::params params(ctx);
  params.set("timeout", timeout_ms);
  solver.set(params);
  Encoder encode(ctx, store);
  z3::expr_vector differs(ctx);
  for (const auto &[lhs, rhs] : pairs)
    differs.push_back(encode(lhs) != encode(rhs));
  solver.add(z3::mk_or(differs));

  SmtAnswer answer;
  switch (solver.check()) {
  case z3::unsat:
    answer.result = SmtAnswer::Result::Unsat;
    break;
  case z3::sat: {
    answer.result = SmtAnswer::Result::Sat;
    z3::model model = solver.get_model();
    for (const auto &[term, var] : encode.variables())
      answer.model.emplace_back(term, numeral_to_mpq(model.eval(var, true)));
    break;
  }
  case z3::unknown:
    answer.result = SmtAnswer::Result::Unknown;
    answer.reason = solver.reason_unknown();
    break;
  }
  return answer;
}

std::string encode_answer(const SmtAnswer &answer) {
  nlohmann::json j;
  j["result"] = static_cast<int>(answer.result);
  j["reason"] = answer.reason;
  auto &model = j["model"] = nlohmann::json::array();
  for (const auto &[term, value] : answer.model)
    model.push_back({term, value.get_str()});
  return j.dump();
}

SmtAnswer decode_answer(const std::string &text) {
  auto j = nlohmann::json::parse(text);
  SmtAnswer answer;
  answer.result = static_cast<SmtAnswer::Result>(j.at("result").get<int>());
  answer.reason = j.at("reason").get<std::string>();
  for (const auto &entry : j.at("model"))
    answer.model.emplace_back(entry.at(0).get<TermId>(),
                              mpq_class(entry.at(1).get<std::string>()));
  return answer;
}

} // namespace shardproof::prover

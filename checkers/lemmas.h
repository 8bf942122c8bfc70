// Modular proofs (Scalify/TrainVerify style). A value whose layout has been
// proved, such as what a module returns, is replaced on every side by fresh
// variables: rank r's elements by the variables of the reference elements
// its layout says they hold. Later obligations then see a module's output as
// an input, whatever computed it, and stay small. Obligations equal up to a
// renaming of variables (identical layers with their own weights) are proved
// once.
//
// Sound because every replaced term provably has the value its variable
// stands for: a proof for all values of the variables covers the values they
// actually have. The converse does not hold (abstraction forgets how a value
// was made), so an abstracted obligation that is not proved is proved again
// whole; only the whole obligation can be refuted.
#pragma once

#include "checkers/layout.h"

#include <string>
#include <unordered_map>

namespace shardproof::checkers {

class Lemmas {
public:
  explicit Lemmas(terms::TermStore &store) : store_(store), abstraction_(store) {}

  // Records that `value` has `layout` (proved), naming its variables after
  // `what` ("layers.0 output 0"). Replicated and sharded layouts only.
  void add(const DistributedValue &value, const Layout &layout, const std::string &what);

  // Whether every element of `value` is already replaced.
  bool abstracted(const DistributedValue &value) const;

  // `eq` with every proved value replaced by its variables.
  LayoutEquation abstract(const LayoutEquation &eq);

  // The obligation (by name) that proved an equation with this alpha_key.
  const std::string *proved_as(const std::string &key) const;
  void remember(const std::string &key, const std::string &obligation);

  bool empty() const { return added_ == 0; }

private:
  bool replaceable(TermId term) const;

  terms::TermStore &store_;
  terms::Substitution abstraction_;
  std::unordered_map<std::string, std::string> proved_;
  std::size_t added_ = 0;
};

} // namespace shardproof::checkers

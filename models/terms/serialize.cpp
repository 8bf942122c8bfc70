#include "models/terms/serialize.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <unordered_map>

namespace shardproof::terms {

namespace {
// Names and origins hold spaces; a line keeps them by percent-escaping.
std::string escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '%' || c == ' ' || c == '\n' || c == '\t')
      out += fmt::format("%{:02x}", static_cast<unsigned char>(c));
    else
      out += c;
  }
  return out.empty() ? "%" : out;
}

std::string unescape(std::string_view text) {
  if (text == "%")
    return {};
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size())
      throw TermFormatError("a '%' escape is cut short");
    out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
    i += 2;
  }
  return out;
}

std::vector<TermId> reachable(const TermStore &store, std::span<const TermId> roots) {
  std::vector<char> seen(store.size(), 0);
  std::vector<TermId> todo(roots.begin(), roots.end()), out;
  while (!todo.empty()) {
    TermId t = todo.back();
    todo.pop_back();
    if (seen[t])
      continue;
    seen[t] = 1;
    out.push_back(t);
    for (TermId a : store.node(t).args)
      todo.push_back(a);
  }
  // Interning builds children first: ids ascend from leaves to roots.
  std::sort(out.begin(), out.end());
  return out;
}
} // namespace

void write_terms(const TermStore &store,
                 std::span<const std::pair<std::string, std::vector<TermId>>> lists,
                 std::ostream &out) {
  std::vector<TermId> roots;
  for (const auto &[name, ids] : lists)
    roots.insert(roots.end(), ids.begin(), ids.end());
  for (TermId t : reachable(store, roots)) {
    const Node &n = store.node(t);
    switch (n.op) {
    case Op::Const:
      out << fmt::format("c {} {}\n", t, store.const_value(t).get_str());
      continue;
    case Op::Var: {
      const Variable &v = store.variable(t);
      out << fmt::format("v {} {} {} {}\n", t, static_cast<int>(v.kind), escape(v.name),
                         escape(v.origin));
      continue;
    }
    default:
      out << fmt::format("n {} {} {}", t, static_cast<int>(n.op), n.payload);
      for (TermId a : n.args)
        out << ' ' << a;
      out << '\n';
    }
  }
  for (const auto &[name, ids] : lists) {
    out << "= " << escape(name);
    for (TermId t : ids)
      out << ' ' << t;
    out << '\n';
  }
}

const std::vector<TermId> &TermLists::operator[](std::string_view name) const {
  for (const auto &[n, ids] : lists)
    if (n == name)
      return ids;
  throw TermFormatError(fmt::format("no list named '{}'", name));
}

namespace {
TermId rebuild(TermStore &store, Op op, std::uint32_t payload,
               const std::vector<TermId> &args) {
  auto need = [&](std::size_t n) {
    if (args.size() != n)
      throw TermFormatError(fmt::format("expected {} arguments, got {}", n, args.size()));
  };
  switch (op) {
  case Op::Add:
    return store.add(args);
  case Op::Mul:
    return store.mul(args);
  case Op::Inv:
    need(1);
    return store.inv(args[0]);
  case Op::App:
    need(1);
    return store.app(static_cast<Fn>(payload), args[0]);
  case Op::Lt:
    need(2);
    return store.lt(args[0], args[1]);
  case Op::Le:
    need(2);
    return store.le(args[0], args[1]);
  case Op::Ite:
    need(3);
    return store.ite(args[0], args[1], args[2]);
  case Op::Max:
  case Op::Min:
    return store.lattice(op, args);
  case Op::Ext:
    return store.extended(static_cast<Extended>(payload));
  case Op::Const:
  case Op::Var:
    break;
  }
  throw TermFormatError(fmt::format("unknown operation {}", static_cast<int>(op)));
}
} // namespace

TermLists read_terms(std::istream &in, TermStore &store) {
  std::unordered_map<TermId, TermId> local; // id in the file -> id in store
  auto resolve = [&](TermId id) {
    auto it = local.find(id);
    if (it == local.end())
      throw TermFormatError(fmt::format("term {} is used before it is defined", id));
    return it->second;
  };
  TermLists out;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    try {
      std::istringstream fields(line);
      std::string kind;
      fields >> kind;
      if (kind.empty() || kind[0] == '#')
        continue;
      if (kind == "=") {
        std::string name;
        fields >> name;
        std::vector<TermId> ids;
        for (TermId id; fields >> id;)
          ids.push_back(resolve(id));
        out.lists.emplace_back(unescape(name), std::move(ids));
        continue;
      }
      TermId id;
      if (!(fields >> id))
        throw TermFormatError("no term id");
      if (kind == "c") {
        std::string value;
        fields >> value;
        local[id] = store.constant(mpq_class(value));
      } else if (kind == "v") {
        int var_kind;
        std::string name, origin;
        fields >> var_kind >> name >> origin;
        local[id] =
            store.var(unescape(name), static_cast<VarKind>(var_kind), unescape(origin));
      } else if (kind == "n") {
        int op;
        std::uint32_t payload;
        if (!(fields >> op >> payload))
          throw TermFormatError("no operation");
        std::vector<TermId> args;
        for (TermId a; fields >> a;)
          args.push_back(resolve(a));
        local[id] = rebuild(store, static_cast<Op>(op), payload, args);
      } else {
        throw TermFormatError(fmt::format("unknown line kind '{}'", kind));
      }
    } catch (const std::invalid_argument &e) {
      throw TermFormatError(fmt::format("line {}: {}", number, e.what()));
    } catch (const TermFormatError &e) {
      throw TermFormatError(fmt::format("line {}: {}", number, e.what()));
    }
  }
  return out;
}

} // namespace shardproof::terms

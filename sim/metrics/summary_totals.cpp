// The declared counters' totals (summary_totals()): the fields of EngineStats and RequestRecord
// declared with a Total, summed (or maxed) over a run's replicas and requests into /summary.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/metrics/summary.h"

namespace kvfleet::sim {

namespace {

// The declared fields that total, of one struct, with their getters.
template <class Rec>
std::vector<DeclaredField<Rec>> totalling(void (*declare)(FieldList<Rec>&)) {
  FieldList<Rec> l;
  declare(l);
  std::vector<DeclaredField<Rec>> out;
  for (auto& f : l.fields)
    if (f.decl.total != Total::kNone) out.push_back(std::move(f));
  return out;
}
const std::vector<DeclaredField<EngineStats>>& replica_totalling() {
  static const auto v = totalling<EngineStats>(&EngineStats::declare<FieldList<EngineStats>>);
  return v;
}
const std::vector<DeclaredField<RequestRecord>>& request_totalling() {
  static const auto v =
      totalling<RequestRecord>(&RequestRecord::declare_counters<FieldList<RequestRecord>>);
  return v;
}

// Adds `x` into a total kept `how` (a largest starts at -inf; NaN rows are left out of it).
void accumulate(double& into, double x, Total how) {
  if (how != Total::kMax)
    into += x;
  else if (x > into)
    into = x;
}

std::string label_of(const std::string& name, const char* label) {
  if (*label) return label;
  std::string words = name;
  std::replace(words.begin(), words.end(), '_', ' ');
  return words;
}

}  // namespace

bool request_in_pool(const RunResult& r, const RequestRecord& q, int pool,
                     const std::string& pool_name) {
  return pool < 0 || q.pool == pool ||
         (q.prefill_replica >= 0 &&
          r.replicas[static_cast<std::size_t>(q.prefill_replica)].pool == pool_name);
}

std::vector<std::pair<std::string, double>> declared_totals(const RunResult& r, int pool) {
  const std::string pool_name = pool >= 0 ? r.pools.at(static_cast<std::size_t>(pool)).name : "";
  const auto& reps = replica_totalling();
  const auto& reqs = request_totalling();
  std::vector<double> v(reps.size() + reqs.size(), 0.0);
  for (std::size_t k = 0; k < v.size(); ++k)
    if (summary_totals()[k].how == Total::kMax) v[k] = -std::numeric_limits<double>::infinity();
  for (const auto& rep : r.replicas)
    if (pool < 0 || rep.pool == pool_name)
      for (std::size_t k = 0; k < reps.size(); ++k)
        accumulate(v[k], reps[k].get(rep.stats), reps[k].decl.total);
  for (const auto& q : r.requests)
    if (request_in_pool(r, q, pool, pool_name))
      for (std::size_t k = 0; k < reqs.size(); ++k)
        accumulate(v[reps.size() + k], reqs[k].get(q), reqs[k].decl.total);
  std::vector<std::pair<std::string, double>> out;
  for (std::size_t k = 0; k < v.size(); ++k)  // the largest of no rows is 0, as a sum of none
    out.push_back({summary_totals()[k].name, std::isinf(v[k]) && v[k] < 0 ? 0.0 : v[k]});
  return out;
}

const std::vector<SummaryTotal>& summary_totals() {
  static const std::vector<SummaryTotal> v = [] {
    std::vector<SummaryTotal> out;
    auto add = [&](const auto& fields, bool per_replica, const char* over) {
      for (const auto& f : fields)
        out.push_back(
            {f.name, f.decl.unit,
             std::string(f.decl.desc) + (f.decl.total == Total::kMax
                                             ? ", the most of any " + std::string(over)
                                             : ", summed over " + std::string(over) + "s"),
             label_of(f.name, f.decl.label), f.integer, per_replica, f.decl.total});
    };
    add(replica_totalling(), true, "replica");
    add(request_totalling(), false, "request");
    return out;
  }();
  return v;
}

double Summary::total(const std::string& name) const {
  for (const auto& [k, v] : totals)
    if (k == name) return v;
  for (const auto& t : summary_totals())
    if (t.name == name) return 0;  // declared, not yet summed
  throw std::logic_error("Summary::total: '" + name + "' is not a declared total");
}

}  // namespace kvfleet::sim

#include "sim/output/run_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "sim/core/error.h"
#include "sim/io/h5.h"
#include "sim/io/table.h"
#include "sim/output/results.h"

namespace kvfleet::sim {

namespace {

// A text or categorical column as names (an integer column as its numbers, older files).
std::vector<std::string> names(const Table& t, const std::string& table, const std::string& name,
                               const std::string& path) {
  const Column* c = t.find(name);
  if (!c) throw InputError(path, table + "." + name, "column is missing");
  if (auto* s = std::get_if<std::vector<std::string>>(&c->data)) return *s;
  std::vector<std::string> out;
  if (auto* k = std::get_if<Categorical>(&c->data)) {
    for (std::size_t r = 0; r < k->size(); ++r) out.push_back(k->name(r));
  } else if (auto* i = std::get_if<std::vector<std::int64_t>>(&c->data)) {
    for (auto v : *i) out.push_back(std::to_string(v));
  } else {
    throw InputError(path, table + "." + name, "is not text");
  }
  return out;
}

// Pool names by index: /replicas lists replicas pool by pool.
std::vector<std::string> pools_in_order(const std::vector<std::string>& replica_pools) {
  std::vector<std::string> out;
  for (const auto& p : replica_pools)
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  return out;
}

void read_tables(hid_t file, const std::string& path, RunData& d) {
  const Table rp = h5::read_table(file, "replicas");
  const auto rep_names = names(rp, "replicas", "replica", path);
  const auto rep_pools = names(rp, "replicas", "pool", path);
  d.pools = pools_in_order(rep_pools);
  const Table rq = h5::read_table(file, "requests");
  const auto arrival = column_numbers(rq, "arrival_s", path, "requests");
  const auto ttft = column_numbers(rq, "ttft_s", path, "requests");
  const auto tpot = column_numbers(rq, "tpot_s", path, "requests");
  const auto e2e = column_numbers(rq, "e2e_s", path, "requests");
  const auto input = column_numbers(rq, "input_tokens", path, "requests");
  const auto cached = column_numbers(rq, "cached_tokens", path, "requests");
  const auto scheduled = column_numbers(rq, "first_scheduled_s", path, "requests");
  const auto outcome = names(rq, "requests", "outcome", path);
  auto pool = names(rq, "requests", "pool", path);
  // Files of kvfleet before categorical columns hold the pool's index: its name by index.
  if (const Column* c = rq.find("pool");
      c && std::holds_alternative<std::vector<std::int64_t>>(c->data)) {
    const auto& codes = std::get<std::vector<std::int64_t>>(c->data);
    for (std::size_t i = 0; i < codes.size(); ++i)
      if (codes[i] >= 0 && static_cast<std::size_t>(codes[i]) < d.pools.size())
        pool[i] = d.pools[codes[i]];
  }
  d.requests.reserve(arrival.size());
  for (std::size_t i = 0; i < arrival.size(); ++i) {
    d.requests.push_back({arrival[i], ttft[i], tpot[i], e2e[i], input[i], cached[i],
                          outcome[i] == "ok", std::isfinite(scheduled[i]), pool[i]});
  }
  std::map<std::string, std::string> pool_of, by_flat_name;
  for (std::size_t i = 0; i < rep_names.size(); ++i) {
    pool_of[rep_names[i]] = rep_pools[i];
    by_flat_name[timeseries_name(rep_names[i])] = rep_names[i];  // the group's member name
  }
  if (h5::has_link(file, "timeseries")) {
    const h5::H5 group{h5::check_id(H5Gopen2(file, "timeseries", H5P_DEFAULT), "timeseries"),
                       H5Gclose};
    for (const auto& member : h5::group_members(file, "timeseries")) {
      const Table ts = h5::read_table(group.id, member.c_str());
      const std::string where = "timeseries/" + member;
      RunData::Replica r;
      // The name as /replicas spells it: the attribute, or (older files) the member's name
      // mapped back.
      r.name = h5::read_text_attribute(group.id, member.c_str(), "replica",
                                       by_flat_name.count(member) ? by_flat_name[member] : member);
      r.pool = pool_of.count(r.name) ? pool_of[r.name] : r.name;
      r.t_s = column_numbers(ts, "t_s", path, where);
      r.kv_usage = column_numbers(ts, "kv_cache_usage_perc", path, where);
      r.running = column_numbers(ts, "num_requests_running", path, where);
      r.waiting = column_numbers(ts, "num_requests_waiting", path, where);
      r.generation_tokens = column_numbers(ts, "generation_tokens_total", path, where);
      r.compute = column_numbers(ts, "compute_utilization", path, where);
      r.bandwidth = column_numbers(ts, "memory_bandwidth_utilization", path, where);
      d.replicas.push_back(std::move(r));
    }
    // In the order of /replicas (the group lists names alphabetically: h100_10 before h100_2).
    std::map<std::string, std::size_t> order;
    for (std::size_t i = 0; i < rep_names.size(); ++i) order[rep_names[i]] = i;
    std::stable_sort(d.replicas.begin(), d.replicas.end(), [&](const auto& a, const auto& b) {
      return (order.count(a.name) ? order[a.name] : 1u << 30) <
             (order.count(b.name) ? order[b.name] : 1u << 30);
    });
  }
}

}  // namespace

RunData read_run_file(const std::string& path) {
  const h5::H5 file = h5::open_for_reading(path, "run results");
  if (!h5::has_link(file.id, "requests")) {
    throw InputError(path, "requests",
                     h5::has_link(file.id, "points")
                         ? "this is a sweep file: plot it with --x and --y"
                         : "dataset missing: not a run's result file (kvfleet run --out)");
  }
  RunData d;
  try {
    const YAML::Node sc = YAML::Load(h5::read_string_dataset(file.id, "scenario"));
    if (sc["name"]) d.title = sc["name"].as<std::string>();
    if (sc["simulation"] && sc["simulation"]["timeseries_interval_s"])
      d.sample_interval_s = sc["simulation"]["timeseries_interval_s"].as<double>();
    if (const YAML::Node a = sc["alerts"]) {
      std::string slo;
      for (const char* k : {"ttft", "tpot"}) {
        const std::string key = std::string("slo_") + k + "_p99_s";
        if (a[key] && a[key].as<double>() > 0)
          slo +=
              (slo.empty() ? "" : ",") + std::string(k) + "_p99=" + a[key].as<std::string>() + "s";
      }
      if (!slo.empty()) d.scenario_slo = slo;
    }
  } catch (const std::exception&) {
    // A file without a readable scenario still plots; the title and SLO are then unknown.
  }
  try {
    read_tables(file.id, path, d);
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {  // HDF5: a dataset missing or of the wrong shape
    throw InputError(path, "", e.what());
  }
  return d;
}

}  // namespace kvfleet::sim

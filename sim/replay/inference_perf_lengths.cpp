// inference-perf: the lengths its client measured and its timeout (inference_perf_detail.h).
#include "sim/replay/inference_perf_detail.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/core/error.h"
#include "sim/io/json.h"
#include "sim/replay/bench_detail.h"

namespace kvfleet::sim::bench_detail {

using json = nlohmann::json;

// A YAML boolean as inference-perf's pydantic config reads it (true/false, yes/no, on/off, 1/0,
// any case); `dflt` when absent or null.
bool yaml_bool(const YAML::Node& n, const std::string& where, const std::string& key, bool dflt) {
  if (!n || n.IsNull()) return dflt;
  if (n.IsScalar()) {
    std::string v = n.Scalar();
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    if (v == "true" || v == "yes" || v == "on" || v == "1" || v == "y") return true;
    if (v == "false" || v == "no" || v == "off" || v == "0" || v == "n") return false;
  }
  throw InputError(
      where, key,
      "must be true or false, not '" + (n.IsScalar() ? n.Scalar() : "a collection") + "'");
}

// The number at `n` (config key `key`), from lo to hi.
double number_at(const std::string& where, const YAML::Node& n, const std::string& key, double lo,
                 double hi) {
  try {
    const double v = n.as<double>();
    if (std::isfinite(v) && v >= lo && v <= hi) return v;
  } catch (const YAML::Exception&) {
  }
  throw InputError(where, key, "must be a number from " + fmt("%g", lo) + " to " + fmt("%g", hi));
}

namespace {

// ---- what the client measured of the requests' lengths ---------------------------------------

// The mean of a kvfleet length distribution as the workload writes it.
double dist_mean(const YAML::Node& d) {
  const std::string impl = d["impl"].as<std::string>();
  if (impl == "fixed") return d["value"].as<double>();
  if (impl == "uniform") return (d["min"].as<double>() + d["max"].as<double>()) / 2;
  return d["mean"].as<double>();
}

void scale_dist(YAML::Node d, double r) {
  auto sc = [&](const char* k) {
    if (d[k]) d[k] = std::max(1.0, std::round(d[k].as<double>() * r));
  };
  sc("value"), sc("min"), sc("max");
  if (d["mean"]) d["mean"] = std::max(1.0, d["mean"].as<double>() * r);
}

// A length the client recorded: its mean and which key.
struct MeasuredLength {
  double mean = NAN;
  std::string key;
};

MeasuredLength measured_length(const json& report, const std::string& where,
                               std::initializer_list<const char*> keys) {
  const JsonObject root(report, where);
  const auto succ = root.object("successes");
  if (!succ) return {};
  for (const char* k : keys)
    if (const auto d = succ->object(k))
      if (const auto m = d->number("mean", 0, 1e9); m && *m > 0)
        return {*m, where + " successes." + k + ".mean"};
  return {};
}

}  // namespace

// Sets the workload's prompt and output lengths to what the run measured: the server's counts
// (prompt_tokens, output_tokens) where the files have them, else the client tokenizer's
// (prompt_len, BOS and re-tokenisation included, which the server sees too). `prompt_parts`
// are the workload keys that make up a prompt, scaled together.
void measured_lengths(const json& report, const std::string& where, const YAML::Node& cfg,
                      const std::string& cfg_where, YAML::Node wl,
                      const std::vector<std::string>& prompt_parts, const std::string& output_key,
                      BenchReplay& plan) {
  const MeasuredLength p = measured_length(report, where, {"prompt_tokens", "prompt_len"});
  if (std::isfinite(p.mean)) {
    double configured = 0;
    for (const auto& k : prompt_parts) configured += dist_mean(wl[k]);
    const double r = p.mean / configured;
    for (const auto& k : prompt_parts) scale_dist(wl[k], r);
    plan.settings.push_back(
        {"workload prompt length (mean)", fmt("%.1f", p.mean) + " tokens",
         p.key + (std::fabs(r - 1) > 1e-9 ? " (config.yaml asks " + fmt("%.1f", configured) +
                                                ": lengths scaled by " + fmt("%.4f", r) + ")"
                                          : "")});
  } else {
    plan.notes.push_back("WARNING: " + where +
                         " records no prompt lengths: the prompts are config.yaml's lengths");
  }
  const MeasuredLength out = measured_length(report, where, {"output_tokens"});
  const bool ignore_eos =
      cfg["server"] && cfg["server"].IsMap() &&
      yaml_bool(cfg["server"]["ignore_eos"], cfg_where, "server.ignore_eos", false);
  MeasuredLength use = out;
  if (!std::isfinite(use.mean) && !ignore_eos) use = measured_length(report, where, {"output_len"});
  if (std::isfinite(use.mean)) {
    const double configured = dist_mean(wl[output_key]);
    const double r = use.mean / configured;
    scale_dist(wl[output_key], r);
    plan.settings.push_back(
        {"workload output length (mean)", fmt("%.1f", use.mean) + " tokens",
         use.key + (std::fabs(r - 1) > 1e-9 ? " (config.yaml asks " + fmt("%.1f", configured) +
                                                  ": lengths scaled by " + fmt("%.4f", r) + ")"
                                            : "")});
  } else if (ignore_eos) {
    plan.settings.push_back({"workload output length", "config.yaml's",
                             cfg_where + " server.ignore_eos: true (the server generated them "
                                         "all; the client's output_len counts its own tokens)"});
  }
}

// The client's timeout: load.request_timeout, where null or 0 and an inference-perf without the
// key leave aiohttp's default total timeout of 300 s.
void client_timeout(const YAML::Node& cfg, const std::string& cfg_where, YAML::Node& sc,
                    BenchReplay& plan) {
  const YAML::Node load = cfg["load"];
  const YAML::Node t = load ? load["request_timeout"] : YAML::Node();
  double s = 300;
  std::string from = "aiohttp's default total timeout (" +
                     std::string(t ? "load.request_timeout is null in " + cfg_where
                                   : "this inference-perf has no load.request_timeout") +
                     ")";
  if (t && !t.IsNull()) {
    const double v = number_at(cfg_where, t, "load.request_timeout", 0, 1e7);
    if (v > 0) {
      s = v;
      from = cfg_where + " load.request_timeout";
    } else {
      from = "aiohttp's default total timeout (load.request_timeout 0 in " + cfg_where + ")";
    }
  }
  sc["client"]["timeout_s"] = s;
  sc["client"]["timeout_cancels"] = true;
  plan.settings.push_back({"client.timeout_s", fmt("%g", s), from});
}

}  // namespace kvfleet::sim::bench_detail

#include "calibration/import.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "sim/config/params.h"
#include "sim/core/error.h"
#include "sim/io/csv.h"

namespace kvfleet::calibration {

namespace fs = std::filesystem;
using sim::InputError;
using sim::Profile;
using sim::ProfileCurve;

std::string find_provenance(const std::string& dir) {
  for (fs::path p = fs::absolute(dir); !p.empty(); p = p.parent_path()) {
    for (const char* name : {"SNAPSHOT_COMMIT.txt", "SOURCE.txt"}) {
      std::ifstream in(p / name);
      std::string line;
      if (in && std::getline(in, line)) return line + " (" + (p / name).string() + ")";
    }
    if (p == p.parent_path()) break;
  }
  return "unknown";
}

namespace {

// A profile table with at least one row (a header alone profiles nothing).
sim::CsvFile rows_of(const std::string& path) {
  sim::CsvFile f = sim::read_csv_file(path);
  if (f.rows.empty()) throw InputError(path, "", "has a header but no rows");
  return f;
}

// A worker count: a whole number from 1 to 1024.
int whole_number(const sim::CsvFile& f, std::size_t r, long c) {
  const double v = f.number(r, c);
  if (!(v >= 1 && v <= 1024 && v == std::floor(v)))
    throw InputError(f.path + ": row " + std::to_string(f.lines[r]), f.header[c],
                     "expected a whole number of GPUs from 1 to 1024");
  return static_cast<int>(v);
}

// Points (x, t) of one op collected from rows, sorted by x, duplicates averaged.
struct Points {
  std::map<double, std::pair<double, int>> by_x;
  std::map<double, double> spread;
  void add(double x, double t, double s = 0) {
    auto& e = by_x[x];
    e.first += t;
    e.second += 1;
    spread[x] = std::max(spread[x], s);
  }
  ProfileCurve curve(std::string op, std::string scope, std::string axis, double count) const {
    ProfileCurve c{std::move(op), std::move(scope), std::move(axis), count, {}, {}, {}};
    for (const auto& [x, e] : by_x) {
      c.x.push_back(x);
      c.time_s.push_back(e.first / e.second);
      c.spread_s.push_back(spread.at(x));
    }
    return c;
  }
};

}  // namespace

Profile import_llmservingsim(const std::string& dir, int tp, std::vector<std::string>* report) {
  const fs::path root(dir);
  const fs::path meta_path = root / "meta.yaml";
  if (!fs::exists(meta_path)) {
    throw InputError(dir, "meta.yaml",
                     "not found: the path must be an LLMServingSim profile folder "
                     "(…/<hardware>/<org>/<model>/<variant>)");
  }
  const YAML::Node meta = sim::config::load_yaml_file(meta_path.string(), "profile meta");
  if (!meta.IsMap()) throw InputError(meta_path.string(), "", "expected a YAML map of keys");
  // A metadata value as text ("" when absent); a list or map where text belongs is refused.
  auto text = [&](const YAML::Node& map, const char* key) -> std::string {
    const YAML::Node n = map[key];
    if (!n.IsDefined() || n.IsNull()) return "";
    if (!n.IsScalar())
      throw InputError(meta_path.string(), key, "expected a value, not a list or map");
    return n.Scalar();
  };
  // A whole number in meta.yaml (0 when absent).
  auto whole = [&](const YAML::Node& map, const char* key) -> long {
    const std::string t = text(map, key);
    if (t.empty()) return 0;
    char* end = nullptr;
    const long v = std::strtol(t.c_str(), &end, 10);
    if (end == t.c_str() || *end != '\0' || v < 0 || v > 100000000)
      throw InputError(meta_path.string(), key, "'" + t + "' is not a whole number");
    return v;
  };
  const fs::path tpdir = root / ("tp" + std::to_string(tp));
  if (!fs::is_directory(tpdir)) {
    throw InputError(
        dir, "tp" + std::to_string(tp),
        "folder not found (tensor parallelism " + std::to_string(tp) + " not profiled)");
  }
  Profile p;
  p.set("format", "kvfleet-profile");
  p.set("schema_version", sim::kProfileSchemaVersion);
  p.set("source", "llmservingsim");
  p.set("measured", "true");
  p.set("gpu", text(meta, "gpu"));
  p.set("hardware", text(meta, "hardware"));
  p.set("model", text(meta, "model"));
  p.set("dtype", text(meta, "variant"));
  p.set("tensor_parallel", std::to_string(tp));
  const std::string vllm = text(meta, "vllm_version");
  p.set("engine", "vLLM " + (vllm.empty() ? std::string("?") : vllm));
  p.set("cuda_version", text(meta, "cuda_version"));
  p.set("date", text(meta, "profiled_at"));
  p.set("provenance", find_provenance(dir));
  p.set("imported_from", fs::absolute(root).string());
  if (const std::string a = text(meta, "architecture"); !a.empty()) p.set("architecture", a);
  // The profiler's highest tensor-parallel degree: hf_overrides hold its per-GPU shapes.
  long max_tp = 1;
  if (const YAML::Node d = meta["tp_degrees"]; d.IsDefined() && d.IsSequence()) {
    for (const auto& x : d) {
      if (!x.IsScalar()) continue;
      const long v = std::strtol(x.Scalar().c_str(), nullptr, 10);
      if (v > max_tp && v <= 1024) max_tp = v;
    }
  }
  if (const YAML::Node e = meta["engine_effective"]; e.IsDefined() && e.IsMap()) {
    const std::string eager = text(e, "enforce_eager");
    if (!eager.empty()) p.set("profiled_enforce_eager", eager);
    if (const YAML::Node o = e["hf_overrides"]; o.IsDefined() && o.IsMap()) {
      if (const long l = whole(o, "num_hidden_layers"); l > 0)
        p.set("profiled_num_layers", std::to_string(l));
      const std::pair<const char*, const char*> facts[] = {
          {"num_attention_heads", "model_num_attention_heads"},
          {"num_key_value_heads", "model_num_kv_heads"},
          {"vocab_size", "model_vocab_size"},
          {"hidden_size", "model_hidden_size"}};
      for (const auto& [from, to] : facts) {
        // hidden_size is never sharded; the others are per GPU at the highest degree.
        if (const long v = whole(o, from); v > 0)
          p.set(to, std::to_string(std::string(from) == "hidden_size" ? v : v * max_tp));
      }
    }
  }
  auto note = [&](const std::string& line) {
    if (report) report->push_back(line);
  };

  // Per-layer and per-step token-wise operations. Llama and Qwen run two RMSNorms per layer
  // (input and post-attention) while the bundle profiles one `layernorm` row per size.
  struct Known {
    const char* scope;
    double count;
    const char* what;
  };
  const std::map<std::string, Known> kDense = {
      {"qkv_proj", {"layer", 1, "QKV projection"}},
      {"o_proj", {"layer", 1, "attention output projection"}},
      {"gate_up_proj", {"layer", 1, "MLP gate and up projections"}},
      {"down_proj", {"layer", 1, "MLP down projection"}},
      {"act_fn", {"layer", 1, "MLP activation"}},
      {"layernorm", {"layer", 2, "RMSNorm, input and post-attention"}},
      {"qk_norm", {"layer", 1, "per-head RMSNorm of queries and keys (Qwen3)"}},
      {"rotary_emb", {"layer", 1, "rotary position embedding"}},
      {"embedding", {"step", 1, "input embedding"}},
      {"final_layernorm", {"step", 1, "final RMSNorm"}}};
  {
    const sim::CsvFile f = rows_of((tpdir / "dense.csv").string());
    const long cl = f.require("layer"), ct = f.require("tokens"), cu = f.require("time_us");
    std::map<std::string, Points> pts;
    std::vector<std::string> order;
    for (std::size_t r = 0; r < f.rows.size(); ++r) {
      const std::string& op = f.text(r, cl);
      if (op.empty() || op.size() > 64 ||
          op.find_first_not_of(
              "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
              std::string::npos) {
        throw InputError(f.path + ": row " + std::to_string(f.lines[r]), "layer",
                         "'" + op + "' is not an operation name (1 to 64 letters, digits, _ . -)");
      }
      if (!pts.count(op)) order.push_back(op);
      pts[op].add(f.number(r, ct), f.number(r, cu) * 1e-6);
    }
    for (const auto& op : order) {
      const auto it = kDense.find(op);
      const std::string scope = it != kDense.end() ? it->second.scope : "layer";
      const double count = it != kDense.end() ? it->second.count : 1;
      p.curves.push_back(pts.at(op).curve(op, scope, "tokens", count));
      note("dense.csv " + op + " -> " +
           (it != kDense.end() ? std::string(it->second.what) : "unknown operation") + ", " +
           (scope == "layer" ? sim::config::format_double(count) + " per layer"
                             : std::string("once per step")) +
           " against tokens" + (it != kDense.end() ? "" : ", priced by name as overhead"));
    }
  }
  {
    const sim::CsvFile f = rows_of((tpdir / "per_sequence.csv").string());
    const long cl = f.require("layer"), cs = f.require("sequences"), cu = f.require("time_us");
    std::map<std::string, Points> pts;
    std::vector<std::string> order;
    for (std::size_t r = 0; r < f.rows.size(); ++r) {
      const std::string& op = f.text(r, cl);
      if (op.empty() || op.size() > 64) {
        throw InputError(f.path + ": row " + std::to_string(f.lines[r]), "layer",
                         "'" + op + "' is not an operation name");
      }
      if (!pts.count(op)) order.push_back(op);
      pts[op].add(f.number(r, cs), f.number(r, cu) * 1e-6);
    }
    for (const auto& op : order) {
      p.curves.push_back(pts.at(op).curve(op, "step", "sequences", 1));
      note("per_sequence.csv " + op + " -> once per step against the sequences that sample");
    }
  }
  {
    const sim::CsvFile f = rows_of((tpdir / "attention.csv").string());
    const long cc = f.require("prefill_chunk"), cp = f.require("kv_prefill"),
               cn = f.require("n_decode"), ck = f.require("kv_decode"), cu = f.require("time_us");
    for (std::size_t r = 0; r < f.rows.size(); ++r) {
      p.attention.push_back({f.number(r, cc), f.number(r, cp), f.number(r, cn), f.number(r, ck),
                             f.number(r, cu) * 1e-6, 0.0});
    }
    note("attention.csv -> attention grid, " + std::to_string(f.rows.size()) +
         " points (prefill chunk, its prefix, decode sequences, their context), per layer");
  }
  // The /moe table is one GPU running whole experts (the cost model slices or spreads them), which
  // is what tp1 measured; another degree's table is used only when tp1 has none.
  fs::path moe = root / "tp1" / "moe.csv";
  if (!fs::exists(moe)) moe = tpdir / "moe.csv";
  if (fs::exists(moe)) {
    const sim::CsvFile f = rows_of(moe.string());
    const long ct = f.require("tokens"), ca = f.require("activated_experts"),
               cu = f.require("time_us");
    std::map<std::pair<double, double>, std::pair<double, int>> pts;  // duplicates averaged
    for (std::size_t r = 0; r < f.rows.size(); ++r) {
      const double t = f.number(r, ct), a = f.number(r, ca);
      if (!(t >= 1) || !(a >= 1))
        throw InputError(f.path + ": row " + std::to_string(f.lines[r]), "tokens",
                         "tokens and activated_experts must be at least 1");
      auto& e = pts[{t, a}];
      e.first += f.number(r, cu) * 1e-6;
      e.second += 1;
    }
    for (const auto& [k, e] : pts) p.moe.push_back({k.first, k.second, e.first / e.second, 0});
    p.set("model_moe", "true");
    note(fs::relative(moe, root).string() +
         " -> MoE layer (router and experts) against tokens "
         "and activated experts, " +
         std::to_string(pts.size()) + " points, per MoE layer" +
         (moe.parent_path() != tpdir ? " (tp1's: whole experts per GPU)" : ""));
  } else {
    p.set("model_moe", "false");
  }
  // The skew correction, where the bundle says it fitted one (meta skew_fit.enabled): the
  // per-bucket alphas of skew_fit.csv with their bins from meta's bucket_axes.
  const YAML::Node sf = meta["skew_fit"];
  const bool skew_on = sf.IsDefined() && sf.IsMap() && text(sf, "enabled") == "true";
  const fs::path fit = tpdir / "skew_fit.csv";
  if (skew_on && fs::exists(fit)) {
    const YAML::Node axes = sf["bucket_axes"];
    // label -> (lo, hi] from an axis's bins and labels.
    auto bins_of = [&](const char* axis) {
      std::map<std::string, std::pair<double, double>> m;
      const std::string b = std::string(axis) + "_bins", l = std::string(axis) + "_labels";
      if (!axes.IsDefined() || !axes.IsMap() || !axes[b].IsSequence() || !axes[l].IsSequence())
        throw InputError(meta_path.string(), "skew_fit.bucket_axes." + b,
                         "expected the lists " + b + " and " + l);
      const YAML::Node bn = axes[b], ln = axes[l];
      if (bn.size() != ln.size() + 1)
        throw InputError(meta_path.string(), "skew_fit.bucket_axes." + l,
                         "needs one label fewer than " + b);
      for (std::size_t i = 0; i < ln.size(); ++i) {
        const double lo = bn[i].as<double>(), hi = bn[i + 1].as<double>();
        if (!(lo < hi))
          throw InputError(meta_path.string(), "skew_fit.bucket_axes." + b, "must ascend");
        m[ln[i].as<std::string>()] = {lo, hi};
      }
      return m;
    };
    try {
      const auto n_bins = bins_of("n"), r_bins = bins_of("skew_rate"), k_bins = bins_of("kv_big"),
                 p_bins = bins_of("kp");
      const sim::CsvFile f = rows_of(fit.string());
      const long cpc = f.require("pc"), cn = f.require("n_label"),
                 cr = f.require("skew_rate_label"), ck = f.require("kv_big_label"),
                 cp = f.require("kp_label"), ca = f.require("alpha"), cs = f.require("n_samples");
      for (std::size_t r = 0; r < f.rows.size(); ++r) {
        auto bin = [&](const std::map<std::string, std::pair<double, double>>& m, long c) {
          const auto it = m.find(f.text(r, c));
          if (it == m.end())
            throw InputError(f.path + ": row " + std::to_string(f.lines[r]), f.header[c],
                             "'" + f.text(r, c) + "' is not a label of meta.yaml's bucket_axes");
          return it->second;
        };
        const auto n = bin(n_bins, cn), rt = bin(r_bins, cr), kb = bin(k_bins, ck),
                   kp = bin(p_bins, cp);
        p.skew.push_back({f.number(r, cpc), n.first, n.second, rt.first, rt.second, kb.first,
                          kb.second, kp.first, kp.second, f.number(r, ca), f.number(r, cs)});
      }
    } catch (const YAML::Exception& e) {
      throw InputError(meta_path.string(), "skew_fit.bucket_axes",
                       std::string("unreadable: ") + e.what());
    }
    std::string alpha_default = "0";
    if (const YAML::Node pt = sf["per_tp"]; pt.IsDefined() && pt.IsMap()) {
      const YAML::Node t = pt[std::to_string(tp)];
      if (t.IsDefined() && t.IsMap() && !text(t, "alpha_default").empty())
        alpha_default = text(t, "alpha_default");
    }
    p.set("skew_alpha_default", alpha_default);
    note("skew_fit.csv -> attention's skew correction, " + std::to_string(p.skew.size()) +
         " buckets (alpha default " + alpha_default + ")");
    note("skew.csv -> not read (the measurements skew_fit.csv was fitted on)");
  } else {
    for (const char* name : {"skew.csv", "skew_fit.csv"})
      if (fs::exists(tpdir / name))
        note(std::string(name) +
             " -> not used: meta.yaml does not enable skew_fit (decode contexts at their mean)");
  }
  sim::check_profile(p, dir);
  return p;
}

Profile import_vidur(const std::string& dir, int tp, const std::string& network_dir) {
  const fs::path root(dir);
  const fs::path mlp = root / "mlp.csv";
  if (!fs::exists(mlp)) {
    throw InputError(dir, "mlp.csv",
                     "not found: the path must be a Vidur compute/<gpu>/<org>/<model> folder");
  }
  // Vidur's operation names → kvfleet's, with scope and calls per layer (the residual add runs
  // twice per layer).
  const std::map<std::string, std::tuple<std::string, std::string, double>> kOps = {
      {"emb", {"embedding", "step", 1}},
      {"input_layernorm", {"input_layernorm", "layer", 1}},
      {"attn_pre_proj", {"qkv_proj", "layer", 1}},
      {"attn_rope", {"rotary_emb", "layer", 1}},
      {"attn_post_proj", {"o_proj", "layer", 1}},
      {"post_attention_layernorm", {"post_attention_layernorm", "layer", 1}},
      {"mlp_up_proj", {"gate_up_proj", "layer", 1}},
      {"mlp_act", {"act_fn", "layer", 1}},
      {"mlp_down_proj", {"down_proj", "layer", 1}},
      {"add", {"residual_add", "layer", 2}}};
  const sim::CsvFile f = rows_of(mlp.string());
  const long ctok = f.require("num_tokens");
  const long ctp = f.require("num_tensor_parallel_workers");
  std::map<std::string, Points> pts;
  std::set<int> tps;
  for (std::size_t r = 0; r < f.rows.size(); ++r) {
    const int row_tp = whole_number(f, r, ctp);
    tps.insert(row_tp);
    if (row_tp != tp) continue;
    const double tokens = f.number(r, ctok);
    for (const auto& [vop, spec] : kOps) {
      const long cm = f.column("time_stats." + vop + ".median");
      if (cm < 0) continue;
      const long cmin = f.column("time_stats." + vop + ".min");
      const long cmax = f.column("time_stats." + vop + ".max");
      const double spread =
          cmin >= 0 && cmax >= 0 ? 0.5 * (f.number(r, cmax) - f.number(r, cmin)) * 1e-3 : 0.0;
      pts[std::get<0>(spec)].add(tokens, f.number(r, cm) * 1e-3, spread);
    }
  }
  if (pts.empty()) {
    std::string have;
    for (int t : tps) {
      if (!have.empty()) have += ", ";
      have += std::to_string(t);
    }
    throw InputError(
        mlp.string(), "num_tensor_parallel_workers",
        "no rows for tensor parallelism " + std::to_string(tp) + " (have " + have + ")");
  }
  Profile p;
  p.set("format", "kvfleet-profile");
  p.set("schema_version", sim::kProfileSchemaVersion);
  p.set("source", "vidur");
  p.set("measured", "true");
  // compute/<gpu>/<org>/<model>
  const fs::path abs = fs::absolute(root).lexically_normal();
  const auto model = abs.filename().string();
  const auto org = abs.parent_path().filename().string();
  const auto gpu = abs.parent_path().parent_path().filename().string();
  p.set("gpu", gpu);
  p.set("model", org + "/" + model);
  p.set("tensor_parallel", std::to_string(tp));
  p.set("dtype", "fp16");  // Vidur profiles in fp16
  p.set("provenance", find_provenance(dir));
  p.set("imported_from", abs.string());
  for (const auto& [op, pt] : pts) {
    for (const auto& [vop, spec] : kOps) {
      if (std::get<0>(spec) == op) {
        p.curves.push_back(pt.curve(op, std::get<1>(spec), "tokens", std::get<2>(spec)));
      }
    }
  }
  if (!network_dir.empty()) {
    const sim::CsvFile n = rows_of((fs::path(network_dir) / "all_reduce.csv").string());
    const long cw = n.require("num_workers"), cs = n.require("size"),
               cm = n.require("time_stats.all_reduce.median");
    Points ar;
    for (std::size_t r = 0; r < n.rows.size(); ++r) {
      if (whole_number(n, r, cw) == tp) ar.add(n.number(r, cs), n.number(r, cm) * 1e-3);
    }
    if (!ar.by_x.empty()) p.curves.push_back(ar.curve("all_reduce", "step", "bytes", 1));
    p.set("network", fs::absolute(network_dir).lexically_normal().string());
  }
  sim::check_profile(p, dir);
  return p;
}

}  // namespace kvfleet::calibration

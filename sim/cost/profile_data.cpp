#include "sim/cost/profile_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "sim/core/error.h"
#include "sim/io/h5.h"

namespace kvfleet::sim {

std::string Profile::get(const std::string& key, const std::string& fallback) const {
  for (const auto& [k, v] : meta)
    if (k == key) return v;
  return fallback;
}

void Profile::set(const std::string& key, const std::string& value) {
  for (auto& [k, v] : meta) {
    if (k == key) {
      v = value;
      return;
    }
  }
  meta.emplace_back(key, value);
}

const ProfileCurve* Profile::curve(const std::string& op) const {
  for (const auto& c : curves)
    if (c.op == op) return &c;
  return nullptr;
}

namespace {

// A call's time and a size beyond these are not measurements (a GPU kernel takes micro- to
// milliseconds); they would overflow step times.
bool time_ok(double t) { return t >= 0 && t <= kMaxProfileTimeS; }
bool size_ok(double x) { return x >= 0 && x <= kMaxProfileSize; }

// All-zero times measure nothing: a step would cost no time.
bool all_zero(const auto& range, auto time) {
  for (const auto& x : range)
    if (time(x) != 0) return false;
  return true;
}

// One operation's curve: its scope and axis, its points ascending, sizes and times in range.
void check_curve(const ProfileCurve& c, const std::string& where) {
  const std::string key = "curves[" + c.op + "]";
  if (c.scope != "layer" && c.scope != "step") {
    throw InputError(where, key, "scope '" + c.scope + "' is neither layer nor step");
  }
  if (c.axis != "tokens" && c.axis != "sequences" && c.axis != "bytes") {
    throw InputError(where, key, "axis '" + c.axis + "' is not tokens, sequences or bytes");
  }
  if (c.x.empty() || c.x.size() != c.time_s.size()) {
    throw InputError(where, key, "needs at least one point and as many times as sizes");
  }
  for (std::size_t i = 0; i < c.x.size(); ++i) {
    if (!size_ok(c.x[i]))
      throw InputError(where, key, "size " + std::to_string(c.x[i]) + " is not between 0 and 1e12");
    if (!time_ok(c.time_s[i])) {
      throw InputError(where, key,
                       "time " + std::to_string(c.time_s[i]) +
                           " s at x = " + std::to_string(c.x[i]) +
                           " is not between 0 and 1000 s (a GPU operation takes micro- to "
                           "milliseconds)");
    }
    if (i > 0 && !(c.x[i] > c.x[i - 1])) {
      throw InputError(where, key,
                       "sizes must be strictly ascending (x = " + std::to_string(c.x[i]) +
                           " after " + std::to_string(c.x[i - 1]) + ")");
    }
  }
  if (!(c.count > 0) || !size_ok(c.count))
    throw InputError(where, key, "count must be positive (and at most 1e12)");
}

// The attention grid's, the MoE table's and the skew fit's rows, each in range.
void check_tables(const Profile& p, const std::string& where) {
  for (std::size_t i = 0; i < p.attention.size(); ++i) {
    const auto& a = p.attention[i];
    if (!(size_ok(a.prefill_chunk) && size_ok(a.kv_prefill) && size_ok(a.n_decode) &&
          size_ok(a.kv_decode) && time_ok(a.time_s))) {
      throw InputError(where, "attention row " + std::to_string(i),
                       "sizes must lie between 0 and 1e12 and the time between 0 and 1000 s");
    }
  }
  for (std::size_t i = 0; i < p.moe.size(); ++i) {
    const auto& m = p.moe[i];
    if (!(m.tokens >= 1 && size_ok(m.tokens) && m.activated_experts >= 1 &&
          size_ok(m.activated_experts) && time_ok(m.time_s))) {
      throw InputError(where, "moe row " + std::to_string(i),
                       "tokens and activated_experts must lie between 1 and 1e12 and the time "
                       "between 0 and 1000 s");
    }
  }
  for (std::size_t i = 0; i < p.skew.size(); ++i) {
    const auto& k = p.skew[i];
    const bool ok = size_ok(k.prefill_chunk) && k.n_lo < k.n_hi && k.rate_lo < k.rate_hi &&
                    k.kv_max_lo < k.kv_max_hi && k.prefix_lo < k.prefix_hi &&
                    std::isfinite(k.alpha) && std::fabs(k.alpha) <= 100 && k.samples >= 0;
    if (!ok) {
      throw InputError(where, "skew row " + std::to_string(i),
                       "each bucket needs lo < hi on every axis, a finite alpha within ±100 and "
                       "a prefill_chunk between 0 and 1e12");
    }
  }
}

}  // namespace

void check_profile(const Profile& p, const std::string& where) {
  const std::string version = p.get("schema_version", "1");
  if (version != kProfileSchemaVersion) {
    throw InputError(where, "meta.schema_version",
                     "is '" + version + "'; this kvfleet reads version " +
                         std::string(kProfileSchemaVersion) +
                         " (a newer kvfleet wrote it, or the file is not a profile)");
  }
  if (p.curves.empty())
    throw InputError(where, "curves", "is empty: a profile times at least one operation");
  bool curves_zero = true;
  for (const auto& c : p.curves)
    curves_zero = curves_zero && all_zero(c.time_s, [](double t) { return t; });
  if (curves_zero)
    throw InputError(where, "curves", "every time is 0: the profile measured nothing");
  if (!p.attention.empty() &&
      all_zero(p.attention, [](const AttentionPoint& a) { return a.time_s; }))
    throw InputError(where, "attention", "every time is 0: attention would cost nothing");
  for (std::size_t i = 0; i < p.curves.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (p.curves[i].op == p.curves[j].op)
        throw InputError(where, "curves[" + p.curves[i].op + "]",
                         "the operation's rows are split into separate runs (or repeated); "
                         "keep each operation's points together");
  for (const auto& c : p.curves) check_curve(c, where);
  check_tables(p, where);
  if (!p.skew.empty()) skew_alpha_default(p, where);
  if (!p.moe.empty() && all_zero(p.moe, [](const MoePoint& m) { return m.time_s; }))
    throw InputError(where, "moe", "every time is 0: the experts would cost nothing");
}

double skew_alpha_default(const Profile& p, const std::string& where) {
  const std::string d = p.get("skew_alpha_default", "0");
  char* end = nullptr;
  const double a = std::strtod(d.c_str(), &end);
  if (end == d.c_str() || *end != '\0' || !std::isfinite(a) || std::fabs(a) > 100)
    throw InputError(where, "meta.skew_alpha_default", "'" + d + "' is not a number within ±100");
  return a;
}

void set_model_facts(Profile& p, const ModelSpec& m) {
  if (!m.architecture.empty()) p.set("architecture", m.architecture);
  p.set("model_hidden_size", std::to_string(m.hidden_size));
  p.set("model_num_attention_heads", std::to_string(m.num_attention_heads));
  if (m.attention == "gqa") p.set("model_num_kv_heads", std::to_string(m.num_kv_heads));
  p.set("model_vocab_size", std::to_string(m.vocab_size));
  p.set("model_moe", m.moe() ? "true" : "false");
}

void check_profile_model(const Profile& p, const ModelSpec& m, const std::string& where) {
  const std::string measured = p.get("model", "?");
  auto refuse = [&](const std::string& key, const std::string& what) {
    throw InputError(where, "meta." + key,
                     "the profile was measured on " + measured + " (" + what + "), the pool runs " +
                         m.name + ": a profile prices only the model it measured; profile " +
                         m.name + " or point the pool at its profile");
  };
  const std::string arch = p.get("architecture");
  if (!arch.empty() && !m.architecture.empty() && arch != m.architecture)
    refuse("architecture", "architecture " + arch + ", the pool's model is " + m.architecture);
  const std::pair<const char*, int> dims[] = {
      {"model_hidden_size", m.hidden_size},
      {"model_num_attention_heads", m.num_attention_heads},
      {"model_num_kv_heads", m.attention == "gqa" ? m.num_kv_heads : -1},
      {"model_vocab_size", m.vocab_size}};
  for (const auto& [key, mine] : dims) {
    const std::string v = p.get(key);
    if (v.empty() || mine < 0) continue;
    if (v != std::to_string(mine))
      refuse(key, std::string(key).substr(6) + " " + v + ", the pool's model has " +
                      std::to_string(mine));
  }
  const std::string moe = p.get("model_moe");
  const bool profile_moe = moe == "true" || (moe.empty() && !p.moe.empty());
  if ((moe == "false" || !p.moe.empty() || moe == "true") && profile_moe != m.moe())
    refuse("model_moe", profile_moe ? "a mixture of experts, the pool's model is dense"
                                    : "a dense model, the pool's model is a mixture of experts");
}

namespace {

template <typename V>
const V& column(const Table& t, const std::string& name, const std::string& where,
                const std::string& ds) {
  const Column* c = t.find(name);
  if (!c) throw InputError(where, ds + "." + name, "column is missing");
  if (auto* v = std::get_if<V>(&c->data)) return *v;
  throw InputError(where, ds + "." + name, "has the wrong type");
}

}  // namespace

namespace {

Table meta_table(const Profile& p) {
  Table meta;
  meta.desc =
      "what was profiled and how: format, schema_version, gpu, model, dtype, "
      "tensor_parallel, measured, source, provenance, date, ...";
  auto& k = meta.str("key", "", "metadata key");
  auto& v = meta.str("value", "", "its value, as text");
  for (const auto& [a, b] : p.meta) {
    k.push_back(a);
    v.push_back(b);
  }
  return meta;
}

Table curves_table(const Profile& p) {
  Table curves;
  curves.desc = "one row per measured point of an operation's time against its size";
  auto& op =
      curves.str("op", "", "operation: qkv_proj, o_proj, gate_up_proj, down_proj, lm_head, ...");
  auto& scope = curves.str("scope", "", "layer (runs in each layer) or step (once per step)");
  auto& axis = curves.str("axis", "", "what x counts: tokens, sequences or bytes");
  auto& count = curves.f64("count", "calls", "calls per layer (layer scope) or per step");
  auto& x = curves.f64("x", "", "the size: tokens, sequences or bytes (axis)");
  auto& t = curves.f64("time_s", "s", "median time of one call");
  auto& sp = curves.f64("spread_s", "s", "half the p10-p90 range (0 when unknown)");
  for (const auto& c : p.curves) {
    for (std::size_t i = 0; i < c.x.size(); ++i) {
      op.push_back(c.op);
      scope.push_back(c.scope);
      axis.push_back(c.axis);
      count.push_back(c.count);
      x.push_back(c.x[i]);
      t.push_back(c.time_s[i]);
      sp.push_back(i < c.spread_s.size() ? c.spread_s[i] : 0.0);
    }
  }
  return curves;
}

Table attention_table(const Profile& p) {
  Table att;
  att.desc = "attention of one layer for a batch of one prefill chunk and n_decode decodes";
  auto& ac = att.f64("prefill_chunk", "tokens", "tokens of the prefill chunk (0: none)");
  auto& ap = att.f64("kv_prefill", "tokens", "cached prefix under the chunk");
  auto& an = att.f64("n_decode", "sequences", "decode sequences in the batch");
  auto& ak = att.f64("kv_decode", "tokens", "context of each decode sequence");
  auto& at = att.f64("time_s", "s", "median time of the layer's attention");
  auto& as = att.f64("spread_s", "s", "half the p10-p90 range (0 when unknown)");
  for (const auto& a : p.attention) {
    ac.push_back(a.prefill_chunk);
    ap.push_back(a.kv_prefill);
    an.push_back(a.n_decode);
    ak.push_back(a.kv_decode);
    at.push_back(a.time_s);
    as.push_back(a.spread_s);
  }
  return att;
}

Table moe_table(const Profile& p) {
  Table t;
  t.desc = "one mixture-of-experts layer (router and experts) on one GPU";
  auto& tok = t.f64("tokens", "tokens", "tokens routed through the layer");
  auto& act = t.f64("activated_experts", "experts", "distinct experts their routing activates");
  auto& tt = t.f64("time_s", "s", "median time of the layer");
  auto& ts = t.f64("spread_s", "s", "half the p10-p90 range (0 when unknown)");
  for (const auto& m : p.moe) {
    tok.push_back(m.tokens);
    act.push_back(m.activated_experts);
    tt.push_back(m.time_s);
    ts.push_back(m.spread_s);
  }
  return t;
}

Table skew_table(const Profile& p) {
  Table t;
  t.desc =
      "attention's skew correction per bucket: all-at-mean + alpha x (all-at-long - all-at-mean)";
  auto& pc = t.f64("prefill_chunk", "tokens", "prefill chunk tokens in the batch (profiled value)");
  auto& nl = t.f64("n_lo", "sequences", "decode sequences above this");
  auto& nh = t.f64("n_hi", "sequences", "and at most this (inf: no bound)");
  auto& rl = t.f64("rate_lo", "fraction", "skew rate (share of long contexts) above this");
  auto& rh = t.f64("rate_hi", "fraction", "and at most this");
  auto& kl = t.f64("kv_max_lo", "tokens", "long decode contexts' mean above this");
  auto& kh = t.f64("kv_max_hi", "tokens", "and at most this");
  auto& xl = t.f64("prefix_lo", "tokens", "prefill chunk's cached prefix above this");
  auto& xh = t.f64("prefix_hi", "tokens", "and at most this");
  auto& al =
      t.f64("alpha", "", "where the time lies between all-at-mean (0) and all-at-longest (1)");
  auto& sm = t.f64("samples", "batches", "measurements behind the bucket's alpha");
  for (const auto& k : p.skew) {
    pc.push_back(k.prefill_chunk);
    nl.push_back(k.n_lo);
    nh.push_back(k.n_hi);
    rl.push_back(k.rate_lo);
    rh.push_back(k.rate_hi);
    kl.push_back(k.kv_max_lo);
    kh.push_back(k.kv_max_hi);
    xl.push_back(k.prefix_lo);
    xh.push_back(k.prefix_hi);
    al.push_back(k.alpha);
    sm.push_back(k.samples);
  }
  return t;
}

Table fits_table(const Profile& p) {
  Table fits;
  fits.desc = "fitted models of the measurements, with their held-out error";
  auto& fo = fits.str("op", "", "the operation fitted");
  auto& fm = fits.str("model", "", "the fitted form, e.g. a + b*kv_bytes + c*batch");
  auto& fp = fits.str("params", "", "its coefficients, name=value separated by spaces");
  auto& ftr = fits.i64("n_train", "points", "points it was fitted on");
  auto& fte = fits.i64("n_test", "points", "points held out");
  auto& fmed = fits.f64("median_ape", "fraction", "median absolute percentage error, held out");
  auto& fp95 = fits.f64("p95_ape", "fraction", "95th percentile of that error");
  for (const auto& f : p.fits) {
    fo.push_back(f.op);
    fm.push_back(f.model);
    fp.push_back(f.params);
    ftr.push_back(f.n_train);
    fte.push_back(f.n_test);
    fmed.push_back(f.median_ape);
    fp95.push_back(f.p95_ape);
  }
  return fits;
}

}  // namespace

void write_profile(const std::string& path, const Profile& p) {
  check_profile(p, path);
  h5::write_file_atomically(path, [&](hid_t file) {
    h5::write_table(file, "meta", meta_table(p));
    h5::write_table(file, "curves", curves_table(p));
    h5::write_table(file, "attention", attention_table(p));
    if (!p.moe.empty()) h5::write_table(file, "moe", moe_table(p));
    if (!p.skew.empty()) h5::write_table(file, "skew", skew_table(p));
    h5::write_table(file, "fits", fits_table(p));
  });
}

std::vector<TableDoc> profile_table_docs() {
  const Profile none;
  return {doc_of("meta", meta_table(none)),           doc_of("curves", curves_table(none)),
          doc_of("attention", attention_table(none)), doc_of("moe", moe_table(none)),
          doc_of("skew", skew_table(none)),           doc_of("fits", fits_table(none))};
}

namespace {

void read_curves(const Table& c, const std::string& path, Profile& p) {
  const auto& op = column<std::vector<std::string>>(c, "op", path, "curves");
  const auto& scope = column<std::vector<std::string>>(c, "scope", path, "curves");
  const auto& axis = column<std::vector<std::string>>(c, "axis", path, "curves");
  auto count = column_numbers(c, "count", path, "curves");
  auto x = column_numbers(c, "x", path, "curves");
  auto t = column_numbers(c, "time_s", path, "curves");
  auto sp = column_numbers(c, "spread_s", path, "curves");
  for (std::size_t i = 0; i < op.size(); ++i) {
    if (p.curves.empty() || p.curves.back().op != op[i]) {
      p.curves.push_back({op[i], scope[i], axis[i], count[i], {}, {}, {}});
    }
    auto& cur = p.curves.back();
    cur.x.push_back(x[i]);
    cur.time_s.push_back(t[i]);
    cur.spread_s.push_back(sp[i]);
  }
}

void read_attention(const Table& a, const std::string& path, Profile& p) {
  auto c = column_numbers(a, "prefill_chunk", path, "attention");
  auto kp = column_numbers(a, "kv_prefill", path, "attention");
  auto n = column_numbers(a, "n_decode", path, "attention");
  auto kd = column_numbers(a, "kv_decode", path, "attention");
  auto t = column_numbers(a, "time_s", path, "attention");
  auto s = column_numbers(a, "spread_s", path, "attention");
  for (std::size_t i = 0; i < c.size(); ++i)
    p.attention.push_back({c[i], kp[i], n[i], kd[i], t[i], s[i]});
}

void read_moe(const Table& m, const std::string& path, Profile& p) {
  auto tok = column_numbers(m, "tokens", path, "moe");
  auto act = column_numbers(m, "activated_experts", path, "moe");
  auto t = column_numbers(m, "time_s", path, "moe");
  auto s = column_numbers(m, "spread_s", path, "moe");
  for (std::size_t i = 0; i < tok.size(); ++i) p.moe.push_back({tok[i], act[i], t[i], s[i]});
}

void read_skew(const Table& k, const std::string& path, Profile& p) {
  std::vector<std::vector<double>> c;
  for (const char* name : {"prefill_chunk", "n_lo", "n_hi", "rate_lo", "rate_hi", "kv_max_lo",
                           "kv_max_hi", "prefix_lo", "prefix_hi", "alpha", "samples"})
    c.push_back(column_numbers(k, name, path, "skew"));
  for (std::size_t i = 0; i < c[0].size(); ++i)
    p.skew.push_back({c[0][i], c[1][i], c[2][i], c[3][i], c[4][i], c[5][i], c[6][i], c[7][i],
                      c[8][i], c[9][i], c[10][i]});
}

void read_fits(const Table& f, const std::string& path, Profile& p) {
  const auto& op = column<std::vector<std::string>>(f, "op", path, "fits");
  const auto& model = column<std::vector<std::string>>(f, "model", path, "fits");
  const auto& params = column<std::vector<std::string>>(f, "params", path, "fits");
  auto ntr = column_numbers(f, "n_train", path, "fits");
  auto nte = column_numbers(f, "n_test", path, "fits");
  auto med = column_numbers(f, "median_ape", path, "fits");
  auto p95 = column_numbers(f, "p95_ape", path, "fits");
  for (std::size_t i = 0; i < op.size(); ++i) {
    p.fits.push_back({op[i], model[i], params[i], static_cast<long>(ntr[i]),
                      static_cast<long>(nte[i]), med[i], p95[i]});
  }
}

}  // namespace

Profile read_profile(const std::string& path) {
  const h5::H5 file = h5::open_for_reading(path, "profile");
  Profile p;
  auto table = [&](const char* name) {
    try {
      return h5::read_table(file.id, name);
    } catch (const std::runtime_error& e) {
      throw InputError(path, name, e.what());
    }
  };
  {
    Table meta = table("meta");
    const auto& k = column<std::vector<std::string>>(meta, "key", path, "meta");
    const auto& v = column<std::vector<std::string>>(meta, "value", path, "meta");
    for (std::size_t i = 0; i < k.size(); ++i) p.meta.emplace_back(k[i], v[i]);
  }
  if (p.get("format") != "kvfleet-profile") {
    throw InputError(
        path, "meta.format",
        "is '" + p.get("format") +
            "', not 'kvfleet-profile' (kvfleet-calibrate "
            "writes profiles; `kvfleet-calibrate import` converts other simulators' ones)");
  }
  read_curves(table("curves"), path, p);
  read_attention(table("attention"), path, p);
  if (h5::has_link(file.id, "moe")) read_moe(table("moe"), path, p);
  if (h5::has_link(file.id, "skew")) read_skew(table("skew"), path, p);
  if (h5::has_link(file.id, "fits")) read_fits(table("fits"), path, p);
  check_profile(p, path);
  return p;
}

}  // namespace kvfleet::sim

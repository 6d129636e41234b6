#include "calibration/pipeline.h"

#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <sstream>
#include <stdexcept>

#include "sim/cost/profile_cost.h"

#ifndef KVFLEET_VERSION
#define KVFLEET_VERSION "unknown"
#endif

namespace kvfleet::calibration {

namespace {

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * (v.size() - 1) + 0.5)];
}

// Measures `f` at `xs`, then at geometric midpoints of intervals where linear interpolation of
// the neighbours misses the measured midpoint by more than `tol`, up to `max_new` extra points.
template <typename F>
std::map<int, Timing> refine(const std::vector<int>& xs, F measure, double tol, int max_new) {
  std::map<int, Timing> pts;
  for (int x : xs) pts[x] = measure(x);
  std::vector<std::pair<int, int>> todo;
  for (std::size_t i = 1; i < xs.size(); ++i) todo.emplace_back(xs[i - 1], xs[i]);
  int added = 0;
  for (std::size_t i = 0; i < todo.size() && added < max_new; ++i) {
    const auto [a, b] = todo[i];
    const int m = static_cast<int>(std::lround(std::sqrt(static_cast<double>(a) * b)));
    if (m <= a || m >= b) continue;
    const Timing tm = measure(m);
    ++added;
    pts[m] = tm;
    const double lin = pts[a].median_s + (pts[b].median_s - pts[a].median_s) * (m - a) / (b - a);
    if (tm.median_s > 0 && std::fabs(tm.median_s - lin) / tm.median_s > tol) {
      todo.emplace_back(a, m);
      todo.emplace_back(m, b);
    }
  }
  return pts;
}

sim::ProfileCurve to_curve(const std::string& op, const std::string& scope, const std::string& axis,
                           const std::map<int, Timing>& pts) {
  sim::ProfileCurve c{op, scope, axis, 1, {}, {}, {}};
  for (const auto& [x, t] : pts) {
    c.x.push_back(x);
    c.time_s.push_back(t.median_s);
    c.spread_s.push_back(t.spread_s);
  }
  return c;
}

sim::ProfileFit fit_summary(std::string op, std::string model, std::string params, long n_train,
                            const std::vector<double>& errors) {
  return {std::move(op),
          std::move(model),
          std::move(params),
          n_train,
          static_cast<long>(errors.size()),
          quantile(errors, 0.5),
          quantile(errors, 0.95)};
}

// Least squares of t against features (each row [1, f1, f2, ...]) in relative terms (rows scaled
// by 1/t), every k-th point held out. Returns the coefficients and the held-out errors.
std::pair<Eigen::VectorXd, std::vector<double>> fit_linear(
    const std::vector<std::vector<double>>& f, const std::vector<double>& t, int every) {
  std::vector<std::size_t> train, test;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const bool held = every > 1 && t.size() > 4 &&
                      i % static_cast<std::size_t>(every) == static_cast<std::size_t>(every - 1);
    (held ? test : train).push_back(i);
  }
  const int cols = static_cast<int>(f[0].size());
  Eigen::MatrixXd x(train.size(), cols);
  Eigen::VectorXd y(train.size());
  for (std::size_t r = 0; r < train.size(); ++r) {
    const std::size_t i = train[r];
    for (int c = 0; c < cols; ++c) x(r, c) = f[i][c] / t[i];
    y(r) = 1.0;
  }
  Eigen::VectorXd beta = x.colPivHouseholderQr().solve(y);
  std::vector<double> err;
  for (std::size_t i : test) {
    double p = 0;
    for (int c = 0; c < cols; ++c) p += beta(c) * f[i][c];
    err.push_back(std::fabs(p - t[i]) / t[i]);
  }
  return {beta, err};
}

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

std::vector<double> curve_holdout_errors(const std::vector<double>& x, const std::vector<double>& t,
                                         int every) {
  std::vector<double> err;
  if (x.size() < 4 || every < 2) return err;
  std::vector<double> tx, tt;
  std::vector<std::size_t> held;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const bool interior = i > 0 && i + 1 < x.size();
    if (interior && i % every == 1) {
      held.push_back(i);
    } else {
      tx.push_back(x[i]);
      tt.push_back(t[i]);
    }
  }
  sim::PiecewiseLinear curve(tx, tt);
  for (std::size_t i : held) err.push_back(std::fabs(curve.at(x[i]) - t[i]) / t[i]);
  return err;
}

sim::Profile calibrate(const sim::ModelSpec& m, const RunOptions& opt, Backend& backend,
                       const Progress& progress) {
  const auto start = std::chrono::steady_clock::now();
  const int tp = opt.tensor_parallel;
  if (tp < 1 || m.num_attention_heads % tp != 0) {
    throw std::invalid_argument("--tp " + std::to_string(tp) + " does not divide the model's " +
                                std::to_string(m.num_attention_heads) + " attention heads");
  }
  const int qh = m.num_attention_heads / tp;
  const int kvh = std::max(1, m.num_kv_heads / tp);
  const int hd = m.head_dim;
  const int hidden = m.hidden_size;
  const int inter = m.intermediate_size / tp;
  if (m.attention != "gqa" || qh % kvh != 0 || qh / kvh > kernels::kMaxGroup) {
    throw std::invalid_argument("model " + m.name + ": only grouped-query attention with up to " +
                                std::to_string(kernels::kMaxGroup) +
                                " query heads per KV head is calibrated");
  }
  if (auto s = kernels::check_supported(opt.kv_dtype, hd, opt.block_size); !s) {
    throw std::invalid_argument("model " + m.name + ": " + s.message);
  }
  const bool cpu = backend.name() == "cpu";
  // Grids: initial points, then refinement where the curve bends.
  const std::vector<int> tokens = cpu         ? std::vector<int>{1, 4, 16, 64}
                                  : opt.quick ? std::vector<int>{1, 16, 128, 1024, 4096}
                                              : std::vector<int>{1, 8, 32, 128, 512, 2048, 8192};
  const int extra = cpu ? 1 : opt.quick ? 2 : 6;
  const std::vector<int> batches = cpu         ? std::vector<int>{1, 4}
                                   : opt.quick ? std::vector<int>{1, 32, 256}
                                               : std::vector<int>{1, 8, 32, 128, 256};
  const std::vector<int> contexts = cpu         ? std::vector<int>{64, 256, 1024}
                                    : opt.quick ? std::vector<int>{256, 4096, 32768}
                                                : std::vector<int>{128, 1024, 4096, 16384, 65536};
  const std::vector<int> chunks = cpu         ? std::vector<int>{16, 64}
                                  : opt.quick ? std::vector<int>{128, 2048}
                                              : std::vector<int>{32, 256, 1024, 4096};
  const std::vector<int> prefixes = cpu         ? std::vector<int>{0, 128}
                                    : opt.quick ? std::vector<int>{0, 4096}
                                                : std::vector<int>{0, 2048, 16384};
  const int ctx_extra = cpu ? 0 : opt.quick ? 1 : 2;
  const int total =
      6 * (static_cast<int>(tokens.size()) + extra) +
      static_cast<int>(batches.size()) * (static_cast<int>(contexts.size()) + ctx_extra) +
      static_cast<int>(chunks.size() * prefixes.size());
  int done = 0;
  auto tick = [&](const std::string& what) {
    ++done;
    if (progress) progress(std::min(done, total), total, what);
  };

  sim::Profile p;
  p.set("format", "kvfleet-profile");
  p.set("schema_version", sim::kProfileSchemaVersion);
  p.set("source", "kvfleet-calibrate");
  p.set("backend", backend.name());
  p.set("measured", cpu ? "false" : "true");
  p.set("model", m.name);
  sim::set_model_facts(p, m);
  p.set("tensor_parallel", std::to_string(tp));
  p.set("dtype", cpu ? "fp32" : "bf16");  // GEMM inputs (Eigen on the CPU, cuBLASLt on the GPU)
  p.set("kv_dtype", std::string(kernels::to_string(opt.kv_dtype)));
  p.set("block_size", std::to_string(opt.block_size));
  p.set("kvfleet_version", KVFLEET_VERSION);
  p.set("date", now_utc());
  p.set("quick", opt.quick ? "true" : "false");
  for (auto& [k, v] : backend.describe()) p.set(k, v);
  p.set("grid_tokens", join(tokens) + " (+ up to " + std::to_string(extra) + " refined)");
  p.set("grid_decode", "batch " + join(batches) + " x context " + join(contexts));
  p.set("grid_prefill", "chunk " + join(chunks) + " x prefix " + join(prefixes));

  // Linear layers, per GPU under tensor parallelism: (op, N, K, scope, axis).
  struct Gemm {
    const char* op;
    int n, k;
    const char* scope;
    const char* axis;
  };
  const Gemm gemms[] = {{"qkv_proj", (qh + 2 * kvh) * hd, hidden, "layer", "tokens"},
                        {"o_proj", hidden, qh * hd, "layer", "tokens"},
                        {"gate_up_proj", 2 * inter, hidden, "layer", "tokens"},
                        {"down_proj", hidden, inter, "layer", "tokens"},
                        {"lm_head", m.vocab_size / tp, hidden, "step", "sequences"}};
  for (const Gemm& g : gemms) {
    auto pts = refine(
        tokens,
        [&](int x) {
          Timing t = backend.gemm(x, g.n, g.k);
          tick(std::string(g.op) + " m=" + std::to_string(x));
          return t;
        },
        opt.refine_tolerance, extra);
    p.curves.push_back(to_curve(g.op, g.scope, g.axis, pts));
  }
  {
    auto pts = refine(
        tokens,
        [&](int x) {
          Timing t = backend.kv_write(x, kvh, hd, opt.kv_dtype);
          tick("kv_write tokens=" + std::to_string(x));
          return t;
        },
        opt.refine_tolerance, extra);
    p.curves.push_back(to_curve("kv_write", "layer", "tokens", pts));
  }
  kernels::AttentionShape shape;
  shape.q_heads = qh;
  shape.kv_heads = kvh;
  shape.head_dim = hd;
  shape.block_size = opt.block_size;
  shape.dtype = opt.kv_dtype;
  const double kv_bytes_token = 2.0 * kvh * hd * kernels::kv_bytes(opt.kv_dtype);
  std::vector<std::vector<double>> dfeat;
  std::vector<double> dtime;
  for (int b : batches) {
    auto pts = refine(
        contexts,
        [&](int c) {
          kernels::AttentionShape s = shape;
          s.batch = b;
          s.context = c;
          Timing t = backend.decode(s);
          tick("decode batch=" + std::to_string(b) + " ctx=" + std::to_string(c));
          return t;
        },
        opt.refine_tolerance, ctx_extra);
    for (const auto& [c, t] : pts) {
      p.attention.push_back({0, 0, double(b), double(c), t.median_s, t.spread_s});
      dfeat.push_back({1.0, kv_bytes_token * b * c, double(b)});
      dtime.push_back(t.median_s);
    }
  }
  std::vector<std::vector<double>> pfeat;
  std::vector<double> ptime;
  for (int c : chunks) {
    for (int pre : prefixes) {
      kernels::AttentionShape s = shape;
      s.chunk = c;
      s.prefix = pre;
      Timing t = backend.prefill(s);
      tick("prefill chunk=" + std::to_string(c) + " prefix=" + std::to_string(pre));
      p.attention.push_back({double(c), double(pre), 0, 0, t.median_s, t.spread_s});
      const double pairs = double(c) * pre + 0.5 * c * (c + 1.0);
      pfeat.push_back({1.0, 4.0 * pairs * qh * hd, kv_bytes_token * (pre + c)});
      ptime.push_back(t.median_s);
    }
  }

  // Fits and their held-out errors.
  for (const auto& c : p.curves) {
    auto err = curve_holdout_errors(c.x, c.time_s, opt.holdout_every);
    p.fits.push_back(fit_summary(c.op, "piecewise linear in " + c.axis + ", linear tail",
                                 "points=" + std::to_string(c.x.size()),
                                 static_cast<long>(c.x.size() - err.size()), err));
  }
  {
    auto [beta, err] = fit_linear(dfeat, dtime, opt.holdout_every);
    std::ostringstream ps;
    ps << "a=" << beta(0) << " b_per_kv_byte=" << beta(1) << " c_per_seq=" << beta(2);
    p.fits.push_back(fit_summary("decode_attention", "a + b*kv_bytes + c*batch", ps.str(),
                                 static_cast<long>(dtime.size() - err.size()), err));
  }
  {
    auto [beta, err] = fit_linear(pfeat, ptime, opt.holdout_every);
    std::ostringstream ps;
    ps << "a=" << beta(0) << " b_per_flop=" << beta(1) << " c_per_kv_byte=" << beta(2);
    p.fits.push_back(fit_summary("prefill_attention", "a + b*flops + c*kv_bytes", ps.str(),
                                 static_cast<long>(ptime.size() - err.size()), err));
  }
  p.set("duration_s",
        std::to_string(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  if (progress) progress(total, total, "done");
  sim::check_profile(p, "kvfleet-calibrate");
  return p;
}

}  // namespace kvfleet::calibration

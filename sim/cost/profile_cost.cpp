#include "sim/cost/profile_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "sim/cost/moe.h"

#include "sim/core/error.h"

namespace kvfleet::sim {

PiecewiseLinear::PiecewiseLinear(std::vector<double> x, std::vector<double> y)
    : x_(std::move(x)), y_(std::move(y)) {}

double PiecewiseLinear::at(double q) const {
  if (x_.empty()) return 0;
  if (x_.size() == 1) return y_[0];
  std::size_t i = std::upper_bound(x_.begin(), x_.end(), q) - x_.begin();
  i = std::clamp<std::size_t>(i, 1, x_.size() - 1);  // segment [i-1, i], the end ones extended
  const double w = (q - x_[i - 1]) / (x_[i] - x_[i - 1]);
  return std::max(0.0, y_[i - 1] + w * (y_[i] - y_[i - 1]));
}

MoeGrid::MoeGrid(const std::vector<MoePoint>& points) {
  std::map<double, std::map<double, double>> by;
  for (const auto& p : points) by[p.tokens][p.activated_experts] = p.time_s;
  for (const auto& [t, row] : by) {
    tokens_.push_back(t);
    rows_.emplace_back(row.begin(), row.end());
  }
}

double MoeGrid::row_at(std::size_t i, double e) const {
  const auto& r = rows_[i];
  const std::vector<std::pair<double, double>>* slope_row = &r;
  if (r.size() < 2) {  // borrow the slope of the nearest row with two points
    for (std::size_t d = 1; d < rows_.size() && slope_row->size() < 2; ++d) {
      if (i + d < rows_.size() && rows_[i + d].size() >= 2)
        slope_row = &rows_[i + d];
      else if (d <= i && rows_[i - d].size() >= 2)
        slope_row = &rows_[i - d];
    }
    if (slope_row->size() < 2) return r[0].second;
    const auto& s = *slope_row;
    const double slope = (s[1].second - s[0].second) / (s[1].first - s[0].first);
    return std::max(0.0, r[0].second + slope * (e - r[0].first));
  }
  std::size_t j = std::upper_bound(r.begin(), r.end(), std::make_pair(e, 0.0),
                                   [](const auto& a, const auto& b) { return a.first < b.first; }) -
                  r.begin();
  j = std::clamp<std::size_t>(j, 1, r.size() - 1);
  const double w = (e - r[j - 1].first) / (r[j].first - r[j - 1].first);
  return std::max(0.0, r[j - 1].second + w * (r[j].second - r[j - 1].second));
}

double MoeGrid::at(double tokens, double experts) const {
  if (rows_.empty() || tokens <= 0) return 0;
  if (rows_.size() == 1) return row_at(0, experts);
  std::size_t i = std::upper_bound(tokens_.begin(), tokens_.end(), tokens) - tokens_.begin();
  i = std::clamp<std::size_t>(i, 1, tokens_.size() - 1);
  // Below the first row the time does not fall further (a kernel launch's floor).
  const double t = std::max(tokens, tokens_.front());
  const double w = (t - tokens_[i - 1]) / (tokens_[i] - tokens_[i - 1]);
  const double a = row_at(i - 1, experts), b = row_at(i, experts);
  return std::max(0.0, a + w * (b - a));
}

SkewTable::SkewTable(const std::vector<SkewBucket>& buckets, double alpha_default)
    : default_(alpha_default) {
  std::map<double, std::vector<SkewBucket>> by;
  for (const auto& b : buckets) by[b.prefill_chunk].push_back(b);
  for (auto& [c, v] : by) {
    chunks_.push_back(c);
    by_chunk_.push_back(std::move(v));
  }
}

double SkewTable::alpha(double chunk, double n, double rate, double kv_max, double prefix) const {
  // The fit's buckets are keyed by the prefill chunks it measured: a batch whose chunk is not one
  // of them takes the pooled default, as the profile's own simulator reads the fit.
  const auto it = std::lower_bound(chunks_.begin(), chunks_.end(), chunk);
  if (it == chunks_.end() || *it != chunk) return default_;
  for (const auto& b : by_chunk_[static_cast<std::size_t>(it - chunks_.begin())]) {
    if (n > b.n_lo && n <= b.n_hi && rate > b.rate_lo && rate <= b.rate_hi &&
        kv_max > b.kv_max_lo && kv_max <= b.kv_max_hi && prefix > b.prefix_lo &&
        prefix <= b.prefix_hi)
      return b.alpha;
  }
  return default_;
}

namespace {

std::uint64_t pair_key(int c, int n) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(c)) << 32) |
         static_cast<std::uint32_t>(n);
}

// Where q lies on an ascending axis: the value there is y[lo] + t (y[hi] - y[lo]). Below the first
// value it is the first (a kernel's floor); past the last, the last segment extended.
struct Pos {
  int lo, hi;
  double t;
};
Pos locate(const std::vector<double>& axis, double q) {
  const int n = static_cast<int>(axis.size());
  if (n <= 1 || q <= axis[0]) return {0, 0, 0};
  const int hi = std::min<int>(
      n - 1, static_cast<int>(std::upper_bound(axis.begin(), axis.end(), q) - axis.begin()));
  const int lo = hi - 1;
  return {lo, hi, (q - axis[lo]) / (axis[hi] - axis[lo])};
}

double along(const std::vector<double>& x, const std::vector<double>& y, double q) {
  const Pos p = locate(x, q);
  return y[p.lo] + p.t * (y[p.hi] - y[p.lo]);
}

}  // namespace

AttentionGrid::AttentionGrid(const std::vector<AttentionPoint>& points) {
  std::set<double> cs, ns;
  for (const auto& p : points) {
    cs.insert(p.prefill_chunk);
    ns.insert(p.n_decode);
    if (p.prefill_chunk > 0 && p.n_decode > 0) mixed_ = true;
  }
  chunks_.assign(cs.begin(), cs.end());
  decodes_.assign(ns.begin(), ns.end());
  // (chunk, decodes) -> prefix -> decode context -> seconds
  std::map<std::pair<int, int>, std::map<double, std::map<double, double>>> by;
  for (const auto& p : points) {
    const int ci = static_cast<int>(
        std::lower_bound(chunks_.begin(), chunks_.end(), p.prefill_chunk) - chunks_.begin());
    const int ni = static_cast<int>(std::lower_bound(decodes_.begin(), decodes_.end(), p.n_decode) -
                                    decodes_.begin());
    by[{ci, ni}][p.kv_prefill][p.kv_decode] = p.time_s;
  }
  for (const auto& [ij, prefixes] : by) {
    Slice sl;
    for (const auto& [prefix, row] : prefixes) {
      sl.prefix.push_back(prefix);
      Row r;
      for (const auto& [kv, t] : row) {
        r.kv.push_back(kv);
        r.time_s.push_back(t);
      }
      sl.rows.push_back(std::move(r));
    }
    slices_.emplace(pair_key(ij.first, ij.second), std::move(sl));
  }
}

double AttentionGrid::Slice::at(double p, double k) const {
  const Pos pp = locate(prefix, p);
  const double lo = along(rows[pp.lo].kv, rows[pp.lo].time_s, k);
  if (pp.lo == pp.hi) return lo;
  return lo + pp.t * (along(rows[pp.hi].kv, rows[pp.hi].time_s, k) - lo);
}

const AttentionGrid::Slice* AttentionGrid::slice(int ci, int ni) const {
  const auto it = slices_.find(pair_key(ci, ni));
  return it == slices_.end() ? nullptr : &it->second;
}

// A pair the profile did not measure (a profiler that stops at fewer decode sequences when a chunk
// is present) is extended linearly along the decode axis from the two nearest measured pairs
// below it with the same chunk; failing that, it is the sum of its prefill part and its decode
// part; failing that, the nearest measured pair (by index).
double AttentionGrid::corner(int ci, int ni, double p, double k) const {
  const bool no_chunk = chunks_[ci] == 0, no_decode = decodes_[ni] == 0;
  if (no_chunk && no_decode) return 0;
  if (no_chunk) p = 0;
  if (no_decode) k = 0;
  if (const Slice* s = slice(ci, ni)) return s->at(p, k);
  int j2 = -1, j1 = -1;
  for (int j = ni - 1; j >= 0 && j1 < 0; --j) {
    if (decodes_[j] == 0 || slice(ci, j) == nullptr) continue;
    (j2 < 0 ? j2 : j1) = j;
  }
  if (j1 >= 0) {
    const double y1 = slice(ci, j1)->at(p, k), y2 = slice(ci, j2)->at(p, k);
    return y2 + (decodes_[ni] - decodes_[j2]) * (y2 - y1) / (decodes_[j2] - decodes_[j1]);
  }
  if (!no_chunk && !no_decode && chunks_[0] == 0 && decodes_[0] == 0 && slice(ci, 0) &&
      slice(0, ni))
    return slice(ci, 0)->at(p, 0) + slice(0, ni)->at(0, k);
  const Slice* best = nullptr;
  int dist = INT32_MAX;
  for (int a = 0; a < static_cast<int>(chunks_.size()); ++a)
    for (int b = 0; b < static_cast<int>(decodes_.size()); ++b)
      if (const Slice* s = slice(a, b); s && std::abs(a - ci) + std::abs(b - ni) < dist) {
        dist = std::abs(a - ci) + std::abs(b - ni);
        best = s;
      }
  return best ? best->at(p, k) : 0;
}

double AttentionGrid::interp(double c, double p, double n, double k) const {
  const Pos pc = locate(chunks_, c), pn = locate(decodes_, n);
  auto at_chunk = [&](int ci) {
    const double lo = corner(ci, pn.lo, p, k);
    return pn.lo == pn.hi ? lo : lo + pn.t * (corner(ci, pn.hi, p, k) - lo);
  };
  const double lo = at_chunk(pc.lo);
  const double v = pc.lo == pc.hi ? lo : lo + pc.t * (at_chunk(pc.hi) - lo);
  return std::max(0.0, v);
}

double AttentionGrid::total(double chunk, double prefix, double n, double kv) const {
  double ps = 0, ds = 0;
  at(chunk, prefix, n, kv, &ps, &ds);
  return ps + ds;
}

void AttentionGrid::at(double chunk, double prefix, double n, double kv, double* prefill_s,
                       double* decode_s) const {
  *prefill_s = *decode_s = 0;
  if (slices_.empty()) return;
  const double tp = chunk > 0 ? interp(chunk, prefix, 0, 0) : 0;
  const double td = n > 0 ? interp(0, 0, n, kv) : 0;
  if (mixed_ && chunk > 0 && n > 0) {
    const double total = interp(chunk, prefix, n, kv);
    const double share = tp + td > 0 ? tp / (tp + td) : 0.5;
    *prefill_s = total * share;
    *decode_s = total - *prefill_s;
  } else {
    *prefill_s = tp;
    *decode_s = td;
  }
}

void ProfileCostModel::Config::check(config::Reader& r) const {
  try {
    Profile p = read_profile(path);
    if (p.attention.empty()) {
      r.fail_key("path", path +
                             ": the profile holds no attention points (it prices the linear "
                             "layers only, as an imported Vidur profile does): attention would "
                             "cost nothing");
    }
  } catch (const InputError& e) {
    r.fail_key("path", e.what());
  }
}

double ProfileCostModel::cuda_graph_size(double tokens) {
  if (tokens <= 0 || tokens > 512) return tokens;
  if (tokens <= 1) return 1;
  if (tokens <= 2) return 2;
  if (tokens <= 4) return 4;
  if (tokens <= 256) return std::ceil(tokens / 8) * 8;
  return std::ceil(tokens / 16) * 16;
}

double ProfileCostModel::padded(double tokens) const {
  if (!cfg_.cuda_graph_sizes.empty()) {
    double best = std::numeric_limits<double>::infinity();
    for (double s : cfg_.cuda_graph_sizes)
      if (s >= tokens && s < best) best = s;
    return std::isfinite(best) ? best : tokens;
  }
  return cfg_.pad_to_cuda_graph_sizes ? cuda_graph_size(tokens) : tokens;
}

ProfileCostModel::ProfileCostModel(const Config& cfg, const CostContext& ctx)
    : ProfileCostModel(cfg, ctx, read_profile(cfg.path)) {}

std::unique_ptr<ProfileCostModel> ProfileCostModel::with_formulas(const Config& cfg,
                                                                  const CostContext& ctx,
                                                                  const Profile& curves,
                                                                  Formulas f) {
  return std::unique_ptr<ProfileCostModel>(new ProfileCostModel(cfg, ctx, curves, std::move(f)));
}

ProfileCostModel::ProfileCostModel(const Config& cfg, const CostContext& ctx, const Profile& p,
                                   Formulas f)
    : cfg_(cfg),
      attention_(p.attention),
      formulas_(std::move(f)),
      layers_(ctx.stage_layers()),
      tp_(ctx.tensor_parallel),
      allreduce_bytes_per_token_(2.0 * ctx.model.hidden_size),
      link_bw_(ctx.gpu.interconnect_Bps),
      link_lat_(ctx.gpu.interconnect_latency_s) {
  const std::string ptp = p.get("tensor_parallel", "1");
  if (ptp != std::to_string(tp_)) {
    throw InputError(cfg.path, "meta.tensor_parallel",
                     "the profile was measured at tensor parallelism " + ptp + ", the pool runs " +
                         std::to_string(tp_));
  }
  const ModelSpec& m = ctx.model;
  check_profile_model(p, m, cfg.path);
  if (m.moe()) {
    if (p.moe.empty() && !formulas_.moe) {
      throw InputError(cfg.path, "moe",
                       "the pool's model " + m.name +
                           " is a mixture of experts but the profile has no MoE layer "
                           "measurements (import a bundle with moe.csv)");
    }
    if (!formulas_.moe) moe_ = MoeGrid(p.moe);
    moe_layers_ = static_cast<double>(m.moe_layers()) * layers_ / m.num_layers;
    num_experts_ = m.num_experts;
    experts_per_token_ = m.experts_per_token;
    expert_gpus_ = ctx.expert_gpus();
    expert_parallel_ = ctx.expert_parallel;
    hidden_bytes_ = 2.0 * m.hidden_size;
    data_parallel_ = ctx.data_parallel;
  }
  if (!p.skew.empty()) skew_ = SkewTable(p.skew, skew_alpha_default(p, cfg.path));
  static const std::set<std::string> kGemm = {"qkv_proj",        "o_proj",  "gate_up_proj",
                                              "down_proj",       "lm_head", "shared_gate_up_proj",
                                              "shared_down_proj"};
  for (const auto& c : p.curves) {
    if (c.op == "all_reduce") {
      all_reduce_ = PiecewiseLinear(c.x, c.time_s);
      continue;
    }
    const double times = c.count * (c.scope == "layer" ? layers_ : 1);
    ops_.push_back(
        {PiecewiseLinear(c.x, c.time_s), times, c.axis == "tokens", kGemm.count(c.op) > 0});
  }
}

void ProfileCostModel::attention_at(double chunk, double prefix, double n, double kv, double* ps,
                                    double* ds) const {
  if (formulas_.attention) {
    *ps = *ds = 0;
    formulas_.attention(chunk, prefix, n, kv, ps, ds);
  } else {
    attention_.at(chunk, prefix, n, kv, ps, ds);
  }
}

double ProfileCostModel::moe_at(double tokens, double experts) const {
  return formulas_.moe ? formulas_.moe(tokens, experts) : moe_.at(tokens, experts);
}

double ProfileCostModel::moe_expert_s(const Batch& b) const {
  if (!has_moe()) return 0;
  const double pad = padded(static_cast<double>(b.padded_tokens()));
  if (pad <= 0) return 0;
  // Every rank's MoE layers route the whole group's (padded) tokens.
  const double routed = b.dp_padded_tokens > 0 ? pad * b.dp_ranks : pad;
  double t;
  if (expert_parallel_) {
    // Whole experts on each GPU: the busiest GPU's pairs, as the tokens that would make them in
    // the profiled (one-GPU) layer, over its activated experts.
    const MoeLoad l = moe_busiest_gpu(routed, num_experts_, experts_per_token_, expert_gpus_);
    t = moe_at(l.pairs / experts_per_token_, l.experts);
  } else {
    // Each expert sliced over the GPUs: every GPU computes every pair with its slice.
    const MoeLoad l = moe_busiest_gpu(routed, num_experts_, experts_per_token_, 1);
    t = moe_at(routed, l.experts) / expert_gpus_;
  }
  return t * moe_layers_;
}

StepCost ProfileCostModel::cost(const Batch& b) const {
  StepCost c;
  const double tokens = static_cast<double>(b.padded_tokens());
  if (tokens <= 0) return c;
  const double pad = padded(tokens);
  // vLLM computes logits (and samples) for every scheduled sequence, a partial prefill chunk's
  // included, and discards those it does not need; a data-parallel rank padded to the group's
  // tokens runs its dummy decodes through the head too.
  const double rows = static_cast<double>(b.num_seqs) + static_cast<double>(std::max<std::int64_t>(
                                                            0, b.padded_tokens() - b.num_tokens()));
  for (const auto& op : ops_) {
    const double x = op.tokens_axis ? pad : rows;
    if (x <= 0) continue;
    const double t = op.curve.at(x) * op.times_per_step;
    (op.gemm ? c.gemm_s : c.overhead_s) += t;
  }
  const double chunk = static_cast<double>(b.num_prefill_tokens);
  double prefix = 0;
  if (chunk > 0) {
    prefix = std::max(0.0, (b.prefill_attention_pairs - chunk * (chunk + 1) / 2) / chunk);
  }
  const double n = b.num_decode_seqs;
  // The profile's decode context is the KV a decode reads besides its new token.
  const double kv = n > 0 ? std::max(0.0, static_cast<double>(b.decode_context_tokens) / n - 1) : 0;
  double ps = 0, ds = 0;
  attention_at(chunk, prefix, n, kv, &ps, &ds);
  if (!skew_.empty() && n >= 2 && b.decode_contexts.size() == static_cast<std::size_t>(n)) {
    // Uneven decode contexts, priced as the profile's skew fit measured them: between all at the
    // mean and all at the longest, by the fit's alpha for the batch's shape (its decodes, skew
    // rate (mean - shortest) / (longest - shortest), longest context and prefix).
    const auto [lo, hi] = std::minmax_element(b.decode_contexts.begin(), b.decode_contexts.end());
    const double k_min = std::max(0.0, *lo - 1.0), k_max = std::max(0.0, *hi - 1.0);
    if (k_max > kv) {
      const double rate = k_max > k_min ? (kv - k_min) / (k_max - k_min) : 0.5;
      const double alpha = skew_.alpha(chunk, n, rate, k_max, prefix);
      const double t_mean = ps + ds, t_max = attention_.total(chunk, prefix, n, k_max);
      if (t_max > t_mean) ds += alpha * (t_max - t_mean);
    }
  }
  c.prefill_attn_s = ps * layers_;
  c.decode_attn_s = ds * layers_;
  if (tp_ > 1) {
    const double bytes = tokens * allreduce_bytes_per_token_;
    double per;
    if (!all_reduce_.empty()) {
      per = all_reduce_.at(bytes);
    } else {
      per = 2.0 * (tp_ - 1) * link_lat_ +
            (link_bw_ > 0 ? 2.0 * (tp_ - 1) / tp_ * bytes / link_bw_ : 0.0);
    }
    c.comm_s = 2.0 * layers_ * per;  // after attention and after the MLP
  }
  if (has_moe()) {
    c.gemm_s += moe_expert_s(b);
    c.comm_s += moe_layers_ *
                moe_dispatch_combine_s(pad, data_parallel_, hidden_bytes_, link_bw_, link_lat_);
  }
  c.overhead_s += cfg_.step_overhead_s + cfg_.per_seq_overhead_s * b.num_seqs;
  return c;
}

}  // namespace kvfleet::sim

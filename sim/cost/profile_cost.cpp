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
  if (by_chunk_.empty()) return default_;
  // The nearest profiled chunk, on a log scale (the grid doubles); no chunk only matches none.
  std::size_t best = 0;
  double dist = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < chunks_.size(); ++i) {
    const double c = chunks_[i];
    const double d = (c == 0 || chunk == 0) ? (c == chunk ? 0 : std::numeric_limits<double>::max())
                                            : std::fabs(std::log(c / chunk));
    if (d < dist) {
      dist = d;
      best = i;
    }
  }
  for (const auto& b : by_chunk_[best]) {
    if (n > b.n_lo && n <= b.n_hi && rate > b.rate_lo && rate <= b.rate_hi &&
        kv_max > b.kv_max_lo && kv_max <= b.kv_max_hi && prefix > b.prefix_lo &&
        prefix <= b.prefix_hi)
      return b.alpha;
  }
  return default_;
}

namespace {

std::uint64_t key(int a, int b, int c, int d) {
  return (static_cast<std::uint64_t>(a) << 48) | (static_cast<std::uint64_t>(b) << 32) |
         (static_cast<std::uint64_t>(c) << 16) | static_cast<std::uint64_t>(d);
}

int index_of(const std::vector<double>& axis, double v) {
  auto it = std::lower_bound(axis.begin(), axis.end(), v);
  return it != axis.end() && *it == v ? static_cast<int>(it - axis.begin()) : -1;
}

// Up to two (index, weight) pairs bracketing q on an axis; the end segments are extended
// linearly. `from` skips leading values (a decode context axis starts at its first positive
// value); below the first usable value the result is flat.
struct Bracket {
  int i[2];
  double w[2];
  int n;
};
Bracket bracket(const std::vector<double>& axis, double q, int from = 0) {
  const int last = static_cast<int>(axis.size()) - 1;
  if (from >= last || q <= axis[from]) return {{from, from}, {1, 0}, 1};
  int hi = static_cast<int>(std::upper_bound(axis.begin() + from, axis.end(), q) - axis.begin());
  hi = std::min(hi, last);
  const int lo = hi - 1;
  if (axis[lo] == q) return {{lo, lo}, {1, 0}, 1};
  const double t = (q - axis[lo]) / (axis[hi] - axis[lo]);
  return {{lo, hi}, {1 - t, t}, 2};
}

}  // namespace

AttentionGrid::AttentionGrid(const std::vector<AttentionPoint>& points) {
  std::array<std::set<double>, 4> vals;
  for (const auto& p : points) {
    vals[0].insert(p.prefill_chunk);
    vals[1].insert(p.kv_prefill);
    vals[2].insert(p.n_decode);
    vals[3].insert(p.kv_decode);
  }
  for (int a = 0; a < 4; ++a) axes_[a].assign(vals[a].begin(), vals[a].end());
  for (const auto& p : points) {
    map_[key(index_of(axes_[0], p.prefill_chunk), index_of(axes_[1], p.kv_prefill),
             index_of(axes_[2], p.n_decode), index_of(axes_[3], p.kv_decode))] = p.time_s;
    if (p.prefill_chunk > 0 && p.n_decode > 0) mixed_ = true;
  }
  zero_p_ = index_of(axes_[1], 0);
  zero_k_ = index_of(axes_[3], 0);
}

// The grid's value at an index tuple. Axes that cannot matter are pinned (the prefix when there
// is no chunk, the decode context when there are no decode sequences); a point the grid lacks
// (vLLM's profiler stops at fewer decode sequences when a chunk is present) is extrapolated
// linearly along the decode-sequence axis, else taken as the sum of its prefill and decode parts.
double AttentionGrid::point(int ci, int pi, int ni, int ki) const {
  const bool no_chunk = axes_[0][ci] == 0;
  const bool no_decode = axes_[2][ni] == 0;
  if (no_chunk && zero_p_ >= 0) pi = zero_p_;
  if (no_decode && zero_k_ >= 0) ki = zero_k_;
  if (no_chunk && no_decode) return 0;
  if (auto it = map_.find(key(ci, pi, ni, ki)); it != map_.end()) return it->second;
  int j2 = -1, j1 = -1;
  for (int j = ni - 1; j >= 0 && j1 < 0; --j) {
    if (axes_[2][j] == 0 || !map_.count(key(ci, pi, j, ki))) continue;
    (j2 < 0 ? j2 : j1) = j;
  }
  const double n = axes_[2][ni];
  if (j1 >= 0) {
    const double y1 = map_.at(key(ci, pi, j1, ki)), y2 = map_.at(key(ci, pi, j2, ki));
    return y2 + (n - axes_[2][j2]) * (y2 - y1) / (axes_[2][j2] - axes_[2][j1]);
  }
  if (!no_chunk && !no_decode && zero_k_ >= 0) {
    const int zc = index_of(axes_[0], 0);
    const int zn = index_of(axes_[2], 0);
    if (zc >= 0 && zn >= 0) return point(ci, pi, zn, zero_k_) + point(zc, pi, ni, ki);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

double AttentionGrid::interp(double c, double p, double n, double k) const {
  const Bracket bc = bracket(axes_[0], c), bp = bracket(axes_[1], p), bn = bracket(axes_[2], n);
  // The decode context axis for decode sequences starts at its first positive value.
  const int kfrom = zero_k_ >= 0 && n > 0 ? zero_k_ + 1 : 0;
  const Bracket bk = bracket(axes_[3], k, kfrom);
  double sum = 0;
  for (int a = 0; a < bc.n; ++a)
    for (int b = 0; b < bp.n; ++b)
      for (int d = 0; d < bn.n; ++d)
        for (int e = 0; e < bk.n; ++e) {
          const double w = bc.w[a] * bp.w[b] * bn.w[d] * bk.w[e];
          if (w != 0) sum += w * point(bc.i[a], bp.i[b], bn.i[d], bk.i[e]);
        }
  return std::max(0.0, sum);
}

void AttentionGrid::at(double chunk, double prefix, double n, double kv, double* prefill_s,
                       double* decode_s) const {
  *prefill_s = *decode_s = 0;
  if (map_.empty()) return;
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

ProfileCostModel::ProfileCostModel(const Config& cfg, const CostContext& ctx, const Profile& p)
    : cfg_(cfg),
      attention_(p.attention),
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
    if (p.moe.empty()) {
      throw InputError(cfg.path, "moe",
                       "the pool's model " + m.name +
                           " is a mixture of experts but the profile has no MoE layer "
                           "measurements (import a bundle with moe.csv)");
    }
    moe_ = MoeGrid(p.moe);
    moe_layers_ = static_cast<double>(m.moe_layers()) * layers_ / m.num_layers;
    num_experts_ = m.num_experts;
    experts_per_token_ = m.experts_per_token;
    expert_gpus_ = ctx.expert_gpus();
    expert_parallel_ = ctx.expert_parallel;
    hidden_bytes_ = 2.0 * m.hidden_size;
    data_parallel_ = ctx.data_parallel;
  }
  if (!p.skew.empty()) skew_ = SkewTable(p.skew, skew_alpha_default(p, cfg.path));
  static const std::set<std::string> kGemm = {"qkv_proj", "o_proj", "gate_up_proj", "down_proj",
                                              "lm_head"};
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

StepCost ProfileCostModel::cost(const Batch& b) const {
  StepCost c;
  const double tokens = static_cast<double>(b.padded_tokens());
  if (tokens <= 0) return c;
  const double pad = padded(tokens);
  for (const auto& op : ops_) {
    const double x = op.tokens_axis ? pad : static_cast<double>(b.num_sampled);
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
  const double kv = n > 0 ? static_cast<double>(b.decode_context_tokens) / n : 0;
  double ps = 0, ds = 0;
  attention_.at(chunk, prefix, n, kv, &ps, &ds);
  if (!skew_.empty() && n >= 2 && b.decode_contexts.size() == static_cast<std::size_t>(n)) {
    // Uneven decode contexts, priced as the profile measured them: a batch of long contexts
    // (those above the mean, at their mean) among short ones lies between all at the mean and
    // all at the long contexts' mean, by the profile's alpha for its share of long contexts.
    double long_sum = 0, long_n = 0;
    for (const std::int32_t ctx : b.decode_contexts) {
      if (ctx > kv) {
        long_sum += ctx;
        long_n += 1;
      }
    }
    if (long_n > 0) {
      const double kv_long = long_sum / long_n;
      const double alpha = skew_.alpha(chunk, n, long_n / n, kv_long, prefix);
      double ps_long = 0, ds_long = 0;
      attention_.at(chunk, prefix, n, kv_long, &ps_long, &ds_long);
      ds = std::max(0.0, ds + alpha * ((ps_long + ds_long) - (ps + ds)));
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
  if (!moe_.empty()) {
    // Every rank's MoE layers route the whole group's (padded) tokens.
    const double routed = b.dp_padded_tokens > 0 ? pad * b.dp_ranks : pad;
    double t;
    if (expert_parallel_) {
      // Whole experts on each GPU: the busiest GPU's pairs, as the tokens that would make them
      // in the profiled (one-GPU) layer, over its activated experts.
      const MoeLoad l = moe_busiest_gpu(routed, num_experts_, experts_per_token_, expert_gpus_);
      t = moe_.at(l.pairs / experts_per_token_, l.experts);
    } else {
      // Each expert sliced over the GPUs: every GPU computes every pair with its slice.
      const MoeLoad l = moe_busiest_gpu(routed, num_experts_, experts_per_token_, 1);
      t = moe_.at(routed, l.experts) / expert_gpus_;
    }
    c.gemm_s += t * moe_layers_;
    c.comm_s += moe_layers_ *
                moe_dispatch_combine_s(pad, data_parallel_, hidden_bytes_, link_bw_, link_lat_);
  }
  c.overhead_s += cfg_.step_overhead_s + cfg_.per_seq_overhead_s * b.num_seqs;
  return c;
}

}  // namespace kvfleet::sim

#pragma once
// A calibration profile: the measured (or imported, or roofline-derived) times of the operations
// of one model's engine step on one GPU type at one tensor-parallel degree. kvfleet-calibrate
// writes it; the `profile` cost model reads it. HDF5 schema (docs/calibration.md), every dataset
// a compound table that h5py and pandas read directly:
//   /meta       key, value (strings): format = kvfleet-profile, schema_version, source, gpu, model,
//               dtype, tensor_parallel, measured (true/false), provenance, date, ...
//   /curves     op, scope (layer | step), axis (tokens | sequences | bytes), count, x, time_s,
//               spread_s: one row per point; a `layer` op runs `count` times in each of the
//               model's layers, a `step` op `count` times per step
//   /attention  prefill_chunk, kv_prefill, n_decode, kv_decode, time_s, spread_s: attention of
//               one layer for a batch of one prefill chunk (tokens over a cached prefix) and
//               n_decode decode sequences of kv_decode cached tokens each
//   /moe        tokens, activated_experts, time_s, spread_s: one mixture-of-experts layer (router
//               and experts) on one GPU for `tokens` tokens whose top-k routing activates that
//               many distinct experts (optional: MoE models)
//   /skew       prefill_chunk, n_lo, n_hi, rate_lo, rate_hi, kv_max_lo, kv_max_hi, prefix_lo,
//               prefix_hi, alpha, samples: the skew correction of attention when decode contexts
//               are uneven, per bucket (lo, hi] of decode sequences, skew rate (share of long
//               contexts), the long contexts' context and the prefill prefix (optional; meta
//               skew_alpha_default for other buckets)
//   /fits       op, model, params, n_train, n_test, median_ape, p95_ape (optional)
#include <string>
#include <vector>

#include "sim/io/table.h"
#include "sim/model/presets.h"

namespace kvfleet::sim {

// The schema version this kvfleet writes and reads (meta.schema_version).
inline constexpr const char* kProfileSchemaVersion = "1";
// Bounds a profile's numbers must keep: a call's time in seconds, and a size or count.
inline constexpr double kMaxProfileTimeS = 1e3;
inline constexpr double kMaxProfileSize = 1e12;

struct ProfileCurve {
  std::string op;                // qkv_proj, o_proj, gate_up_proj, down_proj, lm_head, ...
  std::string scope = "layer";   // layer | step
  std::string axis = "tokens";   // tokens | sequences | bytes
  double count = 1;              // calls per layer (scope layer) or per step (scope step)
  std::vector<double> x;         // ascending
  std::vector<double> time_s;    // median per call
  std::vector<double> spread_s;  // half the p10–p90 range (0 when unknown)
};

struct AttentionPoint {
  double prefill_chunk = 0;
  double kv_prefill = 0;
  double n_decode = 0;
  double kv_decode = 0;
  double time_s = 0;
  double spread_s = 0;
};

struct MoePoint {
  double tokens = 0;
  double activated_experts = 0;
  double time_s = 0;
  double spread_s = 0;
};

// Attention of a batch whose decode contexts are uneven lies between its time with every context
// at the mean and with every context at the long ones': mean + alpha × (long − mean). The profile
// measured two-valued batches (some long contexts among short ones); kvfleet splits a batch at
// its mean. One bucket of the measured alphas: decode sequences n, skew rate (the share of long
// contexts), the long contexts' context and the prefill chunk's prefix, each in (lo, hi];
// prefill_chunk a profiled value.
struct SkewBucket {
  double prefill_chunk = 0;
  double n_lo = 0, n_hi = 0;
  double rate_lo = 0, rate_hi = 0;
  double kv_max_lo = 0, kv_max_hi = 0;
  double prefix_lo = 0, prefix_hi = 0;
  double alpha = 0;
  double samples = 0;
};

struct ProfileFit {
  std::string op;
  std::string model;   // the fitted form, e.g. "a + b*kv_bytes + c*batch"
  std::string params;  // its coefficients, "name=value" separated by spaces
  long n_train = 0;
  long n_test = 0;
  double median_ape = 0;  // held-out absolute percentage error, fraction
  double p95_ape = 0;
};

struct Profile {
  std::vector<std::pair<std::string, std::string>> meta;
  std::vector<ProfileCurve> curves;
  std::vector<AttentionPoint> attention;
  std::vector<MoePoint> moe;
  std::vector<SkewBucket> skew;
  std::vector<ProfileFit> fits;

  // The value of a metadata key, or `fallback`.
  std::string get(const std::string& key, const std::string& fallback = "") const;
  void set(const std::string& key, const std::string& value);
  const ProfileCurve* curve(const std::string& op) const;
};

// Reads a profile; throws InputError naming the file, the dataset or column, and the problem
// (missing or empty dataset, wrong type or shape, wrong format marker or schema version, unsorted,
// negative or out-of-range points, unknown scope or axis).
Profile read_profile(const std::string& path);
// Writes atomically (temporary name, then rename). Throws std::runtime_error on I/O failure.
void write_profile(const std::string& path, const Profile& p);
// The tables of a profile file, as declared (docs/outputs.md).
std::vector<TableDoc> profile_table_docs();
// The checks read_profile applies, for profiles built in memory; throws InputError with `where`.
void check_profile(const Profile& p, const std::string& where);

// The skew correction's alpha outside every bucket (meta skew_alpha_default, 0 when absent);
// throws InputError(`where`) when it is not a number within ±100.
double skew_alpha_default(const Profile& p, const std::string& where);

// The model facts a profile records (meta keys architecture, model_hidden_size,
// model_num_attention_heads, model_num_kv_heads, model_vocab_size, model_moe): what it was
// measured on, so that a pool of another model is refused.
void set_model_facts(Profile& p, const ModelSpec& m);
// Throws InputError(`where`) naming both when the profile's recorded facts contradict `m`: another
// architecture, other dimensions, or a mixture of experts for a dense model (or the reverse).
// Facts the profile lacks are not checked.
void check_profile_model(const Profile& p, const ModelSpec& m, const std::string& where);

}  // namespace kvfleet::sim

// The `fitted` cost model: which fit each kind of operation takes (own, median, left out), the
// fitted forms composed as a profile is (a large prefill at the fitted compute rate, a single
// decode at the launch times and weight reads), and its configuration's errors.
#include "sim/cost/fitted.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "sim/core/error.h"
#include "sim/simulation/scenario.h"
#include "sim/testing/run.h"

namespace kvfleet::sim {
namespace {

const ModelSpec& model(const std::string& name) {
  for (const auto& m : model_presets())
    if (m.name == name) return m;
  throw std::runtime_error("no model preset " + name);
}
const GpuSpec& gpu(const std::string& name) {
  for (const auto& g : gpu_presets())
    if (g.name == name) return g;
  throw std::runtime_error("no GPU preset " + name);
}

StepCost price(const std::string& m, const std::string& g, const Batch& b,
               FittedCostModel::Config cfg = {}, int tp = 1) {
  CostContext ctx{model(m), gpu(g), tp, 2, 2};
  return FittedCostModel(cfg, ctx).cost(b);
}

Batch decode(int n, std::int64_t context_each) {
  Batch b;
  b.num_seqs = b.num_decode_seqs = b.num_sampled = n;
  b.decode_context_tokens = n * context_each;
  return b;
}

Batch prefill(std::int64_t tokens) {
  Batch b;
  b.num_seqs = b.num_sampled = 1;
  b.num_prefill_tokens = tokens;
  b.prefill_context_tokens = tokens;
  b.prefill_attention_pairs = 0.5 * tokens * (tokens + 1.0);
  return b;
}

TEST(Fitted, EveryPublicFitHasANameASourceAndItsLinearLayers) {
  ASSERT_GE(public_fits().size(), 4u);
  for (const GpuFit& f : public_fits()) {
    EXPECT_STRNE(f.name, "");
    EXPECT_STRNE(f.source, "");
    EXPECT_TRUE(f.gemm.has) << f.name;
    EXPECT_GT(f.gemm.p[0], 0.3) << f.name;  // compute efficiency
    EXPECT_LT(f.gemm.p[0], 1.2) << f.name;
    EXPECT_GT(f.gemm.p[2], 0.3) << f.name;  // memory efficiency
  }
}

TEST(Fitted, OwnFitWhereThereIsOneElseTheMedianOfTheOthers) {
  std::string from;
  const FitParams own = fit_for("gemm", "H100-SXM", true, {}, &from);
  EXPECT_EQ(from, "H100-SXM");
  const FitParams med = fit_for("gemm", "H100-SXM", false, {}, &from);
  EXPECT_NE(from.find("median of "), std::string::npos) << from;
  EXPECT_EQ(from.find("H100-SXM"), std::string::npos) << from;  // its own is not in its median
  EXPECT_NE(own.p[0], med.p[0]);
  // A GPU without a fit takes the median of every fit.
  fit_for("gemm", "L40S", true, {}, &from);
  EXPECT_NE(from.find("H100-SXM"), std::string::npos) << from;
  // Left out, its own fit is not used, and neither in the median.
  const FitParams out = fit_for("gemm", "H100-SXM", true, {"H100-SXM"}, &from);
  EXPECT_EQ(out.p[0], med.p[0]);
  EXPECT_EQ(from.find("H100-SXM"), std::string::npos) << from;
  // A kind fitted on no GPU left takes the stand-in named for it.
  std::vector<std::string> all;
  for (const GpuFit& f : public_fits()) all.push_back(f.name);
  all.erase(std::remove(all.begin(), all.end(), std::string("RTX-PRO-6000")), all.end());
  if (fit_for("act", "X", true, all).has) {
    fit_for("act", "X", true, all, &from);
    EXPECT_NE(from.find("norm"), std::string::npos) << from;
  }
}

TEST(Fitted, AGpuLeftOutTakesTheFalloffRelativeToItsRidgePoint) {
  // The median of the others' m_half, each over its own ridge point, times this GPU's; every
  // other parameter is the plain median.
  std::vector<double> ratio, ec;
  for (const GpuFit& f : public_fits()) {
    if (!f.gemm.has || std::string(f.name) == "RTX-4090") continue;
    ASSERT_GT(f.ridge, 0) << f.name;
    ratio.push_back(f.gemm.p[1] / f.ridge);
    ec.push_back(f.gemm.p[0]);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  };
  const double ridge = 165.2e12 / 1008e9;
  std::string from;
  const FitParams scaled = fit_for("gemm", "RTX-4090", true, {"RTX-4090"}, &from, ridge);
  EXPECT_DOUBLE_EQ(scaled.p[1], median(ratio) * ridge);
  EXPECT_DOUBLE_EQ(scaled.p[0], median(ec));
  EXPECT_NE(from.find("ridge point"), std::string::npos) << from;
  // Twice the compute per byte, twice the falloff; without a ridge, the plain median.
  EXPECT_DOUBLE_EQ(fit_for("gemm", "RTX-4090", true, {"RTX-4090"}, nullptr, 2 * ridge).p[1],
                   2 * scaled.p[1]);
  const FitParams plain = fit_for("gemm", "RTX-4090", true, {"RTX-4090"});
  EXPECT_NE(plain.p[1], scaled.p[1]);
  // Its own fit is its own, whatever the ridge.
  EXPECT_EQ(fit_for("gemm", "RTX-4090", true, {}, nullptr, ridge).p[1],
            fit_for("gemm", "RTX-4090", true, {}).p[1]);
}
TEST(Fitted, APrefillOfManyTokensRunsAtTheFittedComputeRate) {
  // Llama-3.1-8B on an H100: 8,192 prompt tokens are compute bound; the linear layers take
  // 2 x 6.98e9 parameters x 8,192 tokens at the H100's 989 TFLOP/s x its fitted efficiency.
  const StepCost c = price("Llama-3.1-8B", "H100-SXM", prefill(8192));
  const FitParams g = fit_for("gemm", "H100-SXM", true, {});
  const double linear = 2.0 * 6.98e9 * 8192 / (989.4e12 * g.p[0]);
  EXPECT_NEAR(c.gemm_s / linear, 1.0, 0.05) << c.gemm_s << " against " << linear;
  EXPECT_GT(c.prefill_attn_s, 0);
  EXPECT_EQ(c.decode_attn_s, 0);
}

TEST(Fitted, ADecodeStepReadsTheWeightsAtTheFittedBandwidth) {
  // One decode of Llama-3.1-8B on an RTX 4090: ~15 GB of linear weights at 1,008 GB/s x em,
  // plus a launch time per GEMM.
  const StepCost c = price("Llama-3.1-8B", "RTX-4090", decode(1, 1000));
  const FitParams g = fit_for("gemm", "RTX-4090", true, {});
  const double weights = 2.0 * (6.98e9 + 0.525e9) / (1008e9 * g.p[2]);
  const double launches = (4 * 32 + 1) * g.p[3];
  EXPECT_NEAR(c.gemm_s / (weights + launches), 1.0, 0.05);
  EXPECT_GT(c.decode_attn_s, 0);
  EXPECT_GT(c.overhead_s, 0);  // norms, rotary, activation, sampler
}

TEST(Fitted, TimeGrowsWithTokensAndContext) {
  double last = 0;
  for (int n : {1, 8, 64, 256}) {
    const double t = price("Llama-3.1-8B", "A100-80GB", decode(n, 2000)).total_s();
    EXPECT_GT(t, last) << n;
    last = t;
  }
  EXPECT_GT(price("Llama-3.1-8B", "A100-80GB", decode(64, 8000)).decode_attn_s,
            price("Llama-3.1-8B", "A100-80GB", decode(64, 2000)).decode_attn_s);
}

TEST(Fitted, MedianModeIsTheOwnGpuLeftOut) {
  FittedCostModel::Config median, left;
  median.fit = "median";
  left.leave_out = {"RTX-4090"};
  for (const Batch& b : {decode(32, 3000), prefill(2048)}) {
    EXPECT_DOUBLE_EQ(price("Llama-3.1-8B", "RTX-4090", b, median).total_s(),
                     price("Llama-3.1-8B", "RTX-4090", b, left).total_s());
    EXPECT_NE(price("Llama-3.1-8B", "RTX-4090", b).total_s(),
              price("Llama-3.1-8B", "RTX-4090", b, left).total_s());
  }
}

TEST(Fitted, MixtureOfExpertsPricesTheActivatedExperts) {
  // Qwen3-30B-A3B: a decode of 1 sequence activates 8 experts, one of 256 nearly all 128.
  const StepCost one = price("Qwen3-30B-A3B", "RTX-PRO-6000", decode(1, 1000));
  const StepCost many = price("Qwen3-30B-A3B", "RTX-PRO-6000", decode(256, 1000));
  EXPECT_GT(many.gemm_s, 4 * one.gemm_s);
  EXPECT_LT(many.gemm_s, 30 * one.gemm_s);
}

TEST(Fitted, ScenarioErrorsNameTheKey) {
  const std::string base =
      "name: t\nworkload:\n  impl: synthetic\n  num_requests: 10\n"
      "  arrival: {impl: poisson, rate_per_s: 1}\n"
      "  input_tokens: {impl: fixed, value: 100}\n  output_tokens: {impl: fixed, value: 10}\n"
      "pools:\n  - name: p\n    gpu: H100-SXM\n    model: Llama-3.1-8B\n"
      "    cost_model:\n      impl: fitted\n";
  try {
    load_scenario_text(base + "      leave_out: [H200]\n", "s.yaml", ".", {});
    FAIL() << "an unknown fit was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("leave_out"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("H200"), std::string::npos) << e.what();
  }
  try {
    load_scenario_text(base + "      fit: best\n", "s.yaml", ".", {});
    FAIL() << "an unknown fit mode was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("fit"), std::string::npos) << e.what();
  }
  std::string every;
  for (const GpuFit& f : public_fits()) every += std::string(every.empty() ? "" : ", ") + f.name;
  try {
    load_scenario_text(base + "      leave_out: [" + every + "]\n", "s.yaml", ".", {});
    FAIL() << "leaving every fit out was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no fit of"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(load_scenario_text(base, "s.yaml", ".", {}));
}

TEST(Fitted, AdjustFactorsMoveTheOperationsTheyName) {
  const Batch big = prefill(8192), small = decode(64, 2048);
  FittedCostModel::Config c;
  const StepCost p0 = price("Llama-3.1-8B", "H100-SXM", big, c);
  const StepCost d0 = price("Llama-3.1-8B", "H100-SXM", small, c);
  c.adjust.gemm_compute =
      0.5;  // half the compute efficiency: a large prefill's GEMMs twice as long
  const StepCost p1 = price("Llama-3.1-8B", "H100-SXM", big, c);
  EXPECT_GT(p1.gemm_s, 1.8 * p0.gemm_s);
  EXPECT_NEAR(p1.prefill_attn_s, p0.prefill_attn_s, 1e-12);
  c = {};
  c.adjust.attention_bandwidth = 0.5;  // decode attention reads KV at half the rate
  const StepCost d1 = price("Llama-3.1-8B", "H100-SXM", small, c);
  EXPECT_GT(d1.decode_attn_s, 1.6 * d0.decode_attn_s);
  EXPECT_NEAR(d1.gemm_s, d0.gemm_s, 1e-12);
}

TEST(CalibrationFile, APoolTakesItsSettingsUnderItsOwn) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "kvfleet_calibration_file_test";
  fs::create_directories(dir);
  std::ofstream(dir / "cal.yaml") << "kvfleet_calibration: 1\ngpu: H100-SXM\npool:\n"
                                     "  cost_model: {impl: fitted, step_overhead_s: 0.002,\n"
                                     "    adjust: {gemm_bandwidth: 0.8}}\n"
                                     "  frontend: {request_s: 0.01}\n";
  const std::string wl =
      "workload:\n  impl: synthetic\n  num_requests: 10\n"
      "  arrival: {impl: poisson, rate_per_s: 1}\n"
      "  input_tokens: {impl: fixed, value: 100}\n  output_tokens: {impl: fixed, value: 10}\n";
  const std::string base = wl + "pools:\n  - model: Llama-3.1-8B\n    calibration: cal.yaml\n";
  const Scenario sc = load_scenario_text(base, "s.yaml", dir.string(), {});
  EXPECT_NE(sc.resolved_yaml.find("gemm_bandwidth: 0.8"), std::string::npos) << sc.resolved_yaml;
  EXPECT_NE(sc.resolved_yaml.find("step_overhead_s: 0.002"), std::string::npos);
  EXPECT_NE(sc.resolved_yaml.find("request_s: 0.01"), std::string::npos);
  // The pool's own keys win.
  const Scenario own = load_scenario_text(
      base +
          "    frontend: {request_s: 0.02}\n    cost_model: {impl: fitted, step_overhead_s: 0}\n",
      "s.yaml", dir.string(), {});
  EXPECT_NE(own.resolved_yaml.find("request_s: 0.02"), std::string::npos);
  EXPECT_NE(own.resolved_yaml.find("gemm_bandwidth: 0.8"), std::string::npos);
  EXPECT_EQ(own.resolved_yaml.find("step_overhead_s: 0.002"), std::string::npos);
  // `cost_model: fitted` written as a word stays the fitted model, whatever the file holds.
  std::ofstream(dir / "frontend.yaml") << "kvfleet_calibration: 1\ngpu: H100-SXM\npool:\n"
                                          "  frontend: {request_s: 0.01}\n";
  for (const char* file : {"cal.yaml", "frontend.yaml"}) {
    const Scenario word = load_scenario_text(wl +
                                                 "pools:\n  - model: Llama-3.1-8B\n"
                                                 "    cost_model: fitted\n    calibration: " +
                                                 std::string(file) + "\n",
                                             "s.yaml", dir.string(), {});
    EXPECT_NE(word.resolved_yaml.find("impl: fitted"), std::string::npos) << file << "\n"
                                                                          << word.resolved_yaml;
  }
  // Another GPU, another cost model, or not a calibration file: named errors.
  auto error_of = [&](const std::string& yaml) {
    try {
      load_scenario_text(yaml, "s.yaml", dir.string(), {});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error_of(base + "    gpu: A100-80GB\n").find("fitted on H100-SXM runs"),
            std::string::npos);
  EXPECT_NE(error_of(base + "    cost_model: {impl: roofline}\n").find("corrects the fitted"),
            std::string::npos);
  std::ofstream(dir / "not.yaml") << "pools: []\n";
  EXPECT_NE(error_of(wl + "pools:\n  - calibration: not.yaml\n").find("kvfleet_calibration"),
            std::string::npos);
  EXPECT_NE(error_of(wl + "pools:\n  - calibration: missing.yaml\n").find("missing.yaml"),
            std::string::npos);
  // A wrong setting in the file is named in the file, not in the scenario it goes into.
  const std::pair<const char*, const char*> bad[] = {
      {"  cost_model: {impl: fitted, adjust: {gemm_bandwidth: lots}}\n",
       "bad.yaml: pool.cost_model.adjust.gemm_bandwidth: expected a number"},
      {"  frontend: {bogus: 1}\n", "bad.yaml: pool.frontend.bogus: unknown key"},
      {"  cost_model: {impl: {x: 1}}\n", "bad.yaml: pool.cost_model.impl: must be fitted"},
  };
  for (const auto& [pool, message] : bad) {
    std::ofstream(dir / "bad.yaml") << "kvfleet_calibration: 1\ngpu: H100-SXM\npool:\n" << pool;
    EXPECT_NE(error_of(wl + "pools:\n  - calibration: bad.yaml\n").find(message), std::string::npos)
        << error_of(wl + "pools:\n  - calibration: bad.yaml\n");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvfleet::sim

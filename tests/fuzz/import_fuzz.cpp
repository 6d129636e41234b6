// Fuzz harness: the readers of measurements and models brought in from outside (issue 33): an
// inference-perf result folder, a `vllm bench serve` result JSON, vLLM engine arguments (JSON,
// YAML or a command line) and a Hugging Face config.json. Input: one byte choosing the reader,
// then the file(s); an inference-perf folder's files are separated by lines "@@@" in the order
// config.yaml, stage_0, stage_1 and summary lifecycle metrics (an empty part: the file is absent).
// A plan that is accepted must build a scenario kvfleet loads, or refuses with InputError.
// With bit 0x20 of the first byte: an LLMServingSim-style run folder instead (meta.json,
// requests.jsonl and config.json, separated likewise), planned by plan_replay and its measured
// latencies read by read_measured.
#include <cmath>

#include <yaml-cpp/yaml.h>

#include "fuzz_support.h"
#include "sim/model/presets.h"
#include "sim/replay/bench_results.h"
#include "sim/replay/locate.h"
#include "sim/replay/replay.h"
#include "sim/simulation/scenario.h"

namespace {

constexpr const char* kPlainResult =
    R"({"model_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": 10, "request_rate": 2.0,
        "burstiness": 1.0, "duration": 6.0, "completed": 10, "total_input_tokens": 5000,
        "total_output_tokens": 640, "request_throughput": 1.6, "mean_ttft_ms": 40.0,
        "median_ttft_ms": 38.0, "p99_ttft_ms": 70.0, "mean_tpot_ms": 7.0})";

void check_plan(const kvfleet::sim::BenchReplay& plan) {
  using namespace kvfleet;
  FUZZ_CHECK(!plan.groups.empty());
  for (const auto& row : plan.trace) {
    FUZZ_CHECK(std::isfinite(row[0]) && row[0] >= 0);
    FUZZ_CHECK(row[1] >= 1 && row[2] >= 1);
  }
  YAML::Node sc = plan.scenario;
  if (!plan.trace.empty()) {
    std::string csv = "arrived_at,num_prefill_tokens,num_decode_tokens\n";
    char buf[96];
    for (const auto& row : plan.trace) {
      std::snprintf(buf, sizeof buf, "%.6f,%.0f,%.0f\n", row[0], row[1], row[2]);
      csv += buf;
    }
    sc["workload"]["path"] = fuzz::write_file("trace.csv", csv);
  }
  YAML::Emitter em;
  em.SetDoublePrecision(12);
  em << sc;
  try {
    sim::load_scenario_text(em.c_str(), "<replay>", fuzz::scratch(), {});
  } catch (const sim::InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kvfleet;
  fuzz::Bytes in(data, size);
  const std::uint8_t choice = in.byte();
  fuzz::clear_scratch();
  sim::BenchOptions o;
  o.gpu = "H100-SXM";
  if (choice & 0x10) o.model = "Llama-3.1-8B";  // else matched from the result's model name
  try {
    if (choice & 0x20) {  // a run folder (kvfleet replay RUN_DIR)
      const auto parts = fuzz::split(in.rest(), "\n@@@\n");
      static const char* kNames[] = {"meta.json", "requests.jsonl", "config.json"};
      for (std::size_t i = 0; i < parts.size() && i < 3; ++i)
        if (!parts[i].empty()) fuzz::write_file(std::string("run/") + kNames[i], parts[i]);
      sim::ReplayOptions ro{fuzz::scratch() + "/run", "", "", (choice & 0x40) ? "H100-SXM" : ""};
      const sim::ReplayPlan plan = sim::plan_replay(ro);
      try {
        sim::load_scenario_text(plan.yaml, "<replay>", fuzz::scratch(), {});
      } catch (const sim::InputError&) {
      }
      const auto measured = sim::read_measured(fuzz::scratch() + "/run/requests.jsonl");
      (void)measured;
      fuzz::check_memory();
      return 0;
    }
    switch (choice % 4) {
      case 0: {  // an inference-perf result folder
        const auto parts = fuzz::split(in.rest(), "\n@@@\n");
        static const char* kNames[] = {"config.yaml", "stage_0_lifecycle_metrics.json",
                                       "stage_1_lifecycle_metrics.json",
                                       "summary_lifecycle_metrics.json"};
        for (std::size_t i = 0; i < parts.size() && i < 4; ++i)
          if (!parts[i].empty()) fuzz::write_file(std::string("ip/") + kNames[i], parts[i]);
        o.path = fuzz::scratch() + "/ip";
        if (sim::result_kind(o.path) != sim::ResultKind::kInferencePerf) return 0;
        check_plan(sim::plan_bench_replay(o));
        break;
      }
      case 1: {  // a vllm bench serve result
        o.path = fuzz::write_file("result.json", in.rest());
        if (sim::result_kind(o.path) != sim::ResultKind::kVllmBench) return 0;
        check_plan(sim::plan_bench_replay(o));
        break;
      }
      case 2: {  // engine arguments beside a good result
        o.engine_args = fuzz::write_file("engine_args.txt", in.rest());
        o.path = fuzz::write_file("result.json", kPlainResult);
        check_plan(sim::plan_bench_replay(o));
        break;
      }
      default: {  // a Hugging Face config.json
        const sim::ModelSpec m =
            sim::read_hf_config(fuzz::write_file("config.json", in.rest()), "m");
        FUZZ_CHECK(m.num_layers >= 1 && m.hidden_size >= 1 && m.vocab_size >= 1);
        FUZZ_CHECK(std::isfinite(m.num_params) && m.num_params > 0);
        FUZZ_CHECK(m.kv_bytes_per_token(2) > 0);
        break;
      }
    }
  } catch (const sim::InputError&) {
  }
  fuzz::check_memory();
  return 0;
}

// Fuzz harness: calibration profiles. Input: one byte choosing what is fuzzed, then its content:
//   0: a kvfleet profile (HDF5) whose tables the harness writes from the input: which datasets
//      exist, each column's type, the rows and their values; read_profile must accept it or name
//      the problem, and the profile cost model built on what it accepts prices batches as finite,
//      non-negative times;
//   1: an LLMServingSim bundle (meta.yaml and tp1/{dense,per_sequence,attention}.csv, separated
//      in the input by lines "--file");
//   2: a Vidur tree (mlp.csv, attention.csv and network all_reduce.csv, separated likewise).
#include <cmath>
#include <filesystem>

#include "calibration/import.h"
#include "fuzz_support.h"
#include "sim/cost/profile_cost.h"
#include "sim/cost/profile_data.h"
#include "sim/io/h5.h"
#include "sim/model/presets.h"

namespace {

using namespace kvfleet;

// A column of `rows` values, of a type the input chooses (mostly the right one), or absent.
void column(fuzz::Bytes& in, sim::Table& t, const std::string& name, std::size_t rows,
            const std::vector<std::string>& words) {
  const std::uint8_t kind = in.byte() % 16;
  if (kind == 15) return;  // missing
  if (kind == 14 || (!words.empty() && kind < 10)) {
    auto& v = t.str(name);
    for (std::size_t r = 0; r < rows; ++r) v.push_back(in.pick(words));
  } else if (kind == 13) {
    auto& v = t.i64(name);
    for (std::size_t r = 0; r < rows; ++r) v.push_back(static_cast<std::int32_t>(in.u32()));
  } else {
    auto& v = t.f64(name);
    for (std::size_t r = 0; r < rows; ++r) v.push_back(in.number());
  }
}

void fuzz_profile_file(fuzz::Bytes& in) {
  const std::string path = fuzz::scratch() + "/p.h5";
  const std::vector<std::string> ops = {"qkv_proj", "o_proj",     "gate_up_proj", "down_proj",
                                        "lm_head",  "all_reduce", "rms_norm",     "embedding"};
  const std::size_t curve_rows = in.byte() % 24, att_rows = in.byte() % 24;
  const std::uint8_t present = in.byte();
  // A table the input leaves without columns cannot be written (HDF5 has no empty compound):
  // such inputs test nothing of kvfleet's readers.
  bool written = true;
  try {
    sim::h5::write_file_atomically(path, [&](hid_t f) {
      if (!(present & 1)) {
        sim::Table meta;
        auto& k = meta.str("key");
        auto& v = meta.str("value");
        k.push_back("format");
        v.push_back(in.byte() < 240 ? "kvfleet-profile" : in.text(20));
        k.push_back("schema_version");
        v.push_back(in.byte() < 230 ? "1" : in.text(4));
        k.push_back("tensor_parallel");
        v.push_back(in.pick({"1", "2", "0", "-1", "x"}));
        sim::h5::write_table(f, "meta", meta);
      }
      if (!(present & 2)) {
        sim::Table c;
        column(in, c, "op", curve_rows, ops);
        column(in, c, "scope", curve_rows, {"layer", "step"});
        column(in, c, "axis", curve_rows, {"tokens", "sequences", "bytes"});
        for (const char* n : {"count", "x", "time_s", "spread_s"}) column(in, c, n, curve_rows, {});
        sim::h5::write_table(f, "curves", c);
      }
      if (!(present & 4)) {
        sim::Table a;
        for (const char* n :
             {"prefill_chunk", "kv_prefill", "n_decode", "kv_decode", "time_s", "spread_s"})
          column(in, a, n, att_rows, {});
        sim::h5::write_table(f, "attention", a);
      }
    });
  } catch (const std::runtime_error&) {
    written = false;
  }
  if (!written) return;
  try {
    const sim::Profile p = sim::read_profile(path);
    sim::ProfileCostModel::Config cfg;
    cfg.path = path;
    sim::ModelSpec m = sim::model_presets().front();
    sim::GpuSpec g = sim::gpu_presets().front();
    const sim::CostContext ctx{m, g, 1, 2.0, 2.0, g.bf16_flops, 1};
    if (p.get("tensor_parallel", "1") != "1" || p.attention.empty()) return;
    const sim::ProfileCostModel model(cfg, ctx);
    for (int k = 0; k < 4; ++k) {
      sim::Batch b;
      b.num_seqs = 1 + in.byte() % 64;
      b.num_decode_seqs = b.num_seqs - 1;
      b.num_prefill_tokens = in.byte() * 16;
      b.num_sampled = b.num_seqs;
      b.decode_context_tokens = static_cast<std::int64_t>(b.num_decode_seqs) * (in.byte() * 64);
      b.prefill_attention_pairs =
          static_cast<double>(b.num_prefill_tokens) * (b.num_prefill_tokens + 1) / 2;
      const sim::StepCost c = model.cost(b);
      const double total = c.total_s();
      FUZZ_CHECK(std::isfinite(total));
      FUZZ_CHECK(total >= 0);
    }
  } catch (const sim::InputError&) {
  }
}

void fuzz_bundle(fuzz::Bytes& in, bool vidur) {
  const auto parts = fuzz::split(in.rest(), "\n--file\n");
  auto part = [&](std::size_t i) { return i < parts.size() ? parts[i] : std::string(); };
  const std::string root = fuzz::scratch() + "/bundle";
  try {
    if (vidur) {
      fuzz::write_file("bundle/mlp.csv", part(0));
      if (parts.size() > 1) fuzz::write_file("bundle/attention.csv", part(1));
      if (parts.size() > 2) fuzz::write_file("net/all_reduce.csv", part(2));
      const int tp = 1 + static_cast<int>(part(3).size() % 4);
      const sim::Profile p = calibration::import_vidur(
          root, tp, parts.size() > 2 ? fuzz::scratch() + "/net" : std::string());
      sim::check_profile(p, "imported");
    } else {
      fuzz::write_file("bundle/meta.yaml", part(0));
      fuzz::write_file("bundle/tp1/dense.csv", part(1));
      fuzz::write_file("bundle/tp1/per_sequence.csv", part(2));
      fuzz::write_file("bundle/tp1/attention.csv", part(3));
      const sim::Profile p = calibration::import_llmservingsim(root, 1);
      sim::check_profile(p, "imported");
    }
  } catch (const sim::InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Bytes in(data, size);
  fuzz::clear_scratch();
  switch (in.byte() % 3) {
    case 0:
      fuzz_profile_file(in);
      break;
    case 1:
      fuzz_bundle(in, false);
      break;
    default:
      fuzz_bundle(in, true);
      break;
  }
  fuzz::check_memory();
  return 0;
}

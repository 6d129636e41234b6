// The run-folder replay's hardware and weights: which GPU preset a run's device names, what its
// memory is, and the weights' precision vLLM's arguments and the checkpoint's name imply.
#include <cmath>
#include <cstdio>

#include "sim/cost/profile_data.h"
#include "sim/replay/run_detail.h"

namespace kvfleet::sim {

using run_detail::squash;

std::string vllm_weight_dtype(const std::string& quantization, const std::string& dtype,
                              const std::string& model_name, const std::string& where,
                              const std::string& key, std::string& how) {
  std::string q;
  for (unsigned char c : quantization) q += static_cast<char>(std::tolower(c));
  // What a quantized checkpoint's name says of its weights (RedHatAI, neuralmagic and
  // Hugging Face conventions: -FP8, -FP8-dynamic, -W8A8, -quantized.w4a16, -AWQ, -GPTQ-Int4).
  const std::string n = squash(model_name);
  const auto from_name = [&]() -> std::string {
    if (n.find("nvfp4") != std::string::npos) return "nvfp4";
    if (n.find("mxfp4") != std::string::npos) return "mxfp4";
    if (n.find("fp8") != std::string::npos) return "fp8";
    if (n.find("w8a8") != std::string::npos || n.find("int8") != std::string::npos) return "int8";
    if (n.find("w4a16") != std::string::npos || n.find("int4") != std::string::npos ||
        n.find("awq") != std::string::npos || n.find("gptq") != std::string::npos)
      return "int4";
    return "";
  };
  if (q.empty() || q == "none") {
    if (const std::string d = from_name(); !d.empty()) {
      how = "the model's name " + model_name + " (a quantized checkpoint)";
      return d;
    }
    std::string d = dtype;
    if (d.rfind("torch.", 0) == 0) d = d.substr(6);
    if (d == "float16" || d == "half" || d == "fp16") {
      how = "dtype " + dtype;
      return "fp16";
    }
    if (!d.empty() && d != "auto" && d != "bfloat16" && d != "bf16" && d != "float32" &&
        d != "float")
      throw InputError(where, key,
                       "dtype '" + dtype + "' is not one kvfleet prices (auto, bfloat16, float16)");
    how = dtype.empty() ? "" : "dtype " + dtype;
    return "auto";
  }
  how = "quantization " + quantization;
  if (q == "fp8" || q == "fbgemm_fp8" || q == "modelopt" || q == "ptpc_fp8" || q == "fp_quant")
    return "fp8";
  if (q == "mxfp4") return "mxfp4";
  if (q == "modelopt_fp4" || q == "nvfp4") return "nvfp4";
  if (q == "awq" || q == "awq_marlin" || q == "gptq" || q == "gptq_marlin" || q == "marlin" ||
      q == "gptq_marlin_24") {
    const std::string d = from_name();
    if (d == "int8") {
      how += " and the model's name";
      return "int8";
    }
    how += " (4-bit weights, priced at the bf16 tensor rate)";
    return "int4";
  }
  if (q == "compressed-tensors") {
    if (const std::string d = from_name(); !d.empty()) {
      how += " and the model's name " + model_name;
      return d;
    }
    throw InputError(where, key,
                     "compressed-tensors: the weights' precision is in the checkpoint's "
                     "config.json, not in this file nor in the model's name '" +
                         model_name +
                         "'; give --model-config with that config.json, or --weight-dtype");
  }
  throw InputError(where, key,
                   "'" + quantization +
                       "' is not a quantization method kvfleet prices (fp8, fbgemm_fp8, "
                       "modelopt, awq, gptq, marlin, mxfp4, compressed-tensors); give "
                       "--weight-dtype");
}

namespace run_detail {

namespace {

// The preset a driver's device name (or config.json's hardware) names: the longest name or
// family key it holds; among presets of one family named alike (A100-80GB, A100-40GB), the one
// whose memory is nearest the run's.
const GpuSpec* match_gpu(const std::string& text, double recorded_mem) {
  const std::string t = squash(text);
  const GpuSpec* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& p : gpu_presets()) {
    for (const std::string& n : keys_of(p, true)) {
      if (n.empty() || t.find(n) == std::string::npos) continue;
      const bool better =
          n.size() > best_len ||
          (n.size() == best_len && best != nullptr && recorded_mem > 0 &&
           std::fabs(p.memory_bytes - recorded_mem) < std::fabs(best->memory_bytes - recorded_mem));
      if (better) {
        best = &p;
        best_len = n.size();
      }
    }
  }
  return best;
}

std::string gib_text(double bytes) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

// A gpus: entry: `g`'s datasheet with the run's own memory.
YAML::Node gpu_with_memory(const GpuSpec& g, double mem, const std::string& why) {
  YAML::Node n;
  n["name"] = "replay-gpu";
  n["memory_bytes"] = mem;
  n["memory_bandwidth_Bps"] = g.memory_bandwidth_Bps;
  n["bf16_flops"] = g.bf16_flops;
  n["fp8_flops"] = g.fp8_flops;
  n["int8_flops"] = g.int8_flops;
  n["fp4_flops"] = g.fp4_flops;
  n["interconnect_Bps"] = g.interconnect_Bps;
  n["interconnect_latency_s"] = g.interconnect_latency_s;
  n["host_link_Bps"] = g.host_link_Bps;
  n["source"] = g.name + "'s datasheet (" + g.source + ") with " + why;
  return n;
}

// What the run's files say of its GPU: the driver's device name (meta.json), the cluster
// file's hardware name, and the memory per GPU (as torch reported it, else config.json's
// nominal size), with the bandwidth config.json gives.
struct RunHardware {
  std::string hardware, dev_name, mem_from;
  double mem = 0, cfg_bw = 0;
};

RunHardware read_hardware(const json& meta, const json& cluster) {
  RunHardware h;
  double cfg_mem = 0;
  if (const json& n = at(cluster, {"nodes"}); n.is_array() && !n.empty()) {
    const json& inst = at(n[0], {"instances"});
    if (inst.is_array() && !inst.empty()) {
      if (inst[0].contains("hardware") && inst[0]["hardware"].is_string())
        h.hardware = inst[0]["hardware"].get<std::string>();
      const json& sz = at(inst[0], {"npu_mem", "mem_size"});
      const json& b = at(inst[0], {"npu_mem", "mem_bw"});
      if (sz.is_number() && sz.get<double>() > 0) cfg_mem = sz.get<double>() * 1e9;  // GB
      if (b.is_number() && b.get<double>() > 0) h.cfg_bw = b.get<double>() * 1e9;    // GB/s
    }
  }
  if (const json& d = at(meta, {"hardware", "device_name"}); d.is_string())
    h.dev_name = d.get<std::string>();
  if (const json& j = at(meta, {"hardware", "device_total_memory_bytes"});
      j.is_number() && j.get<double>() > 0) {
    h.mem = j.get<double>();
    h.mem_from = "meta.json hardware.device_total_memory_bytes";
  } else if (cfg_mem > 0) {
    h.mem = cfg_mem;
    h.mem_from = "config.json npu_mem.mem_size";
  }
  return h;
}

// No preset is the run's GPU: with a profile (which prices the steps) the GPU's memory from the
// run's files is enough, for the KV budget; without one the roofline needs a datasheet.
void describe_unknown_gpu(const ReplayOptions& o, const RunHardware& h, const GpuSpec* nearest,
                          YAML::Node& custom_gpu, const std::function<void(std::string)>& note) {
  const std::string what = !h.dev_name.empty() ? h.dev_name : h.hardware;
  if (what.empty() && o.profile.empty())
    throw InputError(o.run_dir, "hardware",
                     "the run records no GPU (meta.json hardware.device_name, config.json "
                     "nodes[0].instances[0].hardware): name one with --gpu (" +
                         names(gpu_presets()) + ")");
  if (o.profile.empty() || !(h.mem >= 1024.0 * 1024 * 1024)) {
    std::string msg = "the run's GPU ('" + what + "'" +
                      (h.mem > 0 ? ", " + gib_text(h.mem) : std::string()) +
                      ") matches no GPU preset (" + names(gpu_presets()) + ")";
    if (nearest != nullptr)
      msg += "; the nearest, " + nearest->name + ", has " + gib_text(nearest->memory_bytes) +
             ": --gpu " + nearest->name + " uses its datasheet with the run's memory";
    else
      msg += "; name one with --gpu";
    msg += o.profile.empty() ? " (or give a --profile of it)" : "";
    throw InputError(o.run_dir, "hardware", msg);
  }
  custom_gpu["name"] = "replay-gpu";
  custom_gpu["memory_bytes"] = h.mem;
  custom_gpu["memory_bandwidth_Bps"] = h.cfg_bw > 1e9 ? h.cfg_bw : 1e12;
  custom_gpu["bf16_flops"] = 1e14;
  custom_gpu["source"] = "the run's " + what +
                         ": memory from its files; compute and bandwidth unknown (the "
                         "profile prices the steps)";
  note("gpu '" + what + "' is no preset: its memory (" + gib_text(h.mem) + ", " + h.mem_from +
       ") from the run's files; the profile prices the steps, so utilisation figures of "
       "this replay are not meaningful");
}

// A form factor the device name states and the preset is not (an A100 80GB PCIe matched to the
// SXM4 preset) is worth a warning: its bandwidth and compute differ.
std::string variant_warning(const std::string& device, const GpuSpec& gpu) {
  // The preset's form factor: in its name, or in its datasheet's heading ("(SXM4 80GB)").
  const std::string form = squash(gpu.name + gpu.source.substr(0, gpu.source.find(')')));
  for (const char* v : {"pcie", "nvl", "sxm"})
    if (squash(device).find(v) != std::string::npos && form.find(v) == std::string::npos)
      return std::string("; WARNING: the device says ") + v +
             ", which this preset is not: its bandwidth and compute may differ; name another "
             "preset with --gpu, or give a --profile of it";
  return "";
}

}  // namespace

const GpuSpec* choose_gpu(const ReplayOptions& o, const json& meta, const json& cluster,
                          YAML::Node& custom_gpu, std::string& run_gpu,
                          const std::function<void(std::string)>& note) {
  const RunHardware h = read_hardware(meta, cluster);
  run_gpu = !o.gpu.empty() ? o.gpu : !h.dev_name.empty() ? h.dev_name : h.hardware;
  const auto other_memory = [&](const GpuSpec& g) {
    return h.mem > 0 && std::fabs(g.memory_bytes / h.mem - 1) > 0.1;
  };
  if (!o.gpu.empty()) {
    const GpuSpec* gpu = named(gpu_presets(), o.gpu);
    if (gpu == nullptr)
      throw InputError("--gpu", "",
                       "'" + o.gpu + "' is not a preset (" + names(gpu_presets()) + ")");
    if (other_memory(*gpu)) {
      custom_gpu = gpu_with_memory(*gpu, h.mem, "the run's memory (" + h.mem_from + ")");
      note("gpu " + gpu->name + " (--gpu) with the run's memory, " + gib_text(h.mem) + " (" +
           h.mem_from + "), not the preset's " + gib_text(gpu->memory_bytes));
      return nullptr;
    }
    note("gpu " + gpu->name + " (--gpu)");
    return gpu;
  }
  std::string matched;
  const GpuSpec* gpu = nullptr;
  if (!h.dev_name.empty()) gpu = match_gpu(h.dev_name, h.mem), matched = h.dev_name;
  if (gpu == nullptr && !h.hardware.empty())
    gpu = match_gpu(h.hardware, h.mem), matched = h.hardware;
  // A variant of the family with other memory (A100 40GB for the A100-80GB preset) is not it.
  if (gpu != nullptr && !other_memory(*gpu)) {
    note("gpu " + gpu->name + " (matches the run's hardware " + matched +
         variant_warning(matched, *gpu) + ")");
    return gpu;
  }
  describe_unknown_gpu(o, h, gpu, custom_gpu, note);
  return nullptr;
}

// A profile measured on another GPU prices this run's steps wrongly, and its error bars do
// not hold: said, not refused (a user may mean it, as a what-if).
void check_profile_gpu(const std::string& profile, const std::string& run_gpu,
                       const std::function<void(std::string)>& note) {
  const std::string pg = read_profile(profile).get("gpu");
  if (pg.empty() || run_gpu.empty()) return;
  const GpuSpec* a = match_gpu(pg, 0);
  const GpuSpec* b = match_gpu(run_gpu, 0);
  const std::string sp = squash(pg), sr = squash(run_gpu);
  const bool same = a != nullptr && b != nullptr
                        ? a == b
                        : sp.find(sr) != std::string::npos || sr.find(sp) != std::string::npos;
  if (!same)
    note("WARNING: the profile " + profile + " was measured on '" + pg + "', this run on '" +
         run_gpu +
         "': its step times are another GPU's, and the report's expected error does not "
         "hold");
}

}  // namespace run_detail
}  // namespace kvfleet::sim

#include "sim/cost/calibration_file.h"

#include "sim/config/params.h"
#include "sim/core/error.h"

namespace kvfleet::sim {

namespace {

// `over` with every key of `under` it lacks (mappings merged key by key).
void merge_under(YAML::Node over, const YAML::Node& under) {
  for (const auto& kv : under) {
    const std::string k = kv.first.as<std::string>();
    if (!over[k]) {
      over[k] = YAML::Clone(kv.second);
    } else if (over[k].IsMap() && kv.second.IsMap()) {
      merge_under(over[k], kv.second);
    }
  }
}

}  // namespace

YAML::Node read_calibration_file(const std::string& path) {
  YAML::Node c = config::load_yaml_file(path, "calibration");
  if (!c.IsMap() || !c["kvfleet_calibration"])
    throw InputError(path, "kvfleet_calibration",
                     "missing: this is not a calibration file written by kvfleet-calibrate fit");
  int version = 0;
  try {
    version = c["kvfleet_calibration"].as<int>();
  } catch (const YAML::Exception&) {
  }
  if (version != kCalibrationFileVersion)
    throw InputError(
        path, "kvfleet_calibration",
        "must be " + std::to_string(kCalibrationFileVersion) + " (the format this kvfleet reads)");
  if (!c["gpu"] || !c["gpu"].IsScalar() || c["gpu"].as<std::string>().empty())
    throw InputError(path, "gpu", "missing or not a name: the GPU the runs were measured on");
  if (!c["pool"] || !c["pool"].IsMap())
    throw InputError(path, "pool", "missing or not a mapping of pool settings");
  static const char* const allowed[] = {"cost_model", "frontend", "link_Bps", "link_latency_s"};
  for (const auto& kv : c["pool"]) {
    const std::string k = kv.first.as<std::string>();
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (!ok)
      throw InputError(path, "pool." + k,
                       "a calibration sets only cost_model, frontend, link_Bps and "
                       "link_latency_s");
  }
  const YAML::Node cm = c["pool"]["cost_model"];
  if (cm && (!cm.IsMap() || !cm["impl"] || !cm["impl"].IsScalar() ||
             cm["impl"].as<std::string>() != "fitted"))
    throw InputError(path, "pool.cost_model.impl", "must be fitted");
  return c;
}

void apply_calibration(YAML::Node pool, const YAML::Node& calibration, const std::string& file,
                       const std::string& where, const std::string& datasheet) {
  const std::string gpu = calibration["gpu"].as<std::string>();
  if (!pool["gpu"]) {
    pool["gpu"] = gpu;
  } else if (pool["gpu"].as<std::string>() != gpu && datasheet != gpu) {
    throw InputError(where, "calibration",
                     file + " was fitted on " + gpu + " runs, but the pool's gpu is " +
                         pool["gpu"].as<std::string>());
  }
  const YAML::Node cm = pool["cost_model"];
  if (cm) {
    const std::string impl = cm.IsMap() && cm["impl"] ? cm["impl"].as<std::string>()
                             : cm.IsScalar()          ? cm.as<std::string>()
                                                      : "";
    if (impl != "fitted")
      throw InputError(where, "cost_model",
                       "is '" + impl + "', but the calibration " + file +
                           " corrects the fitted cost model: leave cost_model out or make it "
                           "fitted");
    if (cm.IsScalar()) {  // `cost_model: fitted` becomes the mapping the file's keys go under
      pool.remove("cost_model");
      pool["cost_model"]["impl"] = "fitted";
    }
  }
  merge_under(pool, calibration["pool"]);
}

}  // namespace kvfleet::sim

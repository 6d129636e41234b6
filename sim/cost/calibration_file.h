#pragma once
// A calibration file: what `kvfleet-calibrate fit` learned from a team's measured runs on one GPU,
// as the pool settings it changes (the fitted cost model's factors and step overheads, the
// frontend's times, the GPU-to-GPU link). A scenario's pool takes it with
// `calibration: FILE`, `kvfleet replay` with --calibration FILE; the pool's own keys win over
// the file's. Format: docs/calibration.md, "Fit the cost model to your runs".
#include <string>

#include <yaml-cpp/yaml.h>

namespace kvfleet::sim {

constexpr int kCalibrationFileVersion = 1;

// Reads and checks a calibration file (kvfleet_calibration, gpu, pool); throws InputError naming
// the file and key that is wrong.
YAML::Node read_calibration_file(const std::string& path);

// Merges the file's pool settings under `pool` (a scenario's pools[i] mapping): every key the
// pool sets stays; the pool's gpu must be the file's (a pool without one takes it), and its
// cost model, where it names one, must be `fitted`. `where` names the pool in messages
// ("scenario.yaml: pools[0]"). `datasheet`, where given, is the preset the pool's GPU is made
// of (a replay's `replay-gpu`: that preset's datasheet with the run's memory): a file fitted on
// that preset applies to it.
void apply_calibration(YAML::Node pool, const YAML::Node& calibration, const std::string& file,
                       const std::string& where, const std::string& datasheet = "");

}  // namespace kvfleet::sim

#pragma once
// What made a result file (/provenance): kvfleet's version and the commit it was built from, the
// command line, each pool's model and GPU as the numbers the run used (not only their preset
// names, which a later kvfleet may define differently), and every input file the scenario names
// (traces, profiles, Hugging Face configs) with its size and SHA-256. Rows of (key, value) text.
// No date: the same run gives the same bytes; the version and commit say what made them.
#include <string>
#include <utility>
#include <vector>

#include "sim/io/table.h"

namespace kvfleet::sim {

struct Scenario;

// For a run's file. Throws InputError when an input file can no longer be read.
Table provenance_table(const Scenario& sc);
// The files a resolved scenario (YAML text) reads: (scenario key, path) for every `path` and
// `hf_config` anywhere in it (traces, profiles, Hugging Face configs).
std::vector<std::pair<std::string, std::string>> scenario_input_files(
    const std::string& resolved_yaml);

// For a sweep's file: version, commit, command line and the sweep file's SHA-256 (the points'
// scenarios are in /sweep and /scenario).
Table provenance_table_for_sweep(const std::string& sweep_text);

}  // namespace kvfleet::sim

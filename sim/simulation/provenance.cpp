#include "sim/simulation/provenance.h"

#include <filesystem>
#include <set>

#include <yaml-cpp/yaml.h>

#include "sim/config/params.h"
#include "sim/core/build_info.h"
#include "sim/io/file_hash.h"
#include "sim/simulation/scenario.h"

namespace kvfleet::sim {

namespace {

struct Rows {
  std::vector<std::string>* key;
  std::vector<std::string>* value;
  void add(const std::string& k, const std::string& v) {
    key->push_back(k);
    value->push_back(v);
  }
  // A mapping's scalars as prefix.name rows (lists as [i]).
  void flatten(const std::string& prefix, const YAML::Node& n) {
    if (n.IsScalar()) {
      add(prefix, n.Scalar());
    } else if (n.IsMap()) {
      for (const auto& kv : n) flatten(prefix + "." + kv.first.Scalar(), kv.second);
    } else if (n.IsSequence()) {
      for (std::size_t i = 0; i < n.size(); ++i)
        flatten(prefix + "[" + std::to_string(i) + "]", n[i]);
    }
  }
};

Table start(Rows& rows) {
  Table t;
  t.desc =
      "what made this file: kvfleet's version and commit, the command line, each pool's "
      "model and GPU as used, and every input file with its size and SHA-256";
  rows.key = &t.str("key", "", "what is recorded");
  rows.value = &t.str("value", "", "its value, as text");
  rows.add("kvfleet.version", kvfleet_version());
  rows.add("kvfleet.commit", kvfleet_commit());
  rows.add("command_line", command_line());
  return t;
}

// The keys that name files (declared as paths: hf_config, path) anywhere in the resolved
// scenario, with their values.
void input_files(const YAML::Node& n, const std::string& at,
                 std::vector<std::pair<std::string, std::string>>& out) {
  if (n.IsMap()) {
    for (const auto& kv : n) {
      const std::string k = kv.first.Scalar();
      const std::string p = at.empty() ? k : at + "." + k;
      if ((k == "path" || k == "hf_config") && kv.second.IsScalar() && !kv.second.Scalar().empty())
        out.emplace_back(p, kv.second.Scalar());
      else
        input_files(kv.second, p, out);
    }
  } else if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i)
      input_files(n[i], at + "[" + std::to_string(i) + "]", out);
  }
}

}  // namespace

Table provenance_table(const Scenario& sc) {
  Rows rows;
  Table t = start(rows);
  for (std::size_t p = 0; p < sc.pools.size() && p < sc.config.pools.size(); ++p) {
    const std::string at = "pools[" + std::to_string(p) + "]";
    rows.flatten(at + ".model", config::Writer::write(sc.pools[p].model));
    rows.flatten(at + ".gpu", config::Writer::write(sc.pools[p].gpu));
    rows.add(at + ".weight_dtype", sc.pools[p].weight_dtype);
  }
  std::vector<std::pair<std::string, std::string>> files;
  input_files(YAML::Load(sc.resolved_yaml), "", files);
  for (const auto& [key, path] : files) {
    const FileDigest d = sha256_file(path);
    rows.add("input." + key + ".sha256", d.sha256);
    rows.add("input." + key + ".bytes", std::to_string(d.bytes));
  }
  return t;
}

std::vector<std::pair<std::string, std::string>> scenario_input_files(
    const std::string& resolved_yaml) {
  std::vector<std::pair<std::string, std::string>> files;
  input_files(YAML::Load(resolved_yaml), "", files);
  return files;
}

Table provenance_table_for_sweep(const std::string& sweep_text) {
  Rows rows;
  Table t = start(rows);
  rows.add("sweep.sha256", sha256_text(sweep_text));
  return t;
}

}  // namespace kvfleet::sim

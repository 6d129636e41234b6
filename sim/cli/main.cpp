// kvfleet: the headless command line.
//   kvfleet run [SCENARIO] [--out FILE.h5] [--csv DIR] [--set key=value ...]
//   kvfleet sweep SWEEP.yaml --out RESULTS.h5 [--threads N] [--resume] [--shard k/N]
//   kvfleet merge OUT.h5 PART.h5 ...
//   kvfleet capacity [SCENARIO] --slo ttft_p99=2s,tpot_p99=100ms [--metric arrival_rate|users]
//   kvfleet schema            (the scenario reference, Markdown)
//   kvfleet presets           (model and GPU presets)
//   kvfleet outputs           (the output reference, Markdown)
// Exit status (docs/scenarios.md, "Errors and exit codes"): 0 success with every output complete;
// 2 bad input or an unusable output path (one message naming file, line or row, and key);
// sweep: 100 + the number of failed points (at most 200) when points failed; 130 and 143 after
// SIGINT and SIGTERM (temporaries removed); 1 only for a defect of kvfleet itself.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <boost/program_options.hpp>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/command.h"
#include "sim/cli/mpi.h"
#include "sim/config/params.h"
#include "sim/core/build_info.h"
#include "sim/core/error.h"
#include "sim/io/output_set.h"
#include "sim/io/temp_files.h"
#include "sim/io/text_file.h"
#include "sim/metrics/summary.h"
#include "sim/output/chrome_trace.h"
#include "sim/output/prometheus.h"
#include "sim/output/report.h"
#include "sim/output/results.h"
#include "sim/reference/reference.h"
#include "sim/replay/bench_results.h"
#include "sim/replay/replay.h"
#include "sim/simulation/scenario.h"
#include "sim/simulation/simulation.h"
#include "sim/sweep/capacity.h"
#include "sim/sweep/sizing.h"
#include "sim/sweep/sweep.h"

using namespace kvfleet::sim;
using namespace kvfleet::cli;

namespace {

constexpr const char* kUsage =
    "kvfleet: a discrete-event simulator of LLM serving fleets bound by KV-cache memory.\n\n"
    "Usage: kvfleet <command> [options]\n\n"
    "Commands:\n"
    "  run [SCENARIO]   simulate a scenario and print the report (default: the built-in\n"
    "                   scenarios/default.yaml)\n"
    "  sweep SWEEP.yaml run a sweep of scenarios on all cores (MPI: mpirun -n N kvfleet sweep)\n"
    "  merge OUT PARTS  join the result files of sweep shards (--shard k/N)\n"
    "  capacity [SCEN]  the highest load at which a latency SLO holds, with a 95% interval\n"
    "  size [SCEN]      how many replicas and GPUs serve a target load within an SLO, at what "
    "cost\n"
    "  model-from-hf CONFIG  a Hugging Face config.json as a scenario's models: entry\n"
    "  plot RESULTS.h5  a sweep's metric against an axis as PNG or SVG (--x, --y, --series)\n"
    "  replay RUN       replay a measured vLLM run, inference-perf folder or vllm bench\n"
    "                   result with the settings of its own files and compare the latencies\n"
    "  schema           print the scenario reference (Markdown) generated from the code\n"
    "  outputs          print the output reference: every file, dataset and column\n"
    "  presets          list the model and GPU presets\n\n"
    "Run 'kvfleet <command> --help' for a command's options.\n";

// `kvfleet plot` is kvfleet-plot (gui/, built with Qt6 Charts), found beside this program: the
// simulator core stays free of Qt.
int cmd_plot(char** argv) {
  const std::string p = plot_program(argv[0]);
  if (p.empty()) {
    std::cerr << "kvfleet plot: kvfleet-plot is missing beside kvfleet: kvfleet was built "
                 "without Qt6 Charts (KVFLEET_WITH_GUI=OFF)\n";
    return 1;
  }
  std::vector<char*> args;
  args.push_back(const_cast<char*>(p.c_str()));
  for (char** a = argv + 2; *a != nullptr; ++a) args.push_back(*a);
  args.push_back(nullptr);
  execv(p.c_str(), args.data());
  std::cerr << "kvfleet plot: cannot run " << p << "\n";
  return 1;
}

int cmd_schema(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "Usage: kvfleet schema\n\nPrints the scenario reference (Markdown) generated from "
                 "the parameter declarations: every key, type, unit, default and description.\n";
    return 0;
  }
  if (!args.empty()) throw UsageError("kvfleet schema: unexpected argument '" + args[0] + "'");
  std::cout << scenario_reference_markdown();
  return 0;
}

int cmd_outputs(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "Usage: kvfleet outputs\n\nPrints the output reference (Markdown) generated from "
                 "the tables' declarations: every file, dataset and column with its unit.\n";
    return 0;
  }
  if (!args.empty()) throw UsageError("kvfleet outputs: unexpected argument '" + args[0] + "'");
  std::cout << outputs_reference_markdown();
  return 0;
}

// `kvfleet model-from-hf CONFIG [--name NAME]`: a Hugging Face config.json as a `models:` entry.
int cmd_model_from_hf(const std::vector<std::string>& args) {
  po::options_description opts("Options of 'kvfleet model-from-hf CONFIG'");
  opts.add_options()("help,h", "show this help")(
      "name", po::value<std::string>(),
      "the model's name in scenarios (default: the config's folder name)");
  const po::variables_map vm = parse_command(args, opts, "config", "model-from-hf");
  if (vm.count("help") || !vm.count("config")) {
    std::cout << "Usage: kvfleet model-from-hf CONFIG.json|FOLDER [--name NAME]\n\n"
                 "Reads a Hugging Face config.json (dense or mixture-of-experts decoder: llama,\n"
                 "mistral, qwen2, qwen3, granite, mixtral, qwen2_moe, qwen3_moe, deepseek_v2,\n"
                 "deepseek_v3) and prints it as an entry for a scenario's models: list, the\n"
                 "parameter count counted from its shapes. A scenario can also name the file\n"
                 "itself: models: [{name: my-model, hf_config: path/config.json}].\n\n"
              << opts;
    return vm.count("help") ? 0 : 2;
  }
  const std::string path = vm["config"].as<std::string>();
  std::string name;
  if (vm.count("name")) {
    name = vm["name"].as<std::string>();
  } else {
    std::filesystem::path p = std::filesystem::absolute(path).lexically_normal();
    if (p.filename() == "config.json") p = p.parent_path();
    name = p.filename().string();
  }
  ModelSpec m = read_hf_config(path, name);
  std::cout << "# " << comment_line(m.source) << "\nmodels:\n";
  YAML::Node entry = config::Writer::write(m);
  entry.remove("hf_config");
  YAML::Node list(YAML::NodeType::Sequence);
  list.push_back(entry);
  YAML::Emitter e;
  e << list;
  std::stringstream ss(e.c_str());
  for (std::string line; std::getline(ss, line);) std::cout << "  " << line << "\n";
  return 0;
}

int cmd_presets(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "Usage: kvfleet presets\n\nLists the built-in model and GPU presets.\n";
    return 0;
  }
  if (!args.empty()) throw UsageError("kvfleet presets: unexpected argument '" + args[0] + "'");
  std::printf("%-14s %6s %7s %6s %4s %12s %14s\n", "model", "layers", "hidden", "heads", "kv",
              "params", "KV B/token");
  for (const auto& m : model_presets())
    std::printf("%-14s %6d %7d %6d %4d %11.1fB %14.0f\n", m.name.c_str(), m.num_layers,
                m.hidden_size, m.num_attention_heads, m.num_kv_heads, m.num_params / 1e9,
                m.kv_bytes_per_token(2.0));
  std::printf("\n%-12s %10s %10s %12s %12s %12s\n", "gpu", "GiB", "GB/s", "bf16 TF/s", "fp8 TF/s",
              "fp4 TF/s");
  for (const auto& g : gpu_presets())
    std::printf("%-12s %10.1f %10.0f %12.1f %12.1f %12.1f\n", g.name.c_str(),
                g.memory_bytes / (1024.0 * 1024 * 1024), g.memory_bandwidth_Bps / 1e9,
                g.bf16_flops / 1e12, g.fp8_flops / 1e12, g.fp4_flops / 1e12);
  return 0;
}

// An error message as one line: control characters a user typed (a newline in a --set value)
// are shown escaped.
std::string one_line(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

int run_command(const std::string& cmd, std::vector<std::string>& args, int& argc, char**& argv) {
  if (cmd == "run") return cmd_run(args);
  if (cmd == "sweep") {
    Mpi mpi(&argc, &argv);
    return cmd_sweep(args, mpi);
  }
  if (cmd == "merge") return cmd_merge(args);
  if (cmd == "capacity") return cmd_capacity(args);
  if (cmd == "size") return cmd_size(args);
  if (cmd == "model-from-hf") return cmd_model_from_hf(args);
  if (cmd == "replay") return cmd_replay(args);
  if (cmd == "plot") return cmd_plot(argv);
  if (cmd == "schema") return cmd_schema(args);
  if (cmd == "presets") return cmd_presets(args);
  if (cmd == "outputs") return cmd_outputs(args);
  throw UsageError(
      "kvfleet: unknown command '" + cmd +
      "' (commands: run, sweep, merge, capacity, size, model-from-hf, plot, replay, schema, "
      "outputs, presets; kvfleet --help)");
}

}  // namespace

int main(int argc, char** argv) {
  set_command_line(argc, argv);  // for every result file's /provenance
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << "kvfleet: error: no command given (kvfleet --help lists them)\n";
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  // SIGINT and SIGTERM remove this process's temporaries and exit 130 and 143.
  install_temp_cleanup_on_signals();
  int status = 0;
  try {
    status = run_command(cmd, args, argc, argv);
  } catch (const InputError& e) {
    std::cerr << "kvfleet: error: " << one_line(e.what()) << "\n";
    return 2;
  } catch (const UsageError& e) {
    std::cerr << one_line(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvfleet: internal error: " << one_line(e.what()) << "\n";
    return 1;
  }
  // A report or reference that could not be written (a full disk, a closed pipe) is not a
  // success.
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "kvfleet: error: cannot write to standard output\n";
    return 2;
  }
  return status;
}

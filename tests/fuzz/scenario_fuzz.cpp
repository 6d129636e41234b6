// Fuzz harness: the scenario loader. Input: YAML text, then optionally a line "--set" followed by
// one override per line (what `kvfleet run FILE --set ...` takes).
#include "fuzz_support.h"
#include "sim/simulation/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace kvfleet;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto parts = fuzz::split(input, "\n--set\n");
  std::vector<std::string> sets;
  if (parts.size() > 1)
    for (const auto& line : fuzz::split(parts[1], "\n"))
      if (!line.empty()) sets.push_back(line);
  try {
    const sim::Scenario sc = sim::load_scenario_text(parts[0], "<fuzz>", fuzz::scratch(), sets);
    // What the loader promises of a scenario it accepts.
    FUZZ_CHECK(!sc.config.pools.empty());
    FUZZ_CHECK(sc.pools.size() == sc.config.pools.size());
    for (const auto& p : sc.pools) {
      FUZZ_CHECK(p.memory.num_blocks > 0);
      FUZZ_CHECK(p.memory.num_blocks <= sim::kMaxKvBlocksPerReplica);
    }
    FUZZ_CHECK(!sc.resolved_yaml.empty());
    // The resolved scenario loads again to itself.
    const sim::Scenario again =
        sim::load_scenario_text(sc.resolved_yaml, "<resolved>", fuzz::scratch(), {});
    FUZZ_CHECK(again.resolved_yaml == sc.resolved_yaml);
  } catch (const sim::InputError&) {
  }
  fuzz::check_memory();
  return 0;
}

// Editing YAML text in place (config/yaml_edit.h): values replaced where they stand, missing keys
// added under the deepest block mapping, comments and layout untouched; what cannot be edited in
// place is refused (nullopt), never half done.
#include "sim/config/yaml_edit.h"

#include <gtest/gtest.h>

namespace kvfleet::sim::config {
namespace {

const char* kText =
    "# a scenario\n"
    "name: demo   # its name\n"
    "pools:\n"
    "  - name: h100\n"
    "    replicas: 2\n"
    "    engine:\n"
    "      max_num_seqs: 64  # the batch limit\n"
    "    # the model\n"
    "    model: \"Llama-3-8B\"\n"
    "  - name: l40s\n"
    "    replicas: 1\n"
    "workload:\n"
    "  arrival: {impl: poisson, rate_per_s: 5}\n"
    "\n"
    "# the end\n";

TEST(YamlEdit, ReplacesValuesWhereTheyStandAndKeepsComments) {
  const auto e = edit_yaml_text(kText, {"pools[0].engine.max_num_seqs=128", "name=other",
                                        "pools.1.replicas=4", "pools[0].model='Qwen'"});
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("      max_num_seqs: 128  # the batch limit\n"), std::string::npos) << *e;
  EXPECT_NE(e->find("name: other   # its name\n"), std::string::npos) << *e;
  EXPECT_NE(e->find("  - name: l40s\n    replicas: 4\n"), std::string::npos) << *e;
  EXPECT_NE(e->find("    model: 'Qwen'\n"), std::string::npos) << *e;
  EXPECT_NE(e->find("# a scenario\n"), std::string::npos);
  EXPECT_NE(e->find("\n# the end\n"), std::string::npos);
}

TEST(YamlEdit, AddsMissingKeysUnderTheDeepestBlockMapping) {
  const auto e =
      edit_yaml_text(kText, {"pools[0].engine.block_size=32", "pools[1].engine.max_num_seqs=8",
                             "seed=7", "simulation.max_time_s=60"});
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("      max_num_seqs: 64  # the batch limit\n      block_size: 32\n"),
            std::string::npos)
      << *e;
  EXPECT_NE(e->find("    replicas: 1\n    engine:\n      max_num_seqs: 8\n"), std::string::npos)
      << *e;
  // At the end of the document, after its last content line (the trailing comment stays last).
  EXPECT_NE(e->find("rate_per_s: 5}\nseed: 7\nsimulation:\n  max_time_s: 60\n\n# the end\n"),
            std::string::npos)
      << *e;
}

TEST(YamlEdit, EditsFlowMappingsInPlace) {
  const auto e =
      edit_yaml_text(kText, {"workload.arrival.rate_per_s=9", "workload.arrival.burst.x=1",
                             "workload.arrival.impl=gamma"});
  ASSERT_TRUE(e);
  EXPECT_NE(e->find("  arrival: {impl: gamma, rate_per_s: 9, burst: {x: 1}}\n"), std::string::npos)
      << *e;
  const auto empty = edit_yaml_text("a: {}\nb: {c: \"x}\", d: [1, {e: 2}]}\n", {"a.k=1", "b.f=3"});
  ASSERT_TRUE(empty);
  EXPECT_EQ(*empty, "a: {k: 1}\nb: {c: \"x}\", d: [1, {e: 2}], f: 3}\n");
}

TEST(YamlEdit, RefusesWhatItCannotEditInPlace) {
  // A list element the text lacks, a collection as the value, an alias, a block scalar.
  EXPECT_FALSE(edit_yaml_text(kText, {"pools[2].replicas=1"}));
  EXPECT_FALSE(edit_yaml_text(kText, {"pools[0].engine=[1, 2]"}));
  EXPECT_FALSE(edit_yaml_text("a: &x 1\nb: *x\n", {"b=2"}));
  EXPECT_FALSE(edit_yaml_text("a: |\n  text\n", {"a=2"}));
  EXPECT_FALSE(edit_yaml_text(kText, {"pools[0].replicas"}));
  // Inside a value that is not a mapping.
  EXPECT_FALSE(edit_yaml_text(kText, {"name.x=1"}));
}

}  // namespace
}  // namespace kvfleet::sim::config

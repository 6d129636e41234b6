#pragma once
// Output fields declared beside the structs that hold them.
#include <functional>
#include <string>
#include <vector>

namespace kvfleet::sim {

// How a declared field adds up over the rows of its table (replicas, requests) into the run's
// /summary: not at all, summed, or the largest. A summed field is a counter: /summary, sweep
// metrics, the report's counters, OpenMetrics (per replica) and the GUI's table show it.
enum class Total { kNone, kSum, kMax };

// A field's declaration beside the struct that holds it (EngineStats::declare,
// RequestRecord::declare_counters): its unit, description and how it totals. Visitors read the
// declaration to build output columns, /summary metrics and the report's and GUI's counters.
struct FieldDecl {
  const char* unit = "";
  const char* desc = "";
  Total total = Total::kNone;
  const char* label = "";  // words for the GUI ("Preemptions"); "" = the name with spaces
};

// One field of a struct's declaration, its value read as a double.
template <class Rec>
struct DeclaredField {
  std::string name;
  FieldDecl decl;
  bool integer = false;  // a count: written as an integer column
  std::function<double(const Rec&)> get;
};

// The visitor that lists a declaration: `FieldList<EngineStats> l; EngineStats::declare(l);`.
template <class Rec>
class FieldList {
 public:
  template <class Get>
  void integer(const char* name, Get get, FieldDecl d) {
    add(name, get, d, true);
  }
  template <class Get>
  void number(const char* name, Get get, FieldDecl d) {
    add(name, get, d, false);
  }
  std::vector<DeclaredField<Rec>> fields;

 private:
  template <class Get>
  void add(const char* name, Get get, FieldDecl d, bool integer) {
    fields.push_back({name, d, integer,
                      [get](const Rec& r) { return static_cast<double>(std::invoke(get, r)); }});
  }
};

}  // namespace kvfleet::sim

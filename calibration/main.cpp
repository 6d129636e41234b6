// kvfleet-calibrate: make calibration profiles.
//   kvfleet-calibrate import --format vidur|llmservingsim PATH --out PROFILE.h5 [--tp N]
//                            [--network DIR]
// Exit status: 0 done, 2 bad input (the message names what and where), 1 anything else.
#include <boost/program_options.hpp>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "calibration/import.h"
#include "sim/core/error.h"

namespace po = boost::program_options;
using namespace kvfleet;

namespace {

int usage(std::ostream& o) {
  o << "usage:\n"
       "  kvfleet-calibrate import --format vidur|llmservingsim PATH --out PROFILE.h5 [--tp N]\n"
       "                           [--network DIR]\n";
  return 2;
}

int cmd_import(const std::vector<std::string>& args) {
  po::options_description opts("import options");
  std::string format, out, network;
  int tp = 1;
  opts.add_options()("format", po::value(&format)->required(), "vidur or llmservingsim")(
      "out", po::value(&out)->required(), "profile to write (HDF5)")(
      "tp", po::value(&tp)->default_value(1), "tensor-parallel degree to import")(
      "network", po::value(&network), "Vidur network/<node> folder with all_reduce.csv")(
      "path", po::value<std::string>()->required(), "the profile to import");
  po::positional_options_description pos;
  pos.add("path", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  po::notify(vm);
  const std::string path = vm["path"].as<std::string>();
  sim::Profile p;
  if (format == "llmservingsim") {
    p = calibration::import_llmservingsim(path, tp);
  } else if (format == "vidur") {
    p = calibration::import_vidur(path, tp, network);
  } else {
    throw sim::InputError("--format", "", "'" + format + "' is not vidur or llmservingsim");
  }
  sim::write_profile(out, p);
  std::size_t points = p.attention.size();
  for (const auto& c : p.curves) points += c.x.size();
  std::cout << "kvfleet-calibrate: imported " << format << " profile of " << p.get("model")
            << " on " << p.get("gpu") << " (tp " << tp << "): " << p.curves.size()
            << " operation curves, " << p.attention.size() << " attention points, " << points
            << " points in all -> " << out << "\n  provenance: " << p.get("provenance") << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return usage(std::cerr);
  if (args[0] == "--help" || args[0] == "-h") {
    usage(std::cout);
    return 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  try {
    if (cmd == "import") return cmd_import(args);
    std::cerr << "kvfleet-calibrate: unknown command '" << cmd << "'\n";
    return usage(std::cerr);
  } catch (const po::error& e) {
    std::cerr << "kvfleet-calibrate " << cmd << ": " << e.what() << "\n";
    return usage(std::cerr);
  } catch (const sim::InputError& e) {
    std::cerr << "kvfleet-calibrate " << cmd << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kvfleet-calibrate " << cmd << ": " << e.what() << "\n";
    return 1;
  }
}

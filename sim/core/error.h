#pragma once
// Errors in user input: scenario files, --set overrides, trace files. Each names where the problem
// is (file, line or row, key) so that one message is enough to fix it. The CLI turns them into
// exit status 2.
#include <stdexcept>
#include <string>

namespace kvfleet::sim {

class InputError : public std::runtime_error {
 public:
  // `where` is "file:line" (or "file: row N", or "--set k=v"); `key` is the dotted key path or
  // column name, empty when none applies.
  InputError(std::string where, std::string key, std::string problem)
      : std::runtime_error(format(where, key, problem)),
        where_(std::move(where)),
        key_(std::move(key)),
        problem_(std::move(problem)) {}

  const std::string& where() const { return where_; }
  const std::string& key() const { return key_; }
  const std::string& problem() const { return problem_; }

 private:
  static std::string format(const std::string& where, const std::string& key,
                            const std::string& problem) {
    std::string m = where;
    if (!key.empty()) m += (m.empty() ? "" : ": ") + key;
    return m + (m.empty() ? "" : ": ") + problem;
  }
  std::string where_, key_, problem_;
};

}  // namespace kvfleet::sim

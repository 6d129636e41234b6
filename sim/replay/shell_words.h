#pragma once
// A launch script's commands split into words as POSIX sh splits a simple command, so that a
// `vllm serve` line is read as the shell would run it: quotes ('…' literal; "…" with \ escaping
// $ ` " \ and newline), backslash escapes, backslash-newline continuations, `#` comments (at the
// start of a word, to the end of the line), and commands separated by newlines, `;`, `&`, `&&`,
// `||` and `|`. Nothing is expanded: `$VAR` and `$(…)` stay as written (a value the script
// computes is not known to a reader of the file).
#include <string>
#include <string_view>
#include <vector>

namespace kvfleet::sim {

struct ShellWord {
  std::string text;
  int line = 0;  // 1-based line of the file where the word starts
};
using ShellCommand = std::vector<ShellWord>;

// The commands of `text`, each its words, in order; empty commands are left out. Throws
// InputError naming `where` and the line for an unterminated quote.
std::vector<ShellCommand> shell_commands(std::string_view text, const std::string& where);

}  // namespace kvfleet::sim

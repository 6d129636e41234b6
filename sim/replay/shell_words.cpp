#include "sim/replay/shell_words.h"

#include "sim/core/error.h"

namespace kvfleet::sim {

namespace {

class Splitter {
 public:
  Splitter(std::string_view text, const std::string& where) : s_(text), where_(where) {}

  std::vector<ShellCommand> run() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\\' && next() == '\n') {  // continuation: the command goes on
        i_ += 2, ++line_;
      } else if (c == '\n') {
        end_word(), end_command(), ++i_, ++line_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        end_word(), ++i_;
      } else if (c == '>' || c == '<' || (c == '&' && next() == '>')) {
        redirection();
      } else if (c == ';' || c == '&' || c == '|') {
        end_word(), end_command(), ++i_;
      } else if (c == '#' && !in_word_) {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (c == '\'') {
        start_word(), single_quoted();
      } else if (c == '"') {
        start_word(), double_quoted();
      } else if (c == '\\') {
        start_word(), word_ += i_ + 1 < s_.size() ? s_[i_ + 1] : '\\', i_ += 2;
      } else {
        start_word(), word_ += c, ++i_;
      }
    }
    end_word(), end_command();
    return commands_;
  }

 private:
  char next() const { return i_ + 1 < s_.size() ? s_[i_ + 1] : '\0'; }
  void start_word() {
    if (!in_word_) in_word_ = true, word_line_ = line_;
  }
  void end_word() {
    if (in_word_) cmd_.push_back({word_, word_line_});
    in_word_ = false, word_.clear();
  }
  void end_command() {
    if (!cmd_.empty()) commands_.push_back(std::move(cmd_));
    cmd_.clear();
  }
  // `>file`, `2>&1`, `>> log`, `&> out`, `< in`: not words of the command; the operator and its
  // target are skipped (a word of digits just before the operator is its file descriptor).
  void redirection() {
    if (in_word_ && word_.find_first_not_of("0123456789") != std::string::npos) end_word();
    in_word_ = false, word_.clear();
    while (i_ < s_.size() && (s_[i_] == '>' || s_[i_] == '<' || s_[i_] == '&' || s_[i_] == '|'))
      ++i_;
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
    while (i_ < s_.size() && s_[i_] != ' ' && s_[i_] != '\t' && s_[i_] != '\n' && s_[i_] != ';' &&
           s_[i_] != '&' && s_[i_] != '|') {
      const char q = s_[i_];
      if (q == '\'' || q == '"') {
        const int from = line_;
        for (++i_; i_ < s_.size() && s_[i_] != q; ++i_) line_ += s_[i_] == '\n';
        if (i_ >= s_.size()) unterminated(from, q);
      }
      ++i_;
    }
  }
  void unterminated(int from, char q) const {
    throw InputError(where_ + ":" + std::to_string(from), "",
                     std::string("a quote (") + q + ") opened here is never closed");
  }
  void single_quoted() {
    const int from = line_;
    for (++i_; i_ < s_.size() && s_[i_] != '\''; ++i_) {
      if (s_[i_] == '\n') ++line_;
      word_ += s_[i_];
    }
    if (i_ >= s_.size()) unterminated(from, '\'');
    ++i_;
  }
  void double_quoted() {
    const int from = line_;
    for (++i_; i_ < s_.size() && s_[i_] != '"'; ++i_) {
      const char c = s_[i_];
      if (c == '\\' && i_ + 1 < s_.size()) {
        const char n = s_[i_ + 1];
        if (n == '\n') {  // continuation inside quotes: both characters vanish
          ++i_, ++line_;
          continue;
        }
        if (n == '$' || n == '`' || n == '"' || n == '\\') {
          word_ += n, ++i_;
          continue;
        }
      }
      if (c == '\n') ++line_;
      word_ += c;
    }
    if (i_ >= s_.size()) unterminated(from, '"');
    ++i_;
  }

  std::string_view s_;
  const std::string& where_;
  std::size_t i_ = 0;
  int line_ = 1, word_line_ = 1;
  bool in_word_ = false;
  std::string word_;
  ShellCommand cmd_;
  std::vector<ShellCommand> commands_;
};

}  // namespace

std::vector<ShellCommand> shell_commands(std::string_view text, const std::string& where) {
  return Splitter(text, where).run();
}

}  // namespace kvfleet::sim

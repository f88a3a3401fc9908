// Small helpers shared by the CLI's subcommands (argument parsing without dependencies).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace qsgemm::cli {

// Finds "--name value" or "--name=value"; returns true and sets out when present.
inline bool arg_value(int argc, char** argv, const std::string& name, std::string* out) {
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == name && i + 1 < argc) {
      *out = argv[i + 1];
      return true;
    }
    if (a.rfind(name + "=", 0) == 0) {
      *out = a.substr(name.size() + 1);
      return true;
    }
  }
  return false;
}
inline bool has_flag(int argc, char** argv, const std::string& name) {
  for (int i = 0; i < argc; ++i)
    if (argv[i] == name) return true;
  return false;
}
// Parses the whole of `text` as a decimal integer >= min_value for flag `flag`. Throws
// std::invalid_argument naming the flag and the value for anything else: an empty string, trailing
// characters ("12x", "1e3", "4.0"), leading blanks, a value out of the int64 range or below min_value.
inline int64_t parse_int_arg(const std::string& flag, const std::string& text, int64_t min_value = 0) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(flag + " '" + text + "': " + why);
  };
  if (text.empty()) throw bad("expected an integer, got an empty value");
  if (!(text[0] == '-' || text[0] == '+' || (text[0] >= '0' && text[0] <= '9')))
    throw bad("expected a decimal integer");
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != 0) throw bad("expected a decimal integer");
  if (errno == ERANGE) throw bad("out of range");
  if (x < min_value) throw bad("must be >= " + std::to_string(min_value));
  return x;
}
// "--name value": the value (parse_int_arg's rules) or `fallback` when the flag is absent. A flag
// given as the last argument, with no value, is an error too.
inline int64_t arg_int(int argc, char** argv, const std::string& name, int64_t fallback, int64_t min_value = 0) {
  std::string v;
  if (!arg_value(argc, argv, name, &v)) {
    if (has_flag(argc, argv, name)) throw std::invalid_argument(name + ": missing value");
    return fallback;
  }
  return parse_int_arg(name, v, min_value);
}

int run_verify(int argc, char** argv);
int run_tune(int argc, char** argv);

}  // namespace qsgemm::cli

// Small helpers shared by the CLI's subcommands (argument parsing without dependencies).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "qsgemm/quant.h"

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

// The items of a comma-separated list ("a,b,,c" gives four, one empty: the callers reject it).
inline std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> items;
  size_t pos = 0;
  while (pos <= v.size()) {
    const size_t end = std::min(v.find(',', pos), v.size());
    items.push_back(v.substr(pos, end - pos));
    pos = end + 1;
  }
  return items;
}

// A whole item as an integer in [lo, hi); false for anything else.
inline bool list_int(const std::string& item, long lo, long hi, long* out) {
  char* rest = nullptr;
  const long i = std::strtol(item.c_str(), &rest, 10);
  if (item.empty() || *rest != '\0' || i < lo || i >= hi) return false;
  *out = i;
  return true;
}

// A comma-separated list of integers in [lo, hi) (the value of `flag`); prints what is wrong and
// returns false on a bad item (`what` names the items in the message).
inline bool parse_int_list(const std::string& v, long lo, long hi, const char* flag, const char* what,
                           std::vector<int>* out) {
  for (const std::string& item : split_list(v)) {
    long i = 0;
    if (!list_int(item, lo, hi, &i)) {
      std::fprintf(stderr, "qsgemm: %s item '%s' is not %s in [%ld, %ld)\n", flag, item.c_str(), what, lo, hi);
      return false;
    }
    out->push_back(static_cast<int>(i));
  }
  return true;
}

// A comma-separated list of configurations (--configs), each a name of the table or an index in
// [0, count): name_to_index maps a name (throws qsgemm::Error for an unknown one, listing the valid
// names; may be empty, then only indices are accepted). Prints what is wrong and returns false on a
// bad item.
inline bool parse_config_list(const std::string& v, int count, const std::function<int(const std::string&)>& name_to_index,
                              const char* flag, std::vector<int>* out) {
  for (const std::string& item : split_list(v)) {
    long i = 0;
    if (list_int(item, 0, count, &i)) {
      out->push_back(static_cast<int>(i));
      continue;
    }
    const bool numeric = !item.empty() && item.find_first_not_of("+-0123456789") == std::string::npos;
    if (numeric || item.empty() || !name_to_index) {
      std::fprintf(stderr, "qsgemm: %s item '%s' is not a configuration index in [0, %d)\n", flag, item.c_str(), count);
      return false;
    }
    try {
      out->push_back(name_to_index(item));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "qsgemm: %s item '%s': %s\n", flag, item.c_str(), e.what());
      return false;
    }
  }
  return true;
}

// A scale granularity by its granularity_name (group_1x128, block_128x128, per_row); false for
// anything else (per-tensor scales are not a blockwise pair).
inline bool parse_granularity(const std::string& s, ScaleGranularity* g) {
  for (ScaleGranularity c : {ScaleGranularity::kGroup1x128, ScaleGranularity::kBlock128x128, ScaleGranularity::kPerRow})
    if (s == granularity_name(c)) {
      *g = c;
      return true;
    }
  return false;
}

int run_verify(int argc, char** argv);
int run_tune(int argc, char** argv);
int run_plan(int argc, char** argv);

}  // namespace qsgemm::cli

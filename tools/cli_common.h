// Small helpers shared by the CLI's subcommands (argument parsing without dependencies).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
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
inline int64_t arg_int(int argc, char** argv, const std::string& name, int64_t fallback) {
  std::string v;
  if (!arg_value(argc, argv, name, &v)) return fallback;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  return (end && *end == 0) ? x : fallback;
}

// A comma-separated list of configurations (--configs), each a name of the table or an index in
// [0, count): name_to_index maps a name (throws qsgemm::Error for an unknown one, listing the valid
// names; may be empty, then only indices are accepted). Prints what is wrong and returns false on a
// bad item.
inline bool parse_config_list(const std::string& v, int count, const std::function<int(const std::string&)>& name_to_index,
                              const char* flag, std::vector<int>* out) {
  size_t pos = 0;
  while (pos <= v.size()) {
    const size_t end = std::min(v.find(',', pos), v.size());
    const std::string item = v.substr(pos, end - pos);
    char* rest = nullptr;
    const long i = std::strtol(item.c_str(), &rest, 10);
    if (!item.empty() && *rest == '\0') {
      if (i < 0 || i >= count) {
        std::fprintf(stderr, "qsgemm: %s item '%s' is not a configuration index in [0, %d)\n", flag, item.c_str(), count);
        return false;
      }
      out->push_back(static_cast<int>(i));
    } else {
      if (item.empty() || !name_to_index) {
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
    pos = end + 1;
  }
  return true;
}

int run_verify(int argc, char** argv);
int run_tune(int argc, char** argv);

}  // namespace qsgemm::cli

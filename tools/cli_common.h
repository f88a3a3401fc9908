// Small helpers shared by the CLI's subcommands (argument parsing without dependencies).
#pragma once

#include <cstdint>
#include <cstdlib>
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

int run_verify(int argc, char** argv);
int run_tune(int argc, char** argv);

}  // namespace qsgemm::cli

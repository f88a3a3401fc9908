// The CLI's number parsing (tools/cli_common.h): a malformed or out-of-range number is an error
// naming the flag and the value, never silently the default.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "../../tools/cli_common.h"

namespace {

using qsgemm::cli::arg_int;
using qsgemm::cli::parse_int_arg;

// arg_int over a command line given as strings.
int64_t parse(std::vector<std::string> args, int64_t fallback = 7, int64_t min_value = 0) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return arg_int(static_cast<int>(argv.size()), argv.data(), "--m", fallback, min_value);
}

void expect_bad(const std::vector<std::string>& args, const std::string& needle, int64_t min_value = 0) {
  try {
    parse(args, 7, min_value);
    ADD_FAILURE() << "no error for '" << (args.size() > 1 ? args[1] : args[0]) << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CliArgs, WellFormedNumbers) {
  EXPECT_EQ(parse({"--m", "12"}), 12);
  EXPECT_EQ(parse({"--m=4096"}), 4096);
  EXPECT_EQ(parse({"--n", "5"}), 7);  // absent: the default
  EXPECT_EQ(parse({}), 7);
  EXPECT_EQ(parse({"--m", "0"}), 0);
  EXPECT_EQ(parse({"--m", "-3"}, 7, -10), -3);
  EXPECT_EQ(parse_int_arg("--k", "9223372036854775807"), INT64_MAX);
}

TEST(CliArgs, MalformedNumbersAreErrorsNamingFlagAndValue) {
  expect_bad({"--m", "12x"}, "--m '12x': expected a decimal integer");
  expect_bad({"--m", ""}, "--m '': expected an integer, got an empty value");
  expect_bad({"--m="}, "--m '': expected an integer");
  expect_bad({"--m", "1e3"}, "--m '1e3': expected a decimal integer");
  expect_bad({"--m", "4.0"}, "--m '4.0'");
  expect_bad({"--m", " 12"}, "--m ' 12'");
  expect_bad({"--m", "0x10"}, "--m '0x10'");
  expect_bad({"--m", "--n"}, "--m '--n'");
  expect_bad({"--m", "99999999999999999999"}, "--m '99999999999999999999': out of range");
  expect_bad({"--m", "-1"}, "--m '-1': must be >= 0");
  expect_bad({"--m", "5"}, "--m '5': must be >= 8", 8);
  expect_bad({"--m"}, "--m: missing value");
}

}  // namespace

namespace {

// --split-k / --configs lists: every item whole, in range, or (for --configs) a known name.
TEST(CliArgs, Lists) {
  using qsgemm::cli::parse_config_list;
  using qsgemm::cli::parse_int_list;
  std::vector<int> v;
  EXPECT_TRUE(parse_int_list("1,2,16", 1, 17, "--split-k", "a split", &v));
  EXPECT_EQ(v, (std::vector<int>{1, 2, 16}));
  for (const char* bad : {"", "1,", "1,,2", "0", "17", "2x", "a"}) {
    std::vector<int> w;
    EXPECT_FALSE(parse_int_list(bad, 1, 17, "--split-k", "a split", &w)) << bad;
  }
  const auto by_name = [](const std::string& s) -> int {
    if (s == "tile_a") return 3;
    throw std::invalid_argument("no configuration named '" + s + "'");
  };
  std::vector<int> c;
  EXPECT_TRUE(parse_config_list("0,tile_a,4", 5, by_name, "--configs", &c));
  EXPECT_EQ(c, (std::vector<int>{0, 3, 4}));
  for (const char* bad : {"5", "-1", "tile_b", "0,", "12x"}) {
    std::vector<int> w;
    EXPECT_FALSE(parse_config_list(bad, 5, by_name, "--configs", &w)) << bad;
  }
  std::vector<int> w;
  EXPECT_FALSE(parse_config_list("tile_a", 5, nullptr, "--configs", &w)) << "names need a lookup";
}

}  // namespace

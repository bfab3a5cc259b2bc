// The examples' flag parser (cli/flags.h) and layout check (cli/mesh_flags.h):
// values parsed whole, NaN and infinity refused, unknown flags and layout
// dimensions named with the nearest real one.
#include <gtest/gtest.h>

#include "cli/flags.h"
#include "cli/mesh_flags.h"
#include "expect_error.h"
#include "mtf/mtf.h"

namespace mtf {
namespace {

using testing::expect_error;

bool parse(cli::Flags& flags, std::vector<std::string> args) {
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return flags.parse(static_cast<int>(argv.size()), argv.data());
}

cli::Flags example_flags() {
  cli::Flags f;
  f.define("hidden", "1024", "size");
  f.define("learning_rate", "0.1", "rate");
  f.define("layout", "", "rules");
  return f;
}

TEST(CliFlags, ValuesAreParsedWholeAndFinite) {
  cli::Flags f = example_flags();
  ASSERT_TRUE(parse(f, {"--hidden", "64", "--learning_rate=0.5"}));
  EXPECT_EQ(f.i64("hidden"), 64);
  EXPECT_EQ(f.f64("learning_rate"), 0.5);
  for (const char* bad : {"nan", "inf", "-inf", "1e999"}) {
    cli::Flags g = example_flags();
    ASSERT_TRUE(parse(g, {"--learning_rate", bad}));
    // 1e999 overflows the parse: "not a number"; the others parse to a
    // non-finite value: "not a finite number".
    expect_error<ValueError>([&] { g.f64("learning_rate"); }, {"--learning_rate", "not a"});
  }
  cli::Flags nan = example_flags();
  ASSERT_TRUE(parse(nan, {"--learning_rate", "nan"}));
  expect_error<ValueError>([&] { nan.f64("learning_rate"); }, {"not a finite number"});
  cli::Flags g = example_flags();
  ASSERT_TRUE(parse(g, {"--hidden", "12x"}));
  expect_error<ValueError>([&] { g.i64("hidden"); }, {"--hidden=\"12x\" is not an integer"});
}

TEST(CliFlags, UnknownFlagsNameTheNearestWithoutTheWholeUsage) {
  cli::Flags f = example_flags();
  expect_error<ValueError>(
      [&] {
        parse(f, {"--hiden", "3"});
      },
      {"unknown flag --hiden; did you mean --hidden?", "--help"});
  try {
    parse(f, {"--zzzzzzzz", "3"});
    FAIL() << "accepted";
  } catch (const ValueError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find("did you mean"), std::string::npos) << m;  // nothing close
    EXPECT_EQ(m.find("(default"), std::string::npos) << m;      // no usage dump
  }
  expect_error<ValueError>([&] { parse(f, {"--hidden"}); }, {"--hidden needs a value"});
  expect_error<ValueError>([&] { parse(f, {"stray"}); }, {"unexpected argument \"stray\""});
  EXPECT_EQ(cli::closest_name("d_mdoel", {"d_model", "d_ff", "heads"}), "d_model");
  EXPECT_EQ(cli::closest_name("xyz", {"d_model", "d_ff"}), "");
}

TEST(CliFlags, LayoutRulesForDimensionsTheModelLacksAreErrors) {
  Graph g;
  Mesh mesh(g, "m");
  const Tensor x = placeholder(mesh, Shape("batch:4;hidden:8"), float32, "x");
  (void)x;
  MeshConfig config;
  config.mesh_shape = MeshShape("all:2");
  config.layout = LayoutRules("batch:all");
  cli::check_layout_dimensions(config, g);
  config.layout = LayoutRules("hiden:all");
  expect_error<LayoutError>([&] { cli::check_layout_dimensions(config, g); },
                            {"\"hiden:all\"", "did you mean \"hidden\"?", "batch, hidden"});
}

TEST(CliFlags, MeshShapesOfSeparatorsOnlyOrTooManyProcessorsAreErrors) {
  expect_error<LayoutError>([] { MeshShape(";;;"); }, {"separators but no a:b piece"});
  EXPECT_EQ(MeshShape("").size(), 1);
  expect_error<LayoutError>([] { MeshShape("a:65536;b:65536"); },
                            {"more than 16777216 processors"});
  EXPECT_EQ(MeshShape("a:4096;b:4096").size(), 16777216);
}

}  // namespace
}  // namespace mtf

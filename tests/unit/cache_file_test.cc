#include <cmath>
#include <limits>

#include <doctest/doctest.h>

#include "onnx_light/tune/cache_file.h"
#include "tune_fixture.h"

using namespace onnx_light;
using namespace onnx_light::tune;
using runtime::TuningValue;
using runtime::TuningValues;

namespace {

CacheProfile sample_profile(const std::string& kernel = "Alpha", int64_t threads = 2) {
  CacheProfile p;
  p.key.kernel = kernel;
  p.key.implementation = "portable";
  p.key.tuning_abi = 3;
  p.host = tune_test::test_machine().with_threads(threads);
  p.values["parallel.minimum_elements"] = int64_t{16384};
  p.provenance = {"set", "2026-12-02T11:39:29Z", "0.1.0"};
  return p;
}

CacheFile reparse(const std::vector<CacheProfile>& profiles) {
  return parse_cache_text(serialize_cache(profiles), "test.cache");
}

const std::string kHeader = "format = \"onnx-light-kernel-tuning\"\nformat_version = 1\n";

}  // namespace

TEST_CASE("cache_file_round_trip_keeps_every_value_type") {
  CacheProfile p = sample_profile();
  const TuningValues values{
      {"i.max", std::numeric_limits<int64_t>::max()},
      {"i.min", std::numeric_limits<int64_t>::min()},
      {"i.zero", int64_t{0}},
      {"d.tenth", 0.1},
      {"d.one", 1.0},  // must stay a double, not become the integer 1
      {"d.big", 1e300},
      {"d.tiny", 5e-324},
      {"d.negative_zero", -0.0},
      {"d.inf", std::numeric_limits<double>::infinity()},
      {"d.minus_inf", -std::numeric_limits<double>::infinity()},
      {"b.true", true},
      {"b.false", false},
      {"s.empty", std::string()},
      {"s.escapes", std::string("quote \" backslash \\ newline \n tab \t cr \r ctrl \x01 del \x7f")},
      {"s.unicode", std::string("caf\xc3\xa9 \xe6\xbc\xa2\xe5\xad\x97 \xf0\x9f\x98\x80")},
  };
  p.values = values;
  const CacheFile file = reparse({p});
  REQUIRE(file.status == FileStatus::loaded);
  REQUIRE(file.profiles.size() == 1);
  const CacheProfile& back = file.profiles[0];
  CHECK(back.readable());
  CHECK(back.key == p.key);
  CHECK(back.host == p.host);
  CHECK(back.provenance == p.provenance);
  CHECK(back.values == values);
  CHECK(std::holds_alternative<double>(back.values.at("d.one")));
  CHECK(std::signbit(std::get<double>(back.values.at("d.negative_zero"))));
}

TEST_CASE("cache_file_idle_spin_round_trips_and_defaults_to_spinning") {
  CacheProfile spins = sample_profile();
  CacheProfile parks = sample_profile();
  parks.host.idle_spin = false;
  const std::string text = serialize_cache({spins, parks});
  CHECK(text.find("idle_spin = true\n") != std::string::npos);
  CHECK(text.find("idle_spin = false\n") != std::string::npos);
  const CacheFile file = parse_cache_text(text, "x");
  REQUIRE(file.profiles.size() == 2);  // the spin class is part of the identity: both kept
  CHECK(file.profiles[0].readable());
  CHECK(file.profiles[1].readable());
  CHECK(file.profiles[0].host.idle_spin != file.profiles[1].host.idle_spin);
  CHECK_FALSE(same_profile_identity(file.profiles[0], file.profiles[1]));

  // Written before the field existed (tuning ABI 1): those sessions ran the default spin.
  const std::string old = kHeader +
                          "[[profile]]\nlibrary = \"l\"\nkernel = \"k\"\nimplementation = \"i\"\nelement_type = 1\n"
                          "device = -1\ntuning_abi = 1\n[profile.host]\narchitecture = \"a\"\nvendor = \"v\"\n"
                          "effective_threads = 1\n[profile.values]\n";
  const CacheFile before = parse_cache_text(old, "x");
  REQUIRE(before.profiles.size() == 1);
  CHECK(before.profiles[0].readable());
  CHECK(before.profiles[0].host.idle_spin);

  // Anything but a boolean is a problem naming the field; the profile is kept verbatim.
  std::string wrong = old;
  wrong.replace(wrong.find("effective_threads = 1\n"), 22, "effective_threads = 1\nidle_spin = \"no\"\n");
  const CacheFile bad = parse_cache_text(wrong, "x");
  REQUIRE(bad.profiles.size() == 1);
  REQUIRE_FALSE(bad.profiles[0].readable());
  CHECK(bad.profiles[0].problems[0].field == "host.idle_spin");
}

TEST_CASE("cache_file_nan_round_trips_as_nan") {
  CacheProfile p = sample_profile();
  p.values = {{"x", std::numeric_limits<double>::quiet_NaN()}};
  const CacheFile file = reparse({p});
  REQUIRE(file.status == FileStatus::loaded);
  CHECK(std::isnan(std::get<double>(file.profiles.at(0).values.at("x"))));
}

TEST_CASE("cache_file_written_with_header_design_field_order_and_sorted_profiles") {
  CacheProfile zeta = sample_profile("Zeta");
  CacheProfile alpha4 = sample_profile("Alpha", 4);
  CacheProfile alpha1 = sample_profile("Alpha", 1);
  const std::string text = serialize_cache({zeta, alpha4, alpha1});
  CHECK(text.starts_with("# onnx-light kernel tuning cache"));
  CHECK(text.find(kHeader) != std::string::npos);
  // Profiles: Alpha before Zeta, and within Alpha the host with fewer threads first.
  const auto first_alpha = text.find("kernel = \"Alpha\"");
  const auto zeta_at = text.find("kernel = \"Zeta\"");
  CHECK(first_alpha < zeta_at);
  CHECK(text.find("effective_threads = 1") < text.find("effective_threads = 4"));
  // Fields in DESIGN.md section 4 order.
  const std::vector<std::string> order = {"[[profile]]", "library =", "kernel =", "implementation =",
                                          "element_type =", "device =", "tuning_abi =", "[profile.host]",
                                          "architecture =", "vendor =", "microarchitecture =", "effective_threads =",
                                          "[profile.values]", "\"parallel.minimum_elements\" = 16384",
                                          "[profile.provenance]", "source = \"set\"", "written = 2026-12-02T11:39:29Z",
                                          "tool_version = \"0.1.0\""};
  std::size_t at = 0;
  for (const auto& item : order) {
    const auto found = text.find(item, at);
    CHECK_MESSAGE(found != std::string::npos, item);
    if (found != std::string::npos) at = found;
  }
  // Writing what was read gives the same bytes (stable order, readable diffs).
  CHECK(serialize_cache(parse_cache_text(text, "x").profiles) == text);
}

TEST_CASE("cache_file_malformed_whole_file_states") {
  struct Case {
    const char* name;
    std::string text;
    const char* error_part;
  };
  const std::vector<Case> cases = {
      {"not toml", "this is = = not toml", "not valid TOML"},
      {"no format", "format_version = 1\n", "no 'format"},
      {"other format", "format = \"something-else\"\nformat_version = 1\n", "'format' is"},
      {"format not a string", "format = 3\nformat_version = 1\n", "'format' is"},
      {"newer version", "format = \"onnx-light-kernel-tuning\"\nformat_version = 3\n", "newer"},
      {"version zero", "format = \"onnx-light-kernel-tuning\"\nformat_version = 0\n", "not a valid version"},
      {"version missing", "format = \"onnx-light-kernel-tuning\"\n", "format_version"},
      {"profile is a table", kHeader + "[profile]\nkernel = \"Alpha\"\n", "array of tables"},
      {"profile of integers", kHeader + "profile = [1, 2]\n", "array of tables"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const CacheFile file = parse_cache_text(c.text, "bad.cache");
    CHECK(file.status == FileStatus::malformed);
    CHECK(file.error.find(c.error_part) != std::string::npos);
    CHECK(file.profiles.empty());
  }
}

TEST_CASE("cache_file_empty_or_comment_only_is_an_empty_cache") {
  CHECK(parse_cache_text("", "e").status == FileStatus::loaded);
  CHECK(parse_cache_text("  \n\n# just a comment\n", "e").status == FileStatus::loaded);
  const CacheFile header_only = parse_cache_text(kHeader, "e");
  CHECK(header_only.status == FileStatus::loaded);
  CHECK(header_only.profiles.empty());
}

TEST_CASE("cache_file_bad_profile_names_its_field_and_keeps_the_others") {
  const std::string good = serialize_cache({sample_profile()});
  const std::string text = good +
                           "\n[[profile]]\nlibrary = \"onnx_light\"\nimplementation = \"portable\"\nelement_type = 1\n"
                           "device = -1\ntuning_abi = 3\n[profile.host]\narchitecture = \"x86_64\"\nvendor = \"amd\"\n"
                           "effective_threads = \"two\"\n[profile.values]\nx = [1, 2]\n";
  const CacheFile file = parse_cache_text(text, "mixed.cache");
  REQUIRE(file.status == FileStatus::loaded);
  REQUIRE(file.profiles.size() == 2);
  CHECK(file.profiles[0].readable());
  const CacheProfile& bad = file.profiles[1];
  CHECK_FALSE(bad.readable());
  std::vector<std::string> fields;
  for (const auto& problem : bad.problems) fields.push_back(problem.field);
  CHECK(std::find(fields.begin(), fields.end(), "kernel") != fields.end());
  CHECK(std::find(fields.begin(), fields.end(), "host.effective_threads") != fields.end());
  CHECK(std::find(fields.begin(), fields.end(), "values.x") != fields.end());
  CHECK(bad.raw_toml.find("[[profile]]") != std::string::npos);

  // Rewriting keeps the unreadable profile (verbatim data) after the sorted good ones.
  const CacheFile again = parse_cache_text(serialize_cache(file.profiles), "mixed.cache");
  REQUIRE(again.profiles.size() == 2);
  CHECK(again.profiles[0].readable());
  CHECK_FALSE(again.profiles[1].readable());
  CHECK(again.profiles[1].raw_toml == bad.raw_toml);
}

TEST_CASE("cache_file_out_of_range_key_fields_are_problems") {
  CacheProfile p = sample_profile();
  std::string text = serialize_cache({p});
  const auto at = text.find("tuning_abi = 3");
  text.replace(at, 14, "tuning_abi = 0");
  const CacheFile file = parse_cache_text(text, "x");
  REQUIRE(file.profiles.size() == 1);
  REQUIRE_FALSE(file.profiles[0].readable());
  CHECK(file.profiles[0].problems[0].field == "tuning_abi");
}

TEST_CASE("cache_file_unquoted_dotted_parameter_names_are_flattened") {
  std::string text = serialize_cache({sample_profile()});
  const auto at = text.find("\"parallel.minimum_elements\" = 16384");
  text.replace(at, std::string("\"parallel.minimum_elements\" = 16384").size(), "parallel.minimum_elements = 8192");
  const CacheFile file = parse_cache_text(text, "x");
  REQUIRE(file.profiles.size() == 1);
  CHECK(file.profiles[0].readable());
  CHECK(std::get<int64_t>(file.profiles[0].values.at("parallel.minimum_elements")) == 8192);
}

TEST_CASE("cache_file_features_sorted_and_missing_optional_host_fields_default") {
  const std::string text = kHeader +
                           "[[profile]]\nlibrary = \"onnx_light\"\nkernel = \"Alpha\"\nimplementation = \"portable\"\n"
                           "element_type = 1\ndevice = -1\ntuning_abi = 3\n[profile.host]\narchitecture = \"x86_64\"\n"
                           "vendor = \"amd\"\nfeatures = [\"fma\", \"avx\", \"fma\"]\neffective_threads = 2\n"
                           "[profile.values]\n";
  const CacheFile file = parse_cache_text(text, "x");
  REQUIRE(file.profiles.size() == 1);
  const CacheProfile& p = file.profiles[0];
  CHECK(p.readable());
  CHECK(p.host.features == std::vector<std::string>{"avx", "fma"});
  CHECK(p.host.l3_cache_bytes == 0);
  CHECK(p.provenance.source.empty());
}

TEST_CASE("cache_file_provenance_written_forms") {
  auto written_of = [](const std::string& literal) {
    const std::string text = kHeader +
                             "[[profile]]\nlibrary = \"l\"\nkernel = \"k\"\nimplementation = \"i\"\nelement_type = 1\n"
                             "device = -1\ntuning_abi = 1\n[profile.host]\narchitecture = \"a\"\nvendor = \"v\"\n"
                             "effective_threads = 1\n[profile.values]\n[profile.provenance]\nwritten = " +
                             literal + "\n";
    const CacheFile file = parse_cache_text(text, "x");
    REQUIRE(file.profiles.size() == 1);
    return file.profiles[0];
  };
  CHECK(written_of("2026-12-02T11:39:29Z").provenance.written == "2026-12-02T11:39:29Z");
  CHECK(written_of("2026-12-02T11:39:29.250+02:00").provenance.written == "2026-12-02T11:39:29.25+02:00");
  CHECK(written_of("\"yesterday\"").provenance.written == "yesterday");
  CHECK_FALSE(written_of("42").readable());
  // A non-canonical string is written back quoted, so the file stays valid TOML.
  for (const char* text : {"yesterday", "2026-02-30T00:00:00Z", "2026-12-02T11:39:29.500Z", "2026-12-02T25:00:00Z"}) {
    CAPTURE(text);
    CacheProfile p = written_of("\"" + std::string(text) + "\"");
    const CacheFile again = reparse({p});
    REQUIRE(again.status == FileStatus::loaded);
    CHECK(again.profiles.at(0).provenance.written == text);
  }
}

TEST_CASE("cache_file_read_states_not_found_unreadable_loaded") {
  tune_test::ScratchDir dir;
  CHECK(read_cache_file(dir / "missing.cache").status == FileStatus::not_found);
  std::filesystem::create_directory(dir / "a_directory.cache");
  const CacheFile directory = read_cache_file(dir / "a_directory.cache");
  CHECK(directory.status == FileStatus::unreadable);
  CHECK(directory.error.find("not a regular file") != std::string::npos);
  tune_test::write_text(dir / "good.cache", serialize_cache({sample_profile()}));
  const CacheFile good = read_cache_file(dir / "good.cache");
  CHECK(good.status == FileStatus::loaded);
  CHECK(good.profiles.size() == 1);
  CHECK(good.path == dir / "good.cache");
}

TEST_CASE("cache_file_invalid_utf8_is_malformed_not_a_crash") {
  const CacheFile file = parse_cache_text(kHeader + "x = \"\xff\xfe\"\n", "x");
  CHECK(file.status == FileStatus::malformed);
}

namespace {

// parse_cache_text (section by section, memoised) must agree with the whole-document parse.
void check_same_as_reference(const std::string& text) {
  const CacheFile fast = parse_cache_text(text, "x.cache");
  const CacheFile reference = parse_cache_text_reference(text, "x.cache");
  REQUIRE(fast.status == reference.status);
  CHECK(fast.error == reference.error);
  REQUIRE(fast.profiles.size() == reference.profiles.size());
  for (std::size_t i = 0; i < fast.profiles.size(); ++i) {
    const CacheProfile& a = fast.profiles[i];
    const CacheProfile& b = reference.profiles[i];
    CHECK(a.key == b.key);
    CHECK(a.host == b.host);
    CHECK(a.values == b.values);
    CHECK(a.provenance == b.provenance);
    CHECK(a.problems.size() == b.problems.size());
    CHECK(a.raw_toml == b.raw_toml);
  }
}

}  // namespace

// Host sections are read without toml++ when they are in the writer's plain layout; every other
// spelling must still read exactly as the whole-document parse reads it.
TEST_CASE("cache_file_plain_host_sections_agree_with_whole_document_parse") {
  std::vector<CacheProfile> profiles;
  for (int64_t stepping = 0; stepping < 3; ++stepping) {
    CacheProfile profile = sample_profile("Alpha", 1 + stepping);
    profile.host.stepping = stepping;
    profiles.push_back(profile);
  }
  const std::string good = serialize_cache(profiles);
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
  };
  const std::string stepping = "stepping = 1\n";
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"as written", good},
      {"leading zero", replaced(stepping, "stepping = 01\n")},
      {"plus sign", replaced(stepping, "stepping = +1\n")},
      {"underscore", replaced(stepping, "stepping = 1_0\n")},
      {"hexadecimal", replaced(stepping, "stepping = 0x10\n")},
      {"largest integer", replaced(stepping, "stepping = 9223372036854775807\n")},
      {"negative", replaced(stepping, "stepping = -1\n")},
      {"float", replaced(stepping, "stepping = 1.0\n")},
      {"string", replaced(stepping, "stepping = \"1\"\n")},
      {"no spaces", replaced(stepping, "stepping=1\n")},
      {"comment", replaced(stepping, "stepping = 1 # c\n")},
      {"comment line", replaced(stepping, "# c\nstepping = 1\n")},
      {"repeated", replaced(stepping, "stepping = 1\nstepping = 2\n")},
      {"unknown field", replaced(stepping, "stepping = 1\nextra = 2\n")},
      {"missing", replaced(stepping, "")},
      {"quoted name", replaced(stepping, "\"stepping\" = 1\n")},
      {"escaped string", replaced("vendor = \"", "vendor = \"a\\\"b")},
      {"unicode string", replaced("vendor = \"", "vendor = \"\xc3\xa9")},
      {"literal string", replaced("architecture = \"x86_64\"", "architecture = 'x86_64'")},
      {"zero threads", replaced("effective_threads = 2\n", "effective_threads = 0\n")},
      {"too many threads", replaced("effective_threads = 2\n", "effective_threads = 1048577\n")},
      {"no features", replaced("features = [", "features = []\nfeaturez = [")},
      {"unsorted features", replaced("features = [", "features = [\"zz\", \"aa\", \"zz\", ")},
      {"spaced features", replaced("features = [", "features = [ ")},
      {"features not strings", replaced("features = [", "features = [1, ")},
      {"parks", replaced("idle_spin = true\n", "idle_spin = false\n")},
      {"no spin class", replaced("idle_spin = true\n", "")},
      {"spin class as a number", replaced("idle_spin = true\n", "idle_spin = 1\n")},
      {"spin class as a string", replaced("idle_spin = true\n", "idle_spin = \"true\"\n")},
      {"spin class capitalised", replaced("idle_spin = true\n", "idle_spin = True\n")},
  };
  for (const auto& entry : cases) {  // no structured binding: clang 14 cannot capture one in CAPTURE
    CAPTURE(entry.first);
    check_same_as_reference(entry.second);
  }
}

TEST_CASE("cache_file_sectioned_parse_agrees_with_whole_document_parse") {
  std::vector<CacheProfile> profiles;
  for (int64_t threads = 1; threads <= 6; ++threads) {
    profiles.push_back(sample_profile("Alpha", threads));
    profiles.push_back(sample_profile("Zeta", threads));
  }
  profiles[3].values = {{"s", std::string("[profile.host]\n[[profile]]")}, {"d", 0.5}};
  const std::string good = serialize_cache(profiles);
  const std::string profile_block = good.substr(good.find("\n[[profile]]"));
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"as written", good},
      {"comments and indented headers", "# c\n" + kHeader + "  [[profile]]  \n" +
                                            profile_block.substr(profile_block.find("library"))},
      {"crlf", [&] {
         std::string t;
         for (char c : good) t += c == '\n' ? std::string("\r\n") : std::string(1, c);
         return t;
       }()},
      {"section redefines a key", good + "\n[[profile]]\nfoo = 1\n[profile.foo]\nx = 1\n"},
      {"inline host and host section", good + "\n[[profile]]\nhost = {}\n[profile.host]\nvendor = \"x\"\n"},
      {"duplicate section", good + "\n[[profile]]\n[profile.values]\n[profile.values]\n"},
      {"dotted host key", good + "\n[[profile]]\nhost.vendor = \"x\"\n[profile.host]\n"},
      {"sub-sub table", good + "\n[profile.host.extra]\nx = 1\n"},
      {"multi-line array with a bracket line", good + "\n[[profile]]\nx = [\n[1],\n]\n"},
      {"multi-line string hiding a header", good + "\n[[profile]]\nx = \"\"\"\n[profile.host]\n\"\"\"\n"},
      {"unknown section", good + "\n[profile.extra]\nnote = \"kept out\"\n"},
      {"bad unknown section", good + "\n[profile.extra]\nnote = \n"},
      {"section before any profile", kHeader + "[profile.host]\nvendor = \"x\"\n"},
      {"root profile key", kHeader + "profile = []\n" + profile_block},
      {"missing values", good + "\n[[profile]]\nlibrary = \"l\"\n[profile.host]\narchitecture = \"a\"\n"},
      {"other root table", good + "\n[other]\nx = 1\n"},
      {"header only", kHeader},
      {"profiles without header", profile_block},
      {"empty", ""},
  };
  for (const auto& entry : cases) {
    const std::string& name = entry.first;  // not a structured binding: CAPTURE's lambda cannot take one on clang 14
    CAPTURE(name);
    check_same_as_reference(entry.second);
  }
}

TEST_CASE("cache_file_unreadable_profile_with_awkward_keys_is_rewritten_as_valid_toml") {
  // toml++'s formatter would write the key a'b unquoted; the writer must not produce a malformed file.
  const std::string text = kHeader +
                           "[[profile]]\nkernel = 42\n\"a'b\" = 1\nwhen = 1979-05-27\nat = 07:32:00.5\n"
                           "nested = { \"x y\" = [1, 2.5, \"s\"], \"q'\" = { inner = true } }\n"
                           "[profile.values]\n\"c'd\" = 2\n";
  const CacheFile file = parse_cache_text(text, "x");
  REQUIRE(file.status == FileStatus::loaded);
  REQUIRE(file.profiles.size() == 1);
  REQUIRE_FALSE(file.profiles[0].readable());
  const std::string written = serialize_cache(file.profiles);
  const CacheFile again = parse_cache_text(written, "y");
  REQUIRE(again.status == FileStatus::loaded);
  REQUIRE(again.profiles.size() == 1);
  CHECK(again.profiles[0].raw_toml == file.profiles[0].raw_toml);
  CHECK(serialize_cache(again.profiles) == written);
  CHECK(written.find("\"a'b\" = 1") != std::string::npos);
}

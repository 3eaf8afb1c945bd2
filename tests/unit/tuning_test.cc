#include <doctest/doctest.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "onnx_light/runtime/tuning_schema.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

TuningKey abs_key() {
  TuningKey key;
  key.kernel = "Abs";
  key.implementation = "portable";
  key.tuning_abi = 2;
  return key;
}

}  // namespace

TEST_CASE("tuning_key_string_and_identity") {
  TuningKey a = abs_key();
  CHECK(a.to_string() == "onnx_light/Abs/portable/float/CPU/abi2");
  TuningKey b = a;
  b.tuning_abi = 1;
  CHECK(a.same_identity(b));
  CHECK(a != b);
  b.element_type = 11;
  CHECK_FALSE(a.same_identity(b));
}

TEST_CASE("parameter_names_are_dotted_identifiers") {
  CHECK(is_valid_parameter_name("parallel.minimum_elements"));
  CHECK(is_valid_parameter_name("tile_m"));
  CHECK_FALSE(is_valid_parameter_name(""));
  CHECK_FALSE(is_valid_parameter_name("parallel."));
  CHECK_FALSE(is_valid_parameter_name(".x"));
  CHECK_FALSE(is_valid_parameter_name("a..b"));
  CHECK_FALSE(is_valid_parameter_name("1abc"));
  CHECK_FALSE(is_valid_parameter_name("a-b"));
}

TEST_CASE("parse_value_each_type") {
  CHECK(std::get<int64_t>(parse_value("16384", ValueType::int64, "f")) == 16384);
  CHECK(std::get<int64_t>(parse_value("16K", ValueType::int64, "f")) == 16384);
  CHECK(std::get<int64_t>(parse_value("1_000", ValueType::int64, "f")) == 1000);
  CHECK(std::get<int64_t>(parse_value("-3", ValueType::int64, "f")) == -3);
  CHECK(std::get<double>(parse_value("0.25", ValueType::float64, "f")) == 0.25);
  CHECK(std::get<bool>(parse_value("true", ValueType::boolean, "f")));
  CHECK_FALSE(std::get<bool>(parse_value("off", ValueType::boolean, "f")));
  CHECK(std::get<std::string>(parse_value("avx2", ValueType::string, "f")) == "avx2");
}

TEST_CASE("parse_value_rejects_garbage_naming_the_field") {
  try {
    parse_value("12x", ValueType::int64, "parallel.minimum_elements");
    FAIL("no error");
  } catch (const InvalidValueError& e) {
    CHECK(std::string(e.what()).find("parallel.minimum_elements") != std::string::npos);
  }
  CHECK_THROWS_AS(parse_value("", ValueType::int64, "f"), InvalidValueError);
  CHECK_THROWS_AS(parse_value("9223372036854775807K", ValueType::int64, "f"), InvalidValueError);
  CHECK_THROWS_AS(parse_value("maybe", ValueType::boolean, "f"), InvalidValueError);
  CHECK_THROWS_AS(parse_value("1.5.2", ValueType::float64, "f"), InvalidValueError);
}

TEST_CASE("schema_validation_reports_each_problem") {
  TuningSchema schema = parallel_threshold_schema(abs_key(), 32768);
  CHECK(schema.validate(schema.defaults()).empty());
  CHECK(schema.validate({{"parallel.minimum_elements", int64_t{1}}}).empty());
  auto below = schema.validate({{"parallel.minimum_elements", int64_t{0}}});
  REQUIRE(below.size() == 1);
  CHECK(below[0].find("minimum") != std::string::npos);
  auto wrong_type = schema.validate({{"parallel.minimum_elements", 3.5}});
  REQUIRE(wrong_type.size() == 1);
  CHECK(wrong_type[0].find("expected int64") != std::string::npos);
  auto unknown = schema.validate({{"parallel.minimum_elements", int64_t{5}}, {"tile.m", int64_t{4}}});
  REQUIRE(unknown.size() == 1);
  CHECK(unknown[0].find("tile.m") != std::string::npos);
  auto missing = schema.validate({});
  REQUIRE(missing.size() == 1);
  CHECK(missing[0].find("missing") != std::string::npos);
}

TEST_CASE("parameter_spec_allowed_set_and_finite") {
  ParameterSpec tile;
  tile.name = "gemm.tile_n";
  tile.type = ValueType::int64;
  tile.allowed = {int64_t{8}, int64_t{16}};
  CHECK(tile.validate(int64_t{16}).empty());
  CHECK(tile.validate(int64_t{12}).find("not one of") != std::string::npos);
  ParameterSpec ratio;
  ratio.name = "ratio";
  ratio.type = ValueType::float64;
  CHECK(ratio.validate(0.5).empty());
  CHECK_FALSE(ratio.validate(std::numeric_limits<double>::infinity()).empty());
  CHECK_FALSE(ratio.validate(std::numeric_limits<double>::quiet_NaN()).empty());
}

TEST_CASE("registry_generations_are_immutable_snapshots") {
  TuningRegistry registry;
  CHECK(registry.published_generation() == 0);
  auto before = registry.snapshot();
  uint64_t g1 = registry.publish({{abs_key(), 2, {{"parallel.minimum_elements", int64_t{100}}}}});
  CHECK(g1 == 1);
  CHECK(before->find(abs_key(), 2, true) == nullptr);  // an old snapshot never changes
  auto first = registry.snapshot();
  REQUIRE(first->find(abs_key(), 2, true) != nullptr);
  CHECK(first->find(abs_key(), 1, true) == nullptr);  // thread count is part of the identity
  registry.publish({{abs_key(), 2, {{"parallel.minimum_elements", int64_t{200}}}}});
  CHECK(std::get<int64_t>(first->find(abs_key(), 2, true)->at("parallel.minimum_elements")) == 100);
  CHECK(std::get<int64_t>(registry.snapshot()->find(abs_key(), 2, true)->at("parallel.minimum_elements")) == 200);
}

TEST_CASE("registry_spin_class_is_part_of_the_identity") {
  TuningRegistry registry;
  registry.publish({{abs_key(), 2, {{"parallel.minimum_elements", int64_t{100}}}, /*idle_spin=*/false}});
  CHECK(registry.snapshot()->find(abs_key(), 2, true) == nullptr);
  REQUIRE(registry.snapshot()->find(abs_key(), 2, false) != nullptr);
  // A merge of the other class keeps both; a republished class replaces only its own values.
  registry.publish({{abs_key(), 2, {{"parallel.minimum_elements", int64_t{7}}}, /*idle_spin=*/true}});
  registry.publish({{abs_key(), 2, {{"parallel.minimum_elements", int64_t{300}}}, /*idle_spin=*/false}});
  const auto snapshot = registry.snapshot();
  CHECK(snapshot->profiles().size() == 2);
  CHECK(std::get<int64_t>(snapshot->find(abs_key(), 2, true)->at("parallel.minimum_elements")) == 7);
  CHECK(std::get<int64_t>(snapshot->find(abs_key(), 2, false)->at("parallel.minimum_elements")) == 300);
}

TEST_CASE("registry_merge_keeps_others_replace_drops_them") {
  TuningRegistry registry;
  TuningKey neg = abs_key();
  neg.kernel = "Neg";
  registry.publish({{abs_key(), 2, {{"parallel.minimum_elements", int64_t{100}}}}});
  registry.publish({{neg, 2, {{"parallel.minimum_elements", int64_t{7}}}}}, PublishMode::merge);
  CHECK(registry.snapshot()->profiles().size() == 2);
  registry.publish({{neg, 2, {{"parallel.minimum_elements", int64_t{8}}}}}, PublishMode::replace);
  CHECK(registry.snapshot()->profiles().size() == 1);
  CHECK(registry.published_generation() == 3);
}

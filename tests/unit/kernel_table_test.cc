#include <doctest/doctest.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

class NullKernel final : public Kernel {
 public:
  void run(KernelExecution&) override {}
};

KernelDef def(std::string op, ElementType type, int since, int end, std::string implementation,
              bool needs_avx512 = false) {
  KernelDef d;
  d.op_type = std::move(op);
  d.element_type = type;
  d.since_version = since;
  d.end_version = end;
  d.implementation = implementation;
  TuningKey key;
  key.kernel = d.op_type;
  key.implementation = implementation;
  key.element_type = static_cast<int32_t>(type);
  d.schema = parallel_threshold_schema(key, 1024);
  d.create = [](const KernelCreateInfo&) { return std::make_unique<NullKernel>(); };
  if (needs_avx512)
    d.unavailable_reason = [](const CpuFeatures& f) { return f.avx512f ? std::string() : std::string("needs avx512f"); };
  return d;
}

}  // namespace

TEST_CASE("kernel_table_hit_within_opset_range") {
  KernelTable t;
  t.add(def("Foo", ElementType::float32, 6, 12, "portable"));
  t.add(def("Foo", ElementType::float32, 13, 1 << 30, "portable"));
  CpuFeatures none;
  auto c = t.choose("", "Foo", 12, ElementType::float32, none);
  REQUIRE(c.def != nullptr);
  CHECK(c.def->end_version == 12);
  c = t.choose("ai.onnx", "Foo", 18, ElementType::float32, none);
  REQUIRE(c.def != nullptr);
  CHECK(c.def->since_version == 13);
}

TEST_CASE("kernel_table_miss_unknown_op_names_it") {
  KernelTable t;
  t.add(def("Foo", ElementType::float32, 1, 1 << 30, "portable"));
  auto c = t.choose("", "Bar", 13, ElementType::float32, CpuFeatures{});
  CHECK(c.def == nullptr);
  CHECK(c.miss_reason.find("Bar") != std::string::npos);
}

TEST_CASE("kernel_table_miss_unsupported_type_lists_supported") {
  KernelTable t;
  t.add(def("Foo", ElementType::float32, 1, 1 << 30, "portable"));
  t.add(def("Foo", ElementType::int64, 1, 1 << 30, "portable"));
  auto c = t.choose("", "Foo", 13, ElementType::uint8, CpuFeatures{});
  CHECK(c.def == nullptr);
  CHECK(c.miss_reason.find("uint8") != std::string::npos);
  CHECK(c.miss_reason.find("float") != std::string::npos);
  CHECK(c.miss_reason.find("int64") != std::string::npos);
}

TEST_CASE("kernel_table_miss_opset_below_range") {
  KernelTable t;
  t.add(def("Foo", ElementType::float32, 13, 1 << 30, "portable"));
  auto c = t.choose("", "Foo", 11, ElementType::float32, CpuFeatures{});
  CHECK(c.def == nullptr);
  CHECK(c.miss_reason.find("opset 11") != std::string::npos);
}

TEST_CASE("kernel_table_prefers_first_available_and_records_skips") {
  KernelTable t;
  t.add(def("Foo", ElementType::float32, 1, 1 << 30, "avx512", true));
  t.add(def("Foo", ElementType::float32, 1, 1 << 30, "portable"));
  CpuFeatures plain;
  auto c = t.choose("", "Foo", 13, ElementType::float32, plain);
  REQUIRE(c.def != nullptr);
  CHECK(c.def->implementation == "portable");
  REQUIRE(c.skipped.size() == 1);
  CHECK(c.skipped[0] == "avx512: needs avx512f");
  CHECK(t.dispatched_implementation("Foo", ElementType::float32, plain) == "portable");
  CpuFeatures wide;
  wide.avx512f = true;
  CHECK(t.choose("", "Foo", 13, ElementType::float32, wide).def->implementation == "avx512");
  CHECK(t.dispatched_implementation("Foo", ElementType::float32, wide) == "avx512");
}

TEST_CASE("kernel_table_rejects_overlapping_ranges_of_one_implementation") {
  KernelTable t;
  t.add(def("Foo", ElementType::float32, 6, 13, "portable"));
  CHECK_THROWS_AS(t.add(def("Foo", ElementType::float32, 13, 20, "portable")), InvalidValueError);
}

TEST_CASE("kernel_table_find_by_key") {
  KernelTable t;
  t.add(def("Foo", ElementType::float32, 1, 1 << 30, "portable"));
  TuningKey key;
  key.kernel = "Foo";
  key.implementation = "portable";
  key.element_type = 1;
  CHECK(t.find_by_key(key) != nullptr);
  key.tuning_abi = 9;
  CHECK(t.find_by_key(key) == nullptr);
}

TEST_CASE("cpu_kernel_table_has_the_foundation_kernels") {
  const KernelTable& t = cpu_kernel_table();
  for (const char* op : {"Abs", "Relu", "Neg", "Identity", "Add", "Sub", "Mul", "Div"}) {
    CAPTURE(op);
    auto c = t.choose("", op, 18, ElementType::float32, host_cpu_features());
    REQUIRE(c.def != nullptr);
    CHECK(c.def->schema.find("parallel.minimum_elements") != nullptr);
  }
  // Abs covers every numeric type.
  for (ElementType type : {ElementType::float64, ElementType::float16, ElementType::bfloat16, ElementType::int8,
                           ElementType::int16, ElementType::int32, ElementType::int64, ElementType::uint8,
                           ElementType::uint16, ElementType::uint32, ElementType::uint64}) {
    CAPTURE(element_type_name(type));
    CHECK(t.choose("", "Abs", 13, type, host_cpu_features()).def != nullptr);
  }
  // The seed's Abs schema (ABI 2, default 32768), one ABI on since profiles record the spin class.
  auto abs = t.choose("", "Abs", 18, ElementType::float32, host_cpu_features());
  CHECK(abs.def->schema.key.tuning_abi == 3);
  CHECK(std::get<int64_t>(abs.def->schema.defaults().at("parallel.minimum_elements")) == 32768);
}

TEST_CASE("kernel_table_dispatches_a_kernel_of_another_domain_in_its_domain") {
  // The optimizer's fused kernels (FusedConv, ...) live in their own domain: dispatch must look
  // there, or every key selection by kernel name (set, list, load) misses them.
  KernelTable t;
  KernelDef fused = def("Fused", ElementType::float32, 1, 1 << 30, "portable");
  fused.domain = "test.fused";
  t.add(fused);
  CHECK(t.dispatched_implementation("Fused", ElementType::float32, CpuFeatures{}, "test.fused") == "portable");
  CHECK(t.dispatched_implementation("Fused", ElementType::float32, CpuFeatures{}).empty());
}

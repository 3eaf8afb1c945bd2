// The session's output buffer pool: dropped blocks come back and are reused, zeroing is honoured
// on reuse, the cache is bounded, blocks may outlive the pool, and drops from many threads are safe.
#include <doctest/doctest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "onnx_light/runtime/session.h"
#include "tensor_buffer_pool.h"
#include "test_models.h"

using namespace onnx_light::runtime;

TEST_CASE("dropped_block_is_reused_for_the_same_size") {
  auto pool = std::make_shared<TensorBufferPool>();
  const void* first = nullptr;
  {
    Tensor t = pool->make(ElementType::float32, {1000}, false);
    first = t.raw_data();
    CHECK(pool->cached_bytes() == 0);
  }
  CHECK(pool->cached_bytes() == Tensor::storage_bytes(ElementType::float32, {1000}));
  Tensor again = pool->make(ElementType::float32, {10, 100}, false);  // same bytes, other shape
  CHECK(again.raw_data() == first);
  CHECK(again.shape() == Shape{10, 100});
  CHECK(pool->cached_bytes() == 0);
  Tensor other = pool->make(ElementType::float32, {1001}, false);  // another size: a new block
  CHECK(other.raw_data() != first);
}

TEST_CASE("zero_requested_clears_a_reused_block") {
  auto pool = std::make_shared<TensorBufferPool>();
  {
    Tensor t = pool->make(ElementType::int32, {64}, false);
    std::memset(t.raw_data(), 0xab, t.byte_size());
  }
  Tensor z = pool->make(ElementType::int32, {64}, true);
  for (int64_t i = 0; i < 64; ++i) REQUIRE(z.data<int32_t>()[i] == 0);
}

TEST_CASE("blocks_past_the_cache_limit_go_back_to_the_os") {
  auto pool = std::make_shared<TensorBufferPool>(4096);
  { Tensor big = pool->make(ElementType::float32, {2048}, false); }  // 8 KiB > limit
  CHECK(pool->cached_bytes() == 0);
  { Tensor small = pool->make(ElementType::float32, {512}, false); }  // 2 KiB
  CHECK(pool->cached_bytes() == 2048);
}

TEST_CASE("tensor_outliving_its_pool_frees_its_own_block") {
  Tensor survivor;
  {
    auto pool = std::make_shared<TensorBufferPool>();
    survivor = pool->make(ElementType::float64, {33}, true);
  }
  survivor.data<double>()[32] = 1.5;  // still valid memory (ASan would report otherwise)
  CHECK(survivor.data<double>()[32] == 1.5);
}

TEST_CASE("tensors_dropped_on_many_threads_return_safely") {
  auto pool = std::make_shared<TensorBufferPool>();
  std::vector<Tensor> tensors;
  for (int i = 0; i < 64; ++i) tensors.push_back(pool->make(ElementType::uint8, {128 * (i % 4 + 1)}, false));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = t; i < 64; i += 4) tensors[static_cast<std::size_t>(i)] = Tensor();
    });
  for (auto& th : threads) th.join();
  CHECK(pool->cached_bytes() == 16 * (128 + 256 + 384 + 512));
}

TEST_CASE("session_output_dropped_by_the_caller_is_reused_next_run") {
  RuntimeSession session(onnx_light::test::parse(onnx_light::test::kSeedAbsModel));
  RuntimeContext context;
  context.set("x", Tensor(ElementType::float32, {4096}));
  session.run(context);
  const void* first = context.get("y").raw_data();
  context.erase("y");  // the caller lets go: "alloc" mode
  session.run(context);
  CHECK(context.get("y").raw_data() == first);
}

TEST_CASE("smaller_request_takes_the_best_fitting_block_up_to_twice_its_size") {
  auto pool = std::make_shared<TensorBufferPool>();
  const void* big = nullptr;
  const void* medium = nullptr;
  {
    Tensor a = pool->make(ElementType::float32, {4000}, false);
    Tensor b = pool->make(ElementType::float32, {1500}, false);
    big = a.raw_data();
    medium = b.raw_data();
  }
  // 1000 floats: the 1500-float block fits within 2x and is the smallest that holds it.
  Tensor small = pool->make(ElementType::float32, {1000}, false);
  CHECK(small.raw_data() == medium);
  // 1900 floats: only the 4000-float block holds it, and it is more than twice as large: new block.
  Tensor other = pool->make(ElementType::float32, {1900}, false);
  CHECK(other.raw_data() != big);
  CHECK(pool->cached_bytes() == Tensor::storage_bytes(ElementType::float32, {4000}));
}

TEST_CASE("outstanding_bytes_track_held_blocks_and_their_peak") {
  auto pool = std::make_shared<TensorBufferPool>();
  const std::size_t kb4 = Tensor::storage_bytes(ElementType::float32, {1024});
  {
    Tensor a = pool->make(ElementType::float32, {1024}, false);
    Tensor b = pool->make(ElementType::float32, {1024}, false);
    CHECK(pool->outstanding_bytes() == 2 * kb4);
  }
  CHECK(pool->outstanding_bytes() == 0);
  Tensor c = pool->make(ElementType::float32, {1024}, false);  // reused: outstanding 1, peak stays 2
  CHECK(pool->outstanding_bytes() == kb4);
  CHECK(pool->peak_outstanding_bytes() == 2 * kb4);
}

TEST_CASE("recycled_tensor_block_is_taken_again_and_foreign_tensors_are_only_released") {
  auto pool = std::make_shared<TensorBufferPool>();
  Tensor t = pool->make(ElementType::float32, {256}, false);
  const void* block = t.raw_data();
  pool->recycle(t);
  CHECK(t.empty());
  CHECK(pool->cached_bytes() == Tensor::storage_bytes(ElementType::float32, {256}));
  CHECK(pool->outstanding_bytes() == 0);
  Tensor again = pool->make(ElementType::float32, {16, 16}, false);
  CHECK(again.raw_data() == block);
  // Shared with another tensor: not recycled (the other one still reads it).
  Tensor shared = again;
  pool->recycle(again);
  CHECK(again.empty());
  CHECK(pool->cached_bytes() == 0);
  CHECK(shared.raw_data() == block);
  // Not made by this pool: released, not cached.
  Tensor own(ElementType::float32, {256});
  pool->recycle(own);
  CHECK(own.empty());
  CHECK(pool->cached_bytes() == 0);
}

// The load other processes put on the machine while a calibration measures (cpu_contention.h).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <filesystem>
#include <thread>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include "onnx_light/tune/cpu_contention.h"

using namespace onnx_light::tune;

TEST_CASE("proc_stat_busy_ticks_exclude_idle_and_iowait_and_count_steal") {
  // user nice system idle iowait irq softirq steal guest guest_nice
  CHECK(busy_ticks_from_proc_stat("cpu  100 2 30 5000 7 1 4 9 50 0\ncpu0 1 2 3 4\n") == 100 + 2 + 30 + 1 + 4 + 9);
  CHECK(busy_ticks_from_proc_stat("cpu 10 0 5 100") == 15);  // the four fields of old kernels
}

TEST_CASE("proc_stat_without_an_aggregate_line_or_with_bad_numbers_gives_nothing") {
  CHECK_FALSE(busy_ticks_from_proc_stat("").has_value());
  CHECK_FALSE(busy_ticks_from_proc_stat("cpu0 1 2 3 4").has_value());
  CHECK_FALSE(busy_ticks_from_proc_stat("intr 1 2 3 4").has_value());
  CHECK_FALSE(busy_ticks_from_proc_stat("cpu  1 2 3").has_value());
  CHECK_FALSE(busy_ticks_from_proc_stat("cpu  1 x 3 4").has_value());
  CHECK_FALSE(busy_ticks_from_proc_stat("cpu  1 -2 3 4").has_value());
  CHECK_FALSE(busy_ticks_from_proc_stat("cpu  99999999999999999999999 2 3 4").has_value());
}

TEST_CASE("contention_is_machine_busy_time_minus_our_own_over_the_window") {
  CpuTimes a{1'000'000'000, 5'000'000'000, 2'000'000'000, 2};
  CpuTimes b = a;
  b.wall_ns += 200'000'000;          // 200 ms
  b.self_ns += 300'000'000;          // we used 1.5 CPUs
  b.machine_busy_ns += 500'000'000;  // the machine 2.5 CPU-windows' worth... capped below
  auto c = contention_between(a, b);
  REQUIRE(c.has_value());
  CHECK(c->other_cpus == doctest::Approx(1.0));
  CHECK(c->window_ms == doctest::Approx(200.0));
  CHECK(c->cpus == 2);
  // Tick rounding on an idle machine: our own time above the machine's busy time reads as none.
  b.machine_busy_ns = a.machine_busy_ns + 250'000'000;
  CHECK(contention_between(a, b)->other_cpus == 0.0);
  // More than the machine has (counter glitches) is capped at its CPUs.
  b.machine_busy_ns = a.machine_busy_ns + 5'000'000'000;
  CHECK(contention_between(a, b)->other_cpus == 2.0);
}

TEST_CASE("contention_window_shorter_than_the_tick_resolution_allows_is_not_judged") {
  CpuTimes a{0, 0, 0, 2};
  CpuTimes b{kMinimumContentionWindowNs - 1, 40'000'000, 0, 2};
  CHECK_FALSE(contention_between(a, b).has_value());
  b.wall_ns = kMinimumContentionWindowNs;
  CHECK(contention_between(a, b).has_value());
}

TEST_CASE("contended_when_other_processes_leave_fewer_cpus_than_the_threads_by_half_a_cpu") {
  CHECK_FALSE(contended({0.15, 200, 2}, 2));  // an idle 2-vCPU VM
  CHECK_FALSE(contended({0.5, 200, 2}, 2));
  CHECK(contended({0.51, 200, 2}, 2));
  CHECK(contended({1.0, 200, 2}, 2));  // one busy loop
  // Many CPUs: other processes only matter once they eat into the ones the threads need.
  CHECK_FALSE(contended({6.0, 200, 8}, 2));
  CHECK(contended({6.6, 200, 8}, 2));
  // More threads than CPUs is the caller's choice, not load: judged against the CPUs there are.
  CHECK_FALSE(contended({0.2, 200, 2}, 8));
  CHECK(contended({0.8, 200, 2}, 8));
}

#if defined(__linux__)
TEST_CASE("linux_sample_counts_this_processes_own_cpu_time_in_the_machines_busy_time") {
  auto a = sample_cpu_times();
  REQUIRE(a.has_value());
  CHECK(a->cpus >= 1);
  CHECK(a->machine_busy_ns > 0);
  // Spin until 100 ms of our own CPU time have passed (however loaded the machine is, within 10 s):
  // the machine's busy time must have grown by at least as much, less /proc/stat's tick rounding
  // (up to a 10 ms tick per CPU at each of the two reads), or subtracting our own time would count
  // us as another process.
  std::atomic<uint64_t> sink{0};
  std::optional<CpuTimes> b;
  const auto start = std::chrono::steady_clock::now();
  do {
    for (int i = 0; i < 100000; ++i) sink.fetch_add(1, std::memory_order_relaxed);
    b = sample_cpu_times();
    REQUIRE(b.has_value());
  } while (b->self_ns - a->self_ns < 100'000'000 && std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  REQUIRE(b->self_ns - a->self_ns >= 100'000'000);
  CHECK(b->machine_busy_ns - a->machine_busy_ns >= (b->self_ns - a->self_ns) - 10'000'000 * (2 * b->cpus + 1));
  REQUIRE(contention_between(*a, *b).has_value());
  CHECK(contention_between(*a, *b)->other_cpus <= static_cast<double>(b->cpus));
}
#endif

TEST_CASE("schedstat_run_delay_is_the_second_field") {
  CHECK(run_delay_from_schedstat("2806856 7483027 2\n") == 7483027);
  CHECK(run_delay_from_schedstat("0 0 0") == 0);
  CHECK_FALSE(run_delay_from_schedstat("").has_value());
  CHECK_FALSE(run_delay_from_schedstat("12").has_value());
  CHECK_FALSE(run_delay_from_schedstat("12 x 3").has_value());
  CHECK_FALSE(run_delay_from_schedstat("12 -3 3").has_value());
  CHECK_FALSE(run_delay_from_schedstat("12 34x 3").has_value());
  CHECK_FALSE(run_delay_from_schedstat("1 99999999999999999999999 3").has_value());
}

TEST_CASE("window_under_50_ms_is_judged_by_our_threads_wait_for_a_cpu") {
  CpuTimes a{0, 0, 0, 2, 1'000'000};
  CpuTimes b{20'000'000, 40'000'000, 0, 2, 1'000'000 + 10'000'000};  // 20 ms, 10 ms waited
  auto c = contention_between(a, b);
  REQUIRE(c.has_value());
  CHECK_FALSE(c->other_cpus.has_value());  // ticks cannot tell over 20 ms
  CHECK(c->waiting_threads.value_or(-1) == doctest::Approx(0.5));
  CHECK(c->window_ms == doctest::Approx(20.0));
  CHECK(contended(*c, 2));
  CHECK(describe_load(*c) == "its threads waited for a CPU 0.50 thread-seconds per second, over 20 ms");
  b.self_wait_ns = a.self_wait_ns + 4'000'000;  // 0.2: below the limit
  CHECK_FALSE(contended(*contention_between(a, b), 2));
  // A sum that shrank (a thread exited with its delay): unknown, and then nothing to judge by.
  b.self_wait_ns = a.self_wait_ns - 1;
  CHECK_FALSE(contention_between(a, b).has_value());
  // Either gauge alone makes the window contended.
  CHECK(contended({0.0, 200, 2, kWaitingThreadsLimit}, 2));
  CHECK_FALSE(contended({0.0, 200, 2, kWaitingThreadsLimit - 0.01}, 2));
  CHECK(describe_load({1.0, 230, 2, 0.41}) ==
        "other processes kept 1.00 of 2 CPUs busy and its threads waited for a CPU 0.41 thread-seconds per second, over 230 ms");
}

#if defined(__linux__)
TEST_CASE("linux_two_threads_sharing_one_cpu_wait_for_it_about_half_the_time_each") {
  if (!std::filesystem::exists("/proc/self/schedstat")) {
    MESSAGE("this kernel keeps no schedstat (CONFIG_SCHED_INFO off): the wait gauge is unknown here");
    auto t = sample_cpu_times();
    REQUIRE(t.has_value());
    CHECK(t->self_wait_ns == -1);
    return;
  }
  // Both spinning threads pinned to the calling thread's current CPU: one runs while the other waits.
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  auto a = sample_cpu_times();
  REQUIRE(a.has_value());
  REQUIRE(a->self_wait_ns >= 0);
  std::atomic<bool> stop{false};
  auto spin = [&] {
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  };
  std::thread t1(spin), t2(spin);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto b = sample_cpu_times();  // while they still exist: their delay is in the sum
  stop = true;
  t1.join();
  t2.join();
  REQUIRE(b.has_value());
  auto c = contention_between(*a, *b);
  REQUIRE(c.has_value());
  REQUIRE(c->waiting_threads.has_value());
  // Two runnable threads on one CPU: about one thread waiting at any instant (0.5 + 0.5).
  CHECK(*c->waiting_threads >= 0.6);
  CHECK(contended(*c, 2));
}
#endif

#pragma once
// The floating-point mode of a session's float kernels: denormals flushed to zero (FTZ, results)
// and read as zero (DAZ, inputs), or kept as IEEE 754 says. Arithmetic on denormals takes a
// microcode assist of ~100 cycles per operation on x86, so one Conv over denormal weights can run
// 20x slower; ONNX Runtime and most inference runtimes flush them. The mode is set on every thread
// that runs a kernel (the caller and the pool's workers, per parallel region) and the thread's own
// mode is restored after, so a caller's numerics outside the session never change and every thread
// of a region computes the same bits.
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace onnx_light::runtime {

class ScopedDenormalMode {
 public:
  explicit ScopedDenormalMode(bool flush) noexcept {
#if defined(__x86_64__) || defined(__i386__)
    constexpr unsigned kFlushToZero = 0x8000;      // MXCSR.FTZ
    constexpr unsigned kDenormalsAreZero = 0x0040;  // MXCSR.DAZ
    saved_ = _mm_getcsr();
    const unsigned wanted =
        flush ? saved_ | kFlushToZero | kDenormalsAreZero : saved_ & ~(kFlushToZero | kDenormalsAreZero);
    if (wanted != saved_) {
      _mm_setcsr(wanted);
      changed_ = true;
    }
#else
    (void)flush;  // other architectures keep their default mode
#endif
  }
  ~ScopedDenormalMode() {
#if defined(__x86_64__) || defined(__i386__)
    if (changed_) _mm_setcsr(saved_);
#endif
  }
  ScopedDenormalMode(const ScopedDenormalMode&) = delete;
  ScopedDenormalMode& operator=(const ScopedDenormalMode&) = delete;

 private:
  unsigned saved_ = 0;
  bool changed_ = false;
};

}  // namespace onnx_light::runtime

#pragma once
// FunctionRef: a non-owning reference to a callable, for parameters that are called before the
// function returns (parallel_for's body). Unlike std::function it never allocates: a lambda with
// more than two pointers of captures made std::function allocate on every parallel region.
#include <memory>
#include <type_traits>
#include <utility>

namespace onnx_light::runtime {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  // Refers to `f`, which must outlive every call (a temporary lives to the end of the full
  // expression, so passing a lambda straight to a function taking a FunctionRef is fine).
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef> &&
                                                    std::is_invocable_r_v<R, F&, Args...>>>
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): converts like std::function
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::add_pointer_t<std::remove_reference_t<F>>>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace onnx_light::runtime

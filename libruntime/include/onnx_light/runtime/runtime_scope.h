#pragma once
// What the runtime leaves out on purpose: it runs inference over numeric and bool tensors. String
// tensors (StringNormalizer, TfIdfVectorizer, Cast to or from string) and the training operators
// of ai.onnx.preview.training (Adagrad, Adam, Momentum) are out of scope, and a user who meets one
// is told so (not merely that it is missing).
#include <string>
#include <string_view>

namespace onnx_light::runtime {

// "string tensors are out of scope for onnx-light (it runs numeric and bool tensors only)" for an
// operator outside the scope (by domain and op type), empty for any other operator.
std::string_view out_of_scope_reason(std::string_view domain, std::string_view op_type);

// The sentence for a value whose element type is string.
std::string_view string_tensors_out_of_scope();

// One line for `--version` and the docs: what is out of scope, with the operators it covers.
std::string out_of_scope_summary();

}  // namespace onnx_light::runtime

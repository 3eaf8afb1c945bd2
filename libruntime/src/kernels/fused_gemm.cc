// com.onnx_light FusedGemm and FusedMatMul (float32): the Gemm / MatMul kernel the table would
// choose, then the fused epilogue of kernels/epilogue.h over its output:
//   FusedGemm(A, B, C?, Z?)         Y = activation(Gemm(A, B, C) + Z)
//   FusedMatMul(A, B, bias?, Z?)    Y = activation(MatMul(A, B) + bias + Z), bias [N] on the last axis
// A lone Relu runs inside the packed kernels' store (Kernel::fuse_relu); everything else in one
// parallel pass over the output after the product, while it is still in cache per block.
// Also registers com.onnx_light LayerNormalization: the ai.onnx kernel for models importing an
// opset below 17, where the optimizer fuses a decomposed LayerNorm.
#include <fmt/format.h>

#include "kernels/epilogue.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

// Runs the inner kernel on the first `inputs` inputs of the fused node, remembering its output.
class InnerExecution final : public KernelExecution {
 public:
  InnerExecution(KernelExecution& outer, std::size_t inputs) : outer_(outer), inputs_(inputs) {}
  std::size_t input_count() const override { return std::min(inputs_, outer_.input_count()); }
  const Tensor* input(std::size_t index) const override { return index < inputs_ ? outer_.input(index) : nullptr; }
  std::size_t output_count() const override { return 1; }
  Tensor& output(std::size_t index, ElementType type, const Shape& shape) override {
    y_ = &outer_.output(index, type, shape);
    return *y_;
  }
  Tensor& output_for_overwrite(std::size_t index, ElementType type, const Shape& shape) override {
    y_ = &outer_.output_for_overwrite(index, type, shape);
    return *y_;
  }
  int threads() const override { return outer_.threads(); }
  int parallel_for(int64_t n, int64_t grain, int admitted, FunctionRef<void(int64_t, int64_t)> fn) override {
    return outer_.parallel_for(n, grain, admitted, fn);
  }
  const std::string& label() const override { return outer_.label(); }
  void note_threshold_work(int64_t work) const override { outer_.note_threshold_work(work); }
  Tensor* y() const { return y_; }

 private:
  KernelExecution& outer_;
  std::size_t inputs_;
  Tensor* y_ = nullptr;
};

class FusedProductKernel final : public Kernel {
 public:
  FusedProductKernel(const KernelCreateInfo& info, const KernelDef& inner, bool matmul) : matmul_(matmul) {
    epilogue_ = parse_epilogue_attributes(info);
    // The inner node: the product's own attributes and operands (Gemm keeps C, MatMul's bias is ours).
    inner_node_ = info.node;
    inner_node_.clear_attribute();
    for (const auto& a : info.node.attribute())
      if (a.name() != "activation" && a.name() != "activation_params" && a.name() != "post_affine")
        *inner_node_.add_attribute() = a;
    inner_node_.set_domain("");
    inner_node_.set_op_type(matmul ? "MatMul" : "Gemm");
    inner_inputs_ = matmul ? 2 : 3;
    inner_node_.clear_input();
    std::vector<ElementType> types;
    std::vector<const Tensor*> constants;
    for (std::size_t k = 0; k < inner_inputs_ && k < info.input_types.size(); ++k) {
      inner_node_.add_input(info.node.input(static_cast<int>(k)));
      types.push_back(info.input_types[k]);
      constants.push_back(info.constant_inputs[k]);
    }
    has_bias_ = matmul && info.input_types.size() > 2 && info.input_types[2] != ElementType::undefined;
    has_z_ = info.input_types.size() > 3 && info.input_types[3] != ElementType::undefined;
    KernelCreateInfo inner_info{inner_node_, 13, types, constants};
    inner_ = inner.create(inner_info);
    inner_->apply_tuning(inner.schema.defaults());
    if (epilogue_.is_relu_only() && !has_bias_ && !has_z_ && inner_->fuse_relu())
      epilogue_ = Epilogue{};
  }

  void apply_tuning(const TuningValues& values) override { inner_->apply_tuning(values); }
  std::string_view variant() const override { return inner_->variant(); }

  void run(KernelExecution& execution) override {
    InnerExecution inner(execution, inner_inputs_);
    inner_->run(inner);
    if (inner.y() == nullptr) return;
    Tensor& y = *inner.y();
    const int64_t n = y.element_count();
    if (n == 0 || (!has_bias_ && !has_z_ && epilogue_.is_identity())) return;
    const std::string& label = execution.label();
    const float* bias = nullptr;
    int64_t columns = y.rank() > 0 ? y.shape().back() : 1;
    if (has_bias_) {
      const Tensor& b = execution.required_input(2);
      if (b.element_type() != ElementType::float32 || b.element_count() != columns)
        throw InputError(fmt::format("{}: bias {} must hold the output's last dimension ({})", label, b.describe(), columns));
      bias = b.data<float>();
    }
    const float* z = nullptr;
    if (has_z_) {
      const Tensor& zt = execution.required_input(3);
      if (zt.element_type() != ElementType::float32 || zt.shape() != y.shape())
        throw InputError(fmt::format("{}: Z {} must have the output's shape {}", label, zt.describe(), shape_to_string(y.shape())));
      z = zt.data<float>();
    }
    if (columns == 0) return;
    float* out = y.data<float>();
    const int64_t rows = n / columns;
    // Rows of at least ~16K elements per task; small outputs stay on one thread.
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / columns);
    const int threads = n >= (int64_t{1} << 16) ? execution.threads() : 1;
    execution.parallel_for(rows, grain, threads, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        float* row = out + r * columns;
        if (bias != nullptr)
          for (int64_t j = 0; j < columns; ++j) row[j] += bias[j];
        if (z != nullptr) {
          const float* zr = z + r * columns;
          for (int64_t j = 0; j < columns; ++j) row[j] += zr[j];
        }
        apply_activation(epilogue_, row, columns);
      }
    });
  }

 private:
  bool matmul_;
  Epilogue epilogue_;
  onnx::NodeProto inner_node_;
  std::size_t inner_inputs_ = 3;
  bool has_bias_ = false, has_z_ = false;
  std::unique_ptr<Kernel> inner_;
};

}  // namespace

void register_fused_gemm_kernels(KernelTable& table) {
  // One twin per float32 Gemm / MatMul definition (avx512, avx2, portable), in the same order.
  const std::vector<KernelDef> defs = table.definitions();
  for (const KernelDef& def : defs) {
    if (!def.domain.empty() || def.element_type != ElementType::float32) continue;
    const bool matmul = def.op_type == "MatMul";
    if (!matmul && def.op_type != "Gemm" && def.op_type != "LayerNormalization") continue;
    KernelDef twin = def;
    twin.domain = std::string(kFusedDomain);
    twin.since_version = 1;
    twin.end_version = 1 << 30;
    twin.calibration_workload = nullptr;  // the calibration models are ai.onnx
    twin.calibration_elements = nullptr;
    if (def.op_type == "LayerNormalization") {
      twin.schema.key.kernel = "LayerNormalization";  // the same kernel: it shares its tuning
      twin.create = [inner = def.create](const KernelCreateInfo& info) {
        KernelCreateInfo as_17{info.node, 17, info.input_types, info.constant_inputs};
        return inner(as_17);
      };
      table.add(std::move(twin));
      continue;
    }
    twin.op_type = matmul ? "FusedMatMul" : "FusedGemm";
    twin.schema.key.kernel = twin.op_type;
    twin.create = [inner = def, matmul](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<FusedProductKernel>(info, inner, matmul);
    };
    table.add(std::move(twin));
  }
}

}  // namespace onnx_light::runtime::kernels

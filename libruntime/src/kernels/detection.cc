// NonMaxSuppression: per batch and class, boxes taken greedily by descending score (ties by box
// index), each suppressing the later ones that overlap it by more than iou_threshold; boxes with a
// score not above score_threshold are never taken. Output [selected, 3] int64 of (batch, class,
// box), by batch, class, then selection order.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/element_traits.h"
#include "kernels/elementwise.h"
#include "kernels/kernel_families.h"
#include "kernels/kernel_util.h"
#include "onnx_light/runtime/error.h"

namespace onnx_light::runtime::kernels {

namespace {

struct Box {
  float y1, x1, y2, x2;  // y1 <= y2, x1 <= x2
  float area() const { return (y2 - y1) * (x2 - x1); }
};

float iou(const Box& a, const Box& b) {
  const float h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const float w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (h <= 0 || w <= 0) return 0.0f;
  const float inter = h * w;
  const float uni = a.area() + b.area() - inter;
  return uni <= 0 ? 0.0f : inter / uni;
}

class NonMaxSuppressionKernel final : public Kernel {
 public:
  explicit NonMaxSuppressionKernel(const KernelCreateInfo& info) {
    check_attributes(info, {"center_point_box"});
    center_ = info.int_attribute("center_point_box", 0) != 0;
  }
  void run(KernelExecution& execution) override {
    const std::string& label = execution.label();
    const Tensor& boxes = execution.required_input(0);
    const Tensor& scores = execution.required_input(1);
    check_input_type(execution, 1, scores, ElementType::float32);
    if (boxes.rank() != 3 || boxes.shape()[2] != 4)
      throw InputError(fmt::format("{}: boxes must be [batches, boxes, 4], not {}", label, shape_to_string(boxes.shape())));
    const int64_t batches = boxes.shape()[0], count = boxes.shape()[1];
    if (scores.rank() != 3 || scores.shape()[0] != batches || scores.shape()[2] != count)
      throw InputError(fmt::format("{}: scores {} must be [{}, classes, {}] for boxes {}", label,
                                   shape_to_string(scores.shape()), batches, count, shape_to_string(boxes.shape())));
    const int64_t classes = scores.shape()[1];
    auto scalar = [&](std::size_t index, double fallback) {
      const Tensor* t = execution.input(index);
      if (t == nullptr || t->element_count() == 0) return fallback;
      if (t->element_count() != 1)
        throw InputError(fmt::format("{}: input {} must hold one value, not {}", label, index, shape_to_string(t->shape())));
      return read_as_double(*t, 0);
    };
    const auto max_output = static_cast<int64_t>(scalar(2, 0.0));
    const auto iou_threshold = static_cast<float>(scalar(3, 0.0));
    const Tensor* score_input = execution.input(4);
    const bool filter = score_input != nullptr && score_input->element_count() > 0;
    const auto score_threshold = static_cast<float>(scalar(4, 0.0));
    if (iou_threshold < 0.0f || iou_threshold > 1.0f)
      throw InputError(fmt::format("{}: iou_threshold {} is outside [0, 1]", label, iou_threshold));
    const float* b = boxes.data<float>();
    const float* s = scores.data<float>();
    std::vector<int64_t> selected;  // (batch, class, box) triples
    std::vector<Box> box(static_cast<std::size_t>(count));
    std::vector<int64_t> order;
    std::vector<int64_t> kept;
    for (int64_t batch = 0; batch < batches; ++batch) {
      for (int64_t i = 0; i < count; ++i) {
        const float* p = b + (batch * count + i) * 4;
        Box& r = box[static_cast<std::size_t>(i)];
        if (center_) {
          r = {p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
        } else {
          r = {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
        }
      }
      for (int64_t c = 0; c < classes; ++c) {
        const float* cs = s + (batch * classes + c) * count;
        order.clear();
        for (int64_t i = 0; i < count; ++i)
          if (!filter || cs[i] > score_threshold) order.push_back(i);
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return cs[x] > cs[y]; });
        kept.clear();
        for (int64_t i : order) {
          if (static_cast<int64_t>(kept.size()) >= max_output) break;
          bool suppressed = false;
          for (int64_t k : kept)
            if (iou(box[static_cast<std::size_t>(k)], box[static_cast<std::size_t>(i)]) > iou_threshold) {
              suppressed = true;
              break;
            }
          if (suppressed) continue;
          kept.push_back(i);
          selected.insert(selected.end(), {batch, c, i});
        }
      }
    }
    Tensor& y = checked_output(execution, 0, ElementType::int64, {static_cast<int64_t>(selected.size() / 3), 3}, false);
    std::copy(selected.begin(), selected.end(), y.data<int64_t>());
  }

 private:
  bool center_ = false;
};

}  // namespace

void register_detection_kernels(KernelTable& table) {
  KernelDef def = make_def("NonMaxSuppression", {10}, ElementType::float32,
                           parallel_threshold_schema(elementwise_key("NonMaxSuppression", ElementType::float32, 1),
                                                     kDefaultMinimumElements));
  def.create = [](const KernelCreateInfo& info) -> std::unique_ptr<Kernel> {
    return std::make_unique<NonMaxSuppressionKernel>(info);
  };
  def.output_types = [](const KernelCreateInfo&) { return std::vector<ElementType>{ElementType::int64}; };
  table.add(std::move(def));
}

}  // namespace onnx_light::runtime::kernels

// all: per-output-channel affine ops after a Conv or ConvTranspose folded into its weights and bias.
// BatchNormalization (inference): W' = W * s, B' = (B - mean) * s + bias with s = scale / sqrt(var + eps)
// (computed in double, rounded once); Mul by c: W' = W * c, B' = B * c; Add / Sub of c: B' = B +/- c.
// These change bits: the scaled weights round before the products are summed.
// Conv's W is [M, C/group, k...] (output channel on axis 0); ConvTranspose's is [C, M/group, k...],
// so its output channel is (input channel's group) * M/group + the index on axis 1.
#include <cmath>

#include "optimizer/batch_norm.h"
#include "optimizer/passes.h"

namespace onnx_light::runtime::optimizer {

namespace {

struct ConvWeights {
  Tensor w;                  // float32 [M, ...] (Conv) or [C, M/group, ...] (ConvTranspose)
  std::optional<Tensor> b;   // float32 [M], when the node has one
  int64_t channels = 0;      // output channels M
  bool transposed = false;   // ConvTranspose
  int64_t group_channels = 1, group_maps = 1, taps = 1;  // ConvTranspose: C/group, M/group, kernel positions

  // The output channel of W's element k.
  int64_t channel_of(int64_t k) const {
    if (!transposed) return k / (w.element_count() / channels);
    const int64_t input_channel = k / (group_maps * taps);
    return (input_channel / group_channels) * group_maps + (k / taps) % group_maps;
  }
};

// The constant float32 weights (and bias) of Conv or ConvTranspose node `conv`; nullopt when they
// are not constants.
std::optional<ConvWeights> conv_weights(GraphEdit& g, const onnx::NodeProto& conv) {
  const bool transposed = is_op(conv, "ConvTranspose");
  if (!(is_op(conv, "Conv") || transposed) || conv.input_size() < 2 || conv.output_size() != 1) return std::nullopt;
  auto w = g.constant(conv.input(1));
  if (!w || w->element_type() != ElementType::float32 || w->rank() < 3 || w->element_count() == 0) return std::nullopt;
  ConvWeights cw;
  cw.transposed = transposed;
  if (transposed) {
    const int64_t group = int_attribute(conv, "group", 1);
    if (group < 1 || w->shape()[0] % group != 0) return std::nullopt;  // the kernel reports it
    cw.group_channels = w->shape()[0] / group;
    cw.group_maps = w->shape()[1];
    cw.taps = w->element_count() / (w->shape()[0] * w->shape()[1]);
    cw.channels = cw.group_maps * group;
  } else {
    cw.channels = w->shape()[0];
  }
  cw.w = *w;
  if (conv.input_size() > 2 && !conv.input(2).empty()) {
    auto b = g.constant(conv.input(2));
    if (!b || b->element_type() != ElementType::float32 || b->element_count() != cw.channels) return std::nullopt;
    cw.b = *b;
  }
  return cw;
}

// Writes W' = W * scale[c] and B' = bias'[c] as new initializers and points the Conv at them.
void rewrite_conv(GraphEdit& g, int conv_index, const ConvWeights& cw, const std::vector<double>& scale,
                  const std::vector<double>& bias, bool has_bias) {
  auto& conv = g.node(conv_index);
  Tensor w(ElementType::float32, cw.w.shape());
  const float* src = cw.w.data<float>();
  float* dst = w.data<float>();
  for (int64_t k = 0; k < cw.w.element_count(); ++k)
    dst[k] = static_cast<float>(static_cast<double>(src[k]) * scale[static_cast<std::size_t>(cw.channel_of(k))]);
  const std::string w_name = g.fresh_name(conv.input(1));
  g.add_initializer(w, w_name);
  conv.set_input(1, w_name);
  if (!has_bias) return;
  Tensor b(ElementType::float32, {cw.channels});
  for (int64_t c = 0; c < cw.channels; ++c) b.data<float>()[c] = static_cast<float>(bias[static_cast<std::size_t>(c)]);
  const std::string b_name = g.fresh_name(conv.input(1) + "_bias");
  g.add_initializer(b, b_name);
  while (conv.input_size() < 3) conv.add_input();
  conv.set_input(2, b_name);
}

// c as one value per output channel of a rank-`rank` Conv output with `channels` channels:
// every dim 1 except (right-aligned) dim 1, which is 1 or `channels`. nullopt otherwise.
std::optional<std::vector<double>> per_channel(const Tensor& c, std::size_t rank, int64_t channels) {
  if (c.element_type() != ElementType::float32 || c.rank() > rank) return std::nullopt;
  bool varies = false;
  for (std::size_t d = 0; d < c.rank(); ++d) {
    const std::size_t out_dim = rank - c.rank() + d;
    const int64_t n = c.shape()[d];
    if (n == 1) continue;
    if (out_dim != 1 || n != channels) return std::nullopt;
    varies = true;
  }
  std::vector<double> v(static_cast<std::size_t>(channels));
  for (int64_t k = 0; k < channels; ++k) v[static_cast<std::size_t>(k)] = c.data<float>()[varies ? k : 0];
  return v;
}

}  // namespace

int64_t fold_conv_batch_norm(GraphEdit& g) {
  int64_t folded = 0;
  for (int i = 0; i < g.node_count(); ++i) {
    if (g.removed(i)) continue;
    const int p = batch_norm_producer(g, i);
    if (p < 0) continue;
    auto cw = conv_weights(g, g.node(p));
    if (!cw) continue;
    auto bn = batch_norm_affine(g, g.node(i), cw->channels);
    if (!bn) continue;
    std::vector<double> bias(bn->scale.size());
    for (std::size_t c = 0; c < bias.size(); ++c)
      bias[c] = (cw->b ? cw->b->data<float>()[c] : 0.0) * bn->scale[c] + bn->shift[c];
    rewrite_conv(g, p, *cw, bn->scale, bias, /*has_bias=*/true);
    g.node(p).set_output(0, g.node(i).output(0));
    g.remove(i);
    g.index();
    ++folded;
  }
  return folded;
}

int64_t fold_conv_mul_add(GraphEdit& g) {
  int64_t folded = 0;
  for (int i = 0; i < g.node_count(); ++i) {
    if (g.removed(i)) continue;
    const onnx::NodeProto& op = g.node(i);
    const bool mul = is_op(op, "Mul"), add = is_op(op, "Add"), sub = is_op(op, "Sub");
    if (!(mul || add || sub) || op.input_size() != 2 || op.output_size() != 1) continue;
    for (int side = 0; side < 2; ++side) {
      if (sub && side == 1) break;  // c - x negates the Conv: not a bias
      const std::string x = op.input(side), c_name = op.input(1 - side);
      const int p = g.producer(x);
      if (p < 0 || !g.sole_reader(x, i)) continue;
      auto cw = conv_weights(g, g.node(p));
      if (!cw) continue;
      auto c = g.constant(c_name);
      if (!c) continue;
      auto v = per_channel(*c, cw->w.rank(), cw->channels);
      if (!v) continue;
      std::vector<double> scale(v->size(), 1.0), bias(v->size(), 0.0);
      for (std::size_t k = 0; k < v->size(); ++k) {
        const double b = cw->b ? cw->b->data<float>()[k] : 0.0;
        if (mul) {
          scale[k] = (*v)[k];
          bias[k] = b * (*v)[k];
        } else {
          bias[k] = sub ? b - (*v)[k] : b + (*v)[k];
        }
      }
      rewrite_conv(g, p, *cw, scale, bias, /*has_bias=*/!mul || cw->b.has_value());
      g.node(p).set_output(0, op.output(0));
      g.remove(i);
      g.index();
      ++folded;
      break;
    }
  }
  return folded;
}

}  // namespace onnx_light::runtime::optimizer

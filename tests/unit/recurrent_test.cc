// LSTM, GRU and RNN held to a double-precision reference written here from the ONNX formulas, on
// the edges: each direction, sequence_lens shorter than the sequence (padded Y rows zero, Y_h the
// last valid step's state), initial states, clip, layout 1, peepholes, input_forget,
// linear_before_reset, every activation with activation_alpha/beta consumed in order, omitted
// outputs, float64. Results are bit-identical on 1 and 3 threads with parallel thresholds at 1;
// invalid attributes and operands are refused with errors naming the node.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tuning_registry.h"

using namespace onnx_light;
using namespace onnx_light::runtime;

namespace {

struct Act {
  std::string name;
  int takes = 0;  // how many of alpha, beta the function takes (the test lists only those)
  double alpha = 0, beta = 0;
};

// alpha, beta and clip are float attributes: the reference uses the values the model carries.
double rounded_to_float(double v) { return static_cast<double>(static_cast<float>(v)); }

double apply(const Act& act, double x) {
  struct {
    double alpha, beta;
  } a{rounded_to_float(act.alpha), rounded_to_float(act.beta)};
  const std::string& n = act.name;
  if (n == "Relu") return std::max(0.0, x);
  if (n == "Tanh") return std::tanh(x);
  if (n == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (n == "Affine") return a.alpha * x + a.beta;
  if (n == "LeakyRelu") return x < 0 ? a.alpha * x : x;
  if (n == "ThresholdedRelu") return x > a.alpha ? x : 0.0;
  if (n == "ScaledTanh") return a.alpha * std::tanh(a.beta * x);
  if (n == "HardSigmoid") return std::clamp(a.alpha * x + a.beta, 0.0, 1.0);
  if (n == "Elu") return x < 0 ? a.alpha * (std::exp(x) - 1.0) : x;
  if (n == "Softsign") return x / (1.0 + std::fabs(x));
  if (n == "Softplus") return std::log(1.0 + std::exp(x));
  FAIL("unknown activation " << n);
  return 0;
}

struct RecurrentCase {
  std::string name;
  std::string op;  // LSTM, GRU, RNN
  std::string direction = "forward";
  int64_t seq = 3, batch = 2, input = 3, hidden = 4;
  int64_t layout = 0;
  bool bias = false, initial = false, peepholes = false;
  std::vector<int32_t> lens;  // empty: no sequence_lens
  double clip = 0;            // 0: none
  bool input_forget = false, linear_before_reset = false;
  std::vector<Act> acts;  // empty: the defaults
};

int64_t gates(const RecurrentCase& c) { return c.op == "LSTM" ? 4 : c.op == "GRU" ? 3 : 1; }
int64_t dirs(const RecurrentCase& c) { return c.direction == "bidirectional" ? 2 : 1; }

std::vector<Act> recurrent_activations(const RecurrentCase& c) {
  std::vector<Act> per;
  if (!c.acts.empty()) return c.acts;
  if (c.op == "LSTM") per = {{"Sigmoid"}, {"Tanh"}, {"Tanh"}};
  else if (c.op == "GRU") per = {{"Sigmoid"}, {"Tanh"}};
  else per = {{"Tanh"}};
  std::vector<Act> all;
  for (int64_t d = 0; d < dirs(c); ++d) all.insert(all.end(), per.begin(), per.end());
  return all;
}

struct RecurrentOperands {
  Tensor x, w, r, b, lens, h0, c0, p;
};

RecurrentOperands recurrent_operands(const RecurrentCase& c, ElementType type) {
  const int64_t D = dirs(c), G = gates(c), H = c.hidden;
  const Shape state = c.layout == 0 ? Shape{D, c.batch, H} : Shape{c.batch, D, H};
  RecurrentOperands o;
  o.x = random_tensor(type, c.layout == 0 ? Shape{c.seq, c.batch, c.input} : Shape{c.batch, c.seq, c.input}, 11);
  o.w = random_tensor(type, {D, G * H, c.input}, 12);
  o.r = random_tensor(type, {D, G * H, H}, 13);
  o.b = random_tensor(type, {D, 2 * G * H}, 14);
  o.h0 = random_tensor(type, state, 15);
  o.c0 = random_tensor(type, state, 16);
  o.p = random_tensor(type, {D, 3 * H}, 17);
  if (!c.lens.empty()) {
    o.lens = Tensor(ElementType::int32, {c.batch});
    std::copy(c.lens.begin(), c.lens.end(), o.lens.data<int32_t>());
  }
  return o;
}

double at(const Tensor& t, int64_t i) {
  return t.element_type() == ElementType::float64 ? t.data<double>()[i] : static_cast<double>(t.data<float>()[i]);
}

struct RecurrentExpected {
  std::vector<double> y, y_h, y_c;
};

// The ONNX formulas, one (direction, batch, step) at a time in double.
RecurrentExpected recurrent_reference(const RecurrentCase& c, const RecurrentOperands& o) {
  const int64_t D = dirs(c), G = gates(c), H = c.hidden, I = c.input, S = c.seq, B = c.batch;
  const std::vector<Act> acts = recurrent_activations(c);
  const std::size_t per = acts.size() / static_cast<std::size_t>(D);
  RecurrentExpected e;
  e.y.assign(static_cast<std::size_t>(S * D * B * H), 0.0);
  e.y_h.assign(static_cast<std::size_t>(D * B * H), 0.0);
  e.y_c = e.y_h;
  const double limit = rounded_to_float(c.clip);
  auto clip = [&](double v) { return c.clip > 0 ? std::clamp(v, -limit, limit) : v; };
  auto x_at = [&](int64_t t, int64_t b, int64_t k) { return at(o.x, (c.layout == 0 ? t * B + b : b * S + t) * I + k); };
  auto state_index = [&](int64_t d, int64_t b) { return (c.layout == 0 ? d * B + b : b * D + d) * H; };
  auto y_index = [&](int64_t t, int64_t d, int64_t b) {
    return (c.layout == 0 ? (t * D + d) * B + b : (b * S + t) * D + d) * H;
  };
  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = c.direction == "reverse" || d == 1;
    const Act* f = &acts[static_cast<std::size_t>(d) * per];
    auto wb = [&](int64_t g) { return c.bias ? at(o.b, d * 2 * G * H + g) : 0.0; };
    auto rb = [&](int64_t g) { return c.bias ? at(o.b, d * 2 * G * H + G * H + g) : 0.0; };
    auto xw = [&](int64_t t, int64_t b, int64_t g) {
      double s = 0;
      for (int64_t k = 0; k < I; ++k) s += x_at(t, b, k) * at(o.w, (d * G * H + g) * I + k);
      return s;
    };
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> h(static_cast<std::size_t>(H), 0.0), cell(static_cast<std::size_t>(H), 0.0);
      if (c.initial)
        for (int64_t j = 0; j < H; ++j) {
          h[static_cast<std::size_t>(j)] = at(o.h0, state_index(d, b) + j);
          cell[static_cast<std::size_t>(j)] = at(o.c0, state_index(d, b) + j);
        }
      auto hr = [&](const std::vector<double>& v, int64_t g) {
        double s = 0;
        for (int64_t k = 0; k < H; ++k) s += v[static_cast<std::size_t>(k)] * at(o.r, (d * G * H + g) * H + k);
        return s;
      };
      const int64_t len = c.lens.empty() ? S : c.lens[static_cast<std::size_t>(b)];
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = reverse ? len - 1 - s : s;
        std::vector<double> next(static_cast<std::size_t>(H)), next_c(static_cast<std::size_t>(H));
        for (int64_t j = 0; j < H; ++j) {
          const auto J = static_cast<std::size_t>(j);
          auto pre = [&](int64_t g) { return xw(t, b, g) + hr(h, g) + wb(g) + rb(g); };
          if (c.op == "LSTM") {
            const double pi = c.peepholes ? at(o.p, d * 3 * H + j) : 0, po = c.peepholes ? at(o.p, d * 3 * H + H + j) : 0,
                         pf = c.peepholes ? at(o.p, d * 3 * H + 2 * H + j) : 0;
            const double i = apply(f[0], clip(pre(j) + pi * cell[J]));
            const double fg = c.input_forget ? 1.0 - i : apply(f[0], clip(pre(2 * H + j) + pf * cell[J]));
            const double g = apply(f[1], clip(pre(3 * H + j)));
            next_c[J] = fg * cell[J] + i * g;
            const double og = apply(f[0], clip(pre(H + j) + po * next_c[J]));
            next[J] = og * apply(f[2], next_c[J]);
          } else if (c.op == "GRU") {
            const double z = apply(f[0], clip(pre(j)));
            double hh;
            if (c.linear_before_reset) {
              const double r = apply(f[0], clip(pre(H + j)));
              hh = xw(t, b, 2 * H + j) + wb(2 * H + j) + r * (hr(h, 2 * H + j) + rb(2 * H + j));
            } else {
              std::vector<double> rh(static_cast<std::size_t>(H));
              for (int64_t k = 0; k < H; ++k)
                rh[static_cast<std::size_t>(k)] = apply(f[0], clip(pre(H + k))) * h[static_cast<std::size_t>(k)];
              hh = xw(t, b, 2 * H + j) + hr(rh, 2 * H + j) + wb(2 * H + j) + rb(2 * H + j);
            }
            next[J] = (1.0 - z) * apply(f[1], clip(hh)) + z * h[J];
          } else {
            next[J] = apply(f[0], clip(pre(j)));
          }
        }
        h = next;
        if (c.op == "LSTM") cell = next_c;
        for (int64_t j = 0; j < H; ++j) e.y[static_cast<std::size_t>(y_index(t, d, b) + j)] = h[static_cast<std::size_t>(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        e.y_h[static_cast<std::size_t>(state_index(d, b) + j)] = h[static_cast<std::size_t>(j)];
        e.y_c[static_cast<std::size_t>(state_index(d, b) + j)] = cell[static_cast<std::size_t>(j)];
      }
    }
  }
  return e;
}

void add_input(onnx::GraphProto& g, const std::string& name, const Tensor& t) {
  auto* v = g.add_input();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(t.element_type()));
  for (int64_t dim : t.shape()) tt->mutable_shape()->add_dim()->set_dim_value(dim);
}

// One recurrent node named "rec" over the case's operands; `outputs` names Y, Y_h (, Y_c), "" omitted.
Model model(const RecurrentCase& c, const RecurrentOperands& o, const std::vector<std::string>& outputs, const std::string& extra_attr = "",
            int64_t extra_value = 0) {
  onnx::ModelProto proto;
  proto.set_ir_version(8);
  auto* opset = proto.add_opset_import();
  opset->set_domain("");
  opset->set_version(14);
  auto* g = proto.mutable_graph();
  g->set_name("g");
  auto* node = g->add_node();
  node->set_name("rec");
  node->set_op_type(c.op);
  std::vector<std::pair<std::string, const Tensor*>> inputs = {{"x", &o.x}, {"w", &o.w}, {"r", &o.r}};
  inputs.push_back({c.bias ? "b" : "", &o.b});
  inputs.push_back({c.lens.empty() ? "" : "lens", &o.lens});
  inputs.push_back({c.initial ? "h0" : "", &o.h0});
  if (c.op == "LSTM") {
    inputs.push_back({c.initial ? "c0" : "", &o.c0});
    inputs.push_back({c.peepholes ? "p" : "", &o.p});
  }
  while (!inputs.empty() && inputs.back().first.empty()) inputs.pop_back();
  for (const auto& [name, t] : inputs) {
    node->add_input(name);
    if (!name.empty()) add_input(*g, name, *t);
  }
  for (const std::string& name : outputs) {
    node->add_output(name);
    if (name.empty()) continue;
    auto* v = g->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int>(o.x.element_type()));
  }
  auto attr_int = [&](const std::string& name, int64_t value) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  };
  attr_int("hidden_size", c.hidden);
  if (c.layout != 0) attr_int("layout", c.layout);
  if (c.input_forget) attr_int("input_forget", 1);
  if (c.linear_before_reset) attr_int("linear_before_reset", 1);
  if (!extra_attr.empty()) attr_int(extra_attr, extra_value);
  auto* dir = node->add_attribute();
  dir->set_name("direction");
  dir->set_type(onnx::AttributeProto::STRING);
  dir->set_s(c.direction);
  if (c.clip > 0) {
    auto* a = node->add_attribute();
    a->set_name("clip");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(c.clip));
  }
  if (!c.acts.empty()) {
    auto* names = node->add_attribute();
    names->set_name("activations");
    names->set_type(onnx::AttributeProto::STRINGS);
    auto* alpha = node->add_attribute();
    alpha->set_name("activation_alpha");
    alpha->set_type(onnx::AttributeProto::FLOATS);
    auto* beta = node->add_attribute();
    beta->set_name("activation_beta");
    beta->set_type(onnx::AttributeProto::FLOATS);
    for (const Act& a : c.acts) {
      names->add_strings(a.name);
      if (a.takes >= 1) alpha->add_floats(static_cast<float>(a.alpha));
      if (a.takes >= 2) beta->add_floats(static_cast<float>(a.beta));
    }
  }
  return model_from_proto(std::move(proto));
}

// Parallel from the smallest product, for every recurrent kernel.
std::unique_ptr<TuningRegistry> eager_recurrent_registry() {
  auto registry = std::make_unique<TuningRegistry>();
  std::vector<PublishedProfile> profiles;
  for (const auto& def : cpu_kernel_table().definitions()) {
    if (def.op_type != "LSTM" && def.op_type != "GRU" && def.op_type != "RNN") continue;
    TuningValues values = def.schema.defaults();
    values["parallel.minimum_macs"] = int64_t{1};
    for (int threads = 1; threads <= 3; ++threads) profiles.push_back({def.schema.key, threads, values});
  }
  registry->publish(std::move(profiles));
  return registry;
}

struct Results {
  Tensor y, y_h, y_c;
};

Results run_recurrent(const RecurrentCase& c, const RecurrentOperands& o, int threads, TuningRegistry* registry,
            std::vector<std::string> outputs = {}) {
  if (outputs.empty()) outputs = c.op == "LSTM" ? std::vector<std::string>{"y", "yh", "yc"} : std::vector<std::string>{"y", "yh"};
  RuntimeSessionOptions options;
  options.parameters = RuntimeParameters(threads);
  options.registry = registry;
  RuntimeSession session(model(c, o, outputs), options);
  RuntimeContext context;
  context.set("x", o.x);
  context.set("w", o.w);
  context.set("r", o.r);
  if (c.bias) context.set("b", o.b);
  if (!c.lens.empty()) context.set("lens", o.lens);
  if (c.initial) {
    context.set("h0", o.h0);
    if (c.op == "LSTM") context.set("c0", o.c0);
  }
  if (c.peepholes) context.set("p", o.p);
  session.run(context);
  Results r;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].empty()) continue;
    (i == 0 ? r.y : i == 1 ? r.y_h : r.y_c) = context.get(outputs[i]);
  }
  return r;
}

double worst(const Tensor& got, const std::vector<double>& exact) {
  REQUIRE(static_cast<std::size_t>(got.element_count()) == exact.size());
  double w = 0;
  for (int64_t i = 0; i < got.element_count(); ++i) w = std::max(w, std::fabs(at(got, i) - exact[static_cast<std::size_t>(i)]));
  return w;
}

bool same_recurrent_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), static_cast<std::size_t>(a.byte_size())) == 0;
}

Shape recurrent_y_shape(const RecurrentCase& c) {
  return c.layout == 0 ? Shape{c.seq, dirs(c), c.batch, c.hidden} : Shape{c.batch, c.seq, dirs(c), c.hidden};
}

std::vector<RecurrentCase> recurrent_cases() {
  std::vector<RecurrentCase> all;
  auto add = [&](RecurrentCase c) { all.push_back(std::move(c)); };
  RecurrentCase c;
  // LSTM
  c = {"lstm forward defaults", "LSTM"};
  add(c);
  c = {"lstm reverse, bias, initial states, peepholes, sequence_lens shorter", "LSTM", "reverse"};
  c.bias = c.initial = c.peepholes = true;
  c.seq = 4;
  c.lens = {2, 4};
  add(c);
  c = {"lstm bidirectional, layout 1, sequence_lens, clip, input_forget", "LSTM", "bidirectional"};
  c.layout = 1;
  c.bias = c.initial = true;
  c.lens = {3, 1};
  c.clip = 0.3;
  c.input_forget = true;
  add(c);
  c = {"lstm bidirectional, six non-default activations with alpha and beta", "LSTM", "bidirectional"};
  c.bias = c.peepholes = true;
  c.acts = {{"HardSigmoid", 2, 0.3, 0.4}, {"ScaledTanh", 2, 0.8, 1.2}, {"Affine", 2, 0.7, 0.1},
            {"Sigmoid"},                  {"LeakyRelu", 1, 0.05},      {"Softsign"}};
  add(c);
  c = {"lstm input wider than hidden, batch 5, 9 steps (more than eight partial sums)", "LSTM", "forward"};
  c.seq = 9, c.batch = 5, c.input = 19, c.hidden = 11;
  c.bias = c.initial = true;
  add(c);
  c = {"lstm empty sequence: Y empty, Y_h and Y_c the initial states", "LSTM", "bidirectional"};
  c.seq = 0;
  c.initial = true;
  add(c);
  // GRU
  c = {"gru forward, bias, initial h", "GRU"};
  c.bias = c.initial = true;
  add(c);
  c = {"gru bidirectional, linear_before_reset, sequence_lens, layout 1", "GRU", "bidirectional"};
  c.bias = c.initial = c.linear_before_reset = true;
  c.lens = {1, 3};
  c.layout = 1;
  add(c);
  c = {"gru reverse, clip, HardSigmoid and Softplus, no bias", "GRU", "reverse"};
  c.clip = 0.5;
  c.lens = {0, 2};  // an empty sequence: Y zero, Y_h the (zero) initial state
  c.acts = {{"HardSigmoid", 2, 0.25, 0.45}, {"Softplus"}};
  add(c);
  c = {"gru forward, linear_before_reset without bias, Elu", "GRU"};
  c.linear_before_reset = true;
  c.initial = true;
  c.acts = {{"Sigmoid"}, {"Elu", 1, 0.6}};
  add(c);
  // RNN
  c = {"rnn forward defaults", "RNN"};
  add(c);
  c = {"rnn bidirectional, bias, initial h, sequence_lens, Relu and ThresholdedRelu", "RNN", "bidirectional"};
  c.bias = c.initial = true;
  c.lens = {3, 2};
  c.acts = {{"Relu"}, {"ThresholdedRelu", 1, 0.1}};
  add(c);
  c = {"rnn reverse, layout 1, clip, Tanh", "RNN", "reverse"};
  c.layout = 1;
  c.clip = 0.2;
  c.bias = true;
  c.acts = {{"Tanh"}};
  add(c);
  return all;
}

}  // namespace

TEST_CASE("recurrent_matches_a_double_reference_on_every_edge_and_ignores_threads") {
  auto eager = eager_recurrent_registry();
  for (const RecurrentCase& c : recurrent_cases()) {
    CAPTURE(c.name);
    const RecurrentOperands o = recurrent_operands(c, ElementType::float32);
    const RecurrentExpected e = recurrent_reference(c, o);
    const Results got = run_recurrent(c, o, 1, nullptr);
    CHECK(got.y.shape() == recurrent_y_shape(c));
    const double tolerance = 2e-5 * static_cast<double>(c.input + c.hidden);
    CHECK(worst(got.y, e.y) <= tolerance);
    CHECK(worst(got.y_h, e.y_h) <= tolerance);
    if (c.op == "LSTM") CHECK(worst(got.y_c, e.y_c) <= tolerance);
    // Padded steps are exactly zero.
    for (std::size_t i = 0; i < e.y.size(); ++i)
      if (e.y[i] == 0.0) CHECK(at(got.y, static_cast<int64_t>(i)) == 0.0);
    for (int threads : {1, 3}) {
      CAPTURE(threads);
      const Results parallel = run_recurrent(c, o, threads, eager.get());
      CHECK(same_recurrent_bits(parallel.y, got.y));
      CHECK(same_recurrent_bits(parallel.y_h, got.y_h));
      if (c.op == "LSTM") CHECK(same_recurrent_bits(parallel.y_c, got.y_c));
    }
  }
}

TEST_CASE("recurrent_float64_follows_the_reference_closely") {
  for (const RecurrentCase& c : recurrent_cases()) {
    CAPTURE(c.name);
    const RecurrentOperands o = recurrent_operands(c, ElementType::float64);
    const RecurrentExpected e = recurrent_reference(c, o);
    const Results got = run_recurrent(c, o, 1, nullptr);
    CHECK(worst(got.y, e.y) <= 1e-12);
    CHECK(worst(got.y_h, e.y_h) <= 1e-12);
  }
}

TEST_CASE("recurrent_omitted_outputs_leave_the_others_unchanged") {
  RecurrentCase c = recurrent_cases()[1];  // LSTM reverse, sequence_lens
  const RecurrentOperands o = recurrent_operands(c, ElementType::float32);
  const Results all = run_recurrent(c, o, 1, nullptr);
  const Results only_c = run_recurrent(c, o, 1, nullptr, {"", "", "yc"});
  CHECK(same_recurrent_bits(only_c.y_c, all.y_c));
  const Results only_h = run_recurrent(c, o, 1, nullptr, {"", "yh"});
  CHECK(same_recurrent_bits(only_h.y_h, all.y_h));
  const Results only_y = run_recurrent(c, o, 1, nullptr, {"y"});
  CHECK(same_recurrent_bits(only_y.y, all.y));
}

TEST_CASE("recurrent_invalid_attributes_and_operands_give_errors_naming_the_node") {
  auto refused = [](RecurrentCase c, const std::string& needle, const std::string& extra = "", int64_t value = 0,
                    Shape w_shape = {}) {
    CAPTURE(c.name);
    std::string message;
    try {
      RecurrentOperands o = recurrent_operands(c, ElementType::float32);
      if (!w_shape.empty()) o.w = random_tensor(ElementType::float32, w_shape, 3);
      RuntimeSessionOptions options;
      options.parameters = RuntimeParameters(1);
      RuntimeSession session(model(c, o, {"y"}, extra, value), options);
      RuntimeContext context;
      context.set("x", o.x);
      context.set("w", o.w);
      context.set("r", o.r);
      if (!c.lens.empty()) context.set("lens", o.lens);
      session.run(context);
    } catch (const Error& e) {
      message = e.what();
    }
    CAPTURE(message);
    CHECK(message.find(c.op + " node 'rec'") != std::string::npos);
    CHECK(message.find(needle) != std::string::npos);
  };
  RecurrentCase c{"bad direction", "LSTM", "sideways"};
  refused(c, "direction");
  c = {"unknown activation", "GRU"};
  c.acts = {{"Sigmoid"}, {"Swish"}};
  refused(c, "Swish");
  c = {"activation count", "RNN", "bidirectional"};
  c.acts = {{"Tanh"}, {"Tanh"}, {"Tanh"}};
  refused(c, "activations");
  c = {"layout 2", "LSTM"};
  refused(c, "layout", "layout", 2);
  c = {"linear_before_reset on LSTM", "LSTM"};
  refused(c, "linear_before_reset", "linear_before_reset", 1);
  c = {"W rows disagree with hidden_size", "GRU"};
  refused(c, "W", "", 0, {1, 5, 3});
  c = {"sequence_lens past the sequence", "RNN"};
  c.lens = {1, 4};
  refused(c, "sequence_lens[1] = 4");
}

TEST_CASE("recurrent_constant_weights_packed_at_creation_give_the_bits_of_weights_fed_per_run") {
  // hidden 4, input 3: W [1,16,3], R [1,16,4] as Constant nodes (packed once) and as graph inputs
  // (packed on every run, and again after their values change).
  std::vector<float> w(48), r(64), x(2 * 1 * 3);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>(static_cast<int>(i % 11) - 5);
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = 0.03f * static_cast<float>(static_cast<int>(i % 7) - 3);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * static_cast<float>(i) - 1.0f;
  auto list = [](const std::vector<float>& v) {
    std::string s;
    for (float f : v) s += (s.empty() ? "" : ", ") + fmt::format("{}", f);
    return s;
  };
  const std::string header = "<ir_version: 8, opset_import: [\"\" : 14]>\n";
  const std::string constant = header + "g (float[2,1,3] x) => (float[2,1,1,4] y) {\n w = Constant <value = float[1,16,3] {" +
                               list(w) + "}> ()\n r = Constant <value = float[1,16,4] {" + list(r) +
                               "}> ()\n y = LSTM <hidden_size = 4> (x, w, r)\n}";
  const std::string fed = header + "g (float[2,1,3] x, float[1,16,3] w, float[1,16,4] r) => (float[2,1,1,4] y) {\n"
                                   " y = LSTM <hidden_size = 4> (x, w, r)\n}";
  RuntimeSession a(parse_model_text(constant, "<constant>"), RuntimeSessionOptions{});
  RuntimeSession b(parse_model_text(fed, "<fed>"), RuntimeSessionOptions{});
  auto tensor_of = [](const Shape& s, const std::vector<float>& v) {
    Tensor t(ElementType::float32, s);
    std::copy(v.begin(), v.end(), t.data<float>());
    return t;
  };
  RuntimeContext ca, cb;
  ca.set("x", tensor_of({2, 1, 3}, x));
  cb.set("x", tensor_of({2, 1, 3}, x));
  cb.set("w", tensor_of({1, 16, 3}, w));
  cb.set("r", tensor_of({1, 16, 4}, r));
  a.run(ca);
  b.run(cb);
  CHECK(same_recurrent_bits(ca.get("y"), cb.get("y")));
  // New values with the same shapes: repacked, so the outputs change.
  std::vector<float> r2 = r;
  for (float& v : r2) v = -v;
  cb.set("r", tensor_of({1, 16, 4}, r2));
  b.run(cb);
  CHECK_FALSE(same_recurrent_bits(ca.get("y"), cb.get("y")));
}

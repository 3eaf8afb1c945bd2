#include "calibration_svg.h"

#include "cli_common.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace onnx_light::cli {

namespace {

constexpr double kPanelWidth = 640, kPanelHeight = 360;
constexpr double kLeft = 80, kRight = 150, kTop = 40, kBottom = 60;

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

std::string format_time(double ns) {
  if (ns >= 1e6) return fmt::format("{:.3g} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.3g} us", ns / 1e3);
  return fmt::format("{:.3g} ns", ns);
}

std::string format_size(int64_t size) {
  if (size >= (int64_t{1} << 20) && size % (int64_t{1} << 20) == 0) return fmt::format("{}Mi", size >> 20);
  if (size >= 1024 && size % 1024 == 0) return fmt::format("{}Ki", size >> 10);
  return std::to_string(size);
}

// One panel: log2 x (size), log10 y (time), one polyline per configuration.
std::string panel(const tune::KeyCalibration& k, double y0) {
  std::string out;
  const double w = kPanelWidth - kLeft - kRight, h = kPanelHeight - kTop - kBottom;
  out += fmt::format("<g transform=\"translate(0,{})\">\n", y0);
  std::string title = fmt::format("{} {} {} (abi {}): {}", k.key.kernel, element_type_label(k.key.element_type),
                                  k.key.implementation, k.key.tuning_abi, k.parameter);
  out += fmt::format("<text x=\"{}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{}</text>\n", kLeft, escape(title));
  if (k.cases.empty()) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"13\">no case was measured</text>\n</g>\n", kLeft, kTop + 40);
    return out;
  }
  double xmin = std::log2(static_cast<double>(k.cases.front().size));
  double xmax = std::log2(static_cast<double>(k.cases.back().size));
  if (xmax <= xmin) xmax = xmin + 1;
  double ymin = 1e300, ymax = 0;
  for (const auto& c : k.cases)
    for (double m : c.median_ns)
      if (m > 0) {
        ymin = std::min(ymin, m);
        ymax = std::max(ymax, m);
      }
  if (ymax <= 0) ymin = 1, ymax = 10;
  double ly0 = std::floor(std::log10(ymin)), ly1 = std::ceil(std::log10(ymax));
  if (ly1 <= ly0) ly1 = ly0 + 1;
  auto px = [&](int64_t size) { return kLeft + (std::log2(static_cast<double>(size)) - xmin) / (xmax - xmin) * w; };
  auto py = [&](double ns) { return kTop + h - (std::log10(std::max(ns, 1e-3)) - ly0) / (ly1 - ly0) * h; };
  // Axes, grid and labels.
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n", kLeft, kTop, w, h);
  for (double e = ly0; e <= ly1; e += 1) {
    double y = py(std::pow(10.0, e));
    out += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", kLeft, y, kLeft + w, y);
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n", kLeft - 6, y + 4,
                       format_time(std::pow(10.0, e)));
  }
  for (const auto& c : k.cases) {
    double x = px(c.size);
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#eee\"/>\n", x, kTop, x, kTop + h);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>\n", x, kTop + h + 16,
                       format_size(c.size));
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">work size (elements, log scale)</text>\n",
                     kLeft + w / 2, kTop + h + 38);
  out += fmt::format("<text transform=\"translate(18,{}) rotate(-90)\" font-size=\"12\" text-anchor=\"middle\">median time per run (log scale)</text>\n",
                     kTop + h / 2);
  // Series.
  static const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
  std::vector<std::string> names;
  if (k.comparison.empty()) names = {"serial (reference)", "parallel (candidate)"};
  else
    for (const auto& e : k.comparison) names.push_back(fmt::format("{}={}", k.parameter, runtime::format_value(e.value)));
  for (std::size_t s = 0; s < names.size(); ++s) {
    std::string points;
    for (const auto& c : k.cases)
      if (s < c.median_ns.size()) points += fmt::format("{:.1f},{:.1f} ", px(c.size), py(c.median_ns[s]));
    const char* color = colors[s % 6];
    out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", points, color);
    for (const auto& c : k.cases)
      if (s < c.median_ns.size())
        out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{} at {}: {}</title></circle>\n",
                           px(c.size), py(c.median_ns[s]), color, escape(names[s]), c.size, format_time(c.median_ns[s]));
    double ly = kTop + 10 + 18.0 * static_cast<double>(s);
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"/>\n", kLeft + w + 10, ly,
                       kLeft + w + 28, ly, color);
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n", kLeft + w + 32, ly + 4, escape(names[s]));
  }
  // The chosen crossover.
  if (k.bracket_high) {
    double x = px(*k.bracket_high);
    out += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#000\" stroke-dasharray=\"5,4\"/>\n", x,
                       kTop, x, kTop + h);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">chosen {}</text>\n", x, kTop - 4,
                       *k.bracket_high);
  } else if (k.comparison.empty()) {
    out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\">no stable crossover: default kept</text>\n", kLeft + 8,
                       kTop + 16);
  }
  out += "</g>\n";
  return out;
}

}  // namespace

std::string calibration_svg(const tune::CalibrationReport& report) {
  const double height = kPanelHeight * static_cast<double>(std::max<std::size_t>(1, report.calibrated.size()));
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kPanelWidth, height);
  if (report.calibrated.empty())
    out += "<text x=\"20\" y=\"40\" font-size=\"14\">nothing was calibrated</text>\n";
  for (std::size_t i = 0; i < report.calibrated.size(); ++i) out += panel(report.calibrated[i], kPanelHeight * static_cast<double>(i));
  return out + "</svg>\n";
}

}  // namespace onnx_light::cli

#pragma once
// kvfleet::charts: the one place that knows Qt Charts. Views of the GUI and `kvfleet plot` build
// a LineChartSpec (plain numbers and names, owned by the caller) and hand it here, so the chart
// library can change (Qt Charts is deprecated after Qt 6.10 in favour of Qt Graphs) without
// touching them.
#include <optional>
#include <string>
#include <vector>

class QByteArray;

class QChart;
class QGraphicsScene;

namespace kvfleet::charts {

struct Series {
  std::string name;
  std::vector<double> x, y;  // same length, x ascending
  bool muted = false;        // drawn grey and thin
  bool dashed = false;       // drawn dashed in its own colour (a pinned earlier run)
  bool crossing = false;     // as a marker: a black ring (where a curve crosses a limit)
  // A band around the line (a 95% interval of a mean over replicates): lower and upper value
  // per point, drawn shaded in the line's colour; empty for none.
  std::vector<double> band_lo = {}, band_hi = {};
};

struct LineChartSpec {
  std::string title;
  std::string note;              // a line under the title, e.g. what each line averages
  std::string x_label, y_label;  // with units
  std::vector<Series> series;
  std::optional<double> y_limit;  // a horizontal line, e.g. the SLO
  std::string y_limit_label = "SLO";
  std::optional<double> y_max;   // the axis ends here when the data do (a fraction: 1)
  bool x_exact = false;          // the x axis spans the data exactly (a time axis), no rounding
  std::optional<double> x_mark;  // a vertical line, e.g. the scenario's own load
  std::string x_mark_label;
  // Points drawn as red crosses over the lines (e.g. loads where requests were refused), one
  // legend entry each.
  std::vector<Series> markers;
  bool log_x = false;
  bool log_y = false;
};

// The base of a log axis over [lo, hi]: 10 when at least two powers of ten are in range, else 2,
// so that a log axis over a factor of 4 or more has at least two labelled ticks.
double log_axis_base(double lo, double hi);

// A new chart for the spec (the caller owns it, or hands it to a QChartView).
QChart* make_line_chart(const LineChartSpec& spec);

// One horizontal stacked bar per category (e.g. a GPU's memory: weights, activations, KV,
// margin), segments in order, values in the unit of `value_label`.
struct StackedBarSpec {
  std::string title;
  std::string value_label;
  std::vector<std::string> categories;
  std::vector<std::pair<std::string, std::vector<double>>>
      segments;  // name, one value per category
};
QChart* make_stacked_bar_chart(const StackedBarSpec& spec);

// Grouped vertical bars: one group per category, one bar per set.
struct BarChartSpec {
  std::string title;
  std::string value_label;
  std::vector<std::string> categories;
  std::vector<std::pair<std::string, std::vector<double>>> sets;  // name, one value per category
};
QChart* make_bar_chart(const BarChartSpec& spec);

// Paints `scene` (laid out on 0..width × 0..height) into `file`: a PNG at twice the pixels for
// print, or (png false) an SVG titled `title`. Returns false when Qt cannot draw it; throws
// sim::InputError naming `file` when it cannot be written (a full disk, an I/O error).
bool paint_scene(QGraphicsScene& scene, const std::string& file, bool png, int width, int height,
                 const std::string& title);
// Writes `bytes` as the whole of `file` (io/checked_file: every call checked).
void write_checked(const std::string& file, const QByteArray& bytes);

// Renders a chart (taking ownership) offscreen into PNG or SVG, like render_to_file.
std::string render_chart_to_file(QChart* chart, const std::string& path, int width = 960,
                                 int height = 600);

// Renders the chart offscreen into a PNG or SVG file (by extension), written under a temporary
// name and renamed. Needs a QApplication. Returns an empty string, or what went wrong.
std::string render_to_file(const LineChartSpec& spec, const std::string& path, int width = 960,
                           int height = 600);

}  // namespace kvfleet::charts

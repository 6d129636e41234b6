#include "gui/charts/line_chart.h"
#include "sim/core/error.h"
#include "sim/io/checked_file.h"
#include "sim/io/output_set.h"

#include <QtCharts/QAreaSeries>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSeries>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QtCharts/QLegend>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>
#include <QtCore/QBuffer>
#include <QtCore/QCoreApplication>
#include <QtGui/QCursor>
#include <QtGui/QPainter>
#include <QtGui/QPixmap>
#include <QtSvg/QSvgGenerator>
#include <QtWidgets/QGraphicsScene>
#include <QtWidgets/QToolTip>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

namespace kvfleet::charts {

double log_axis_base(double lo, double hi) {
  // Qt labels a log axis at the powers of its base: base 10 over 32-256 labels one tick (100).
  // Base 2 when fewer than two powers of ten are in range (then at most about ten powers of 2).
  if (!(lo > 0) || !(hi > lo) || !std::isfinite(hi)) return 10;
  const double tens = std::floor(std::log10(hi)) - std::ceil(std::log10(lo)) + 1;
  return tens >= 2 ? 10 : 2;
}

namespace {

QAbstractAxis* make_axis(bool log, const std::string& label, double lo, double hi,
                         bool nice = true) {
  QFont title_font;
  title_font.setPointSize(11);
  if (log) {
    auto* a = new QLogValueAxis;
    a->setBase(log_axis_base(lo, hi));
    a->setLabelFormat("%g");
    a->setMinorTickCount(a->base() == 10 ? 8 : 1);
    a->setTitleText(QString::fromStdString(label));
    a->setTitleFont(title_font);
    if (lo > 0 && hi > lo) a->setRange(lo, hi);
    return a;
  }
  auto* a = new QValueAxis;
  a->setTitleText(QString::fromStdString(label));
  a->setTitleFont(title_font);
  a->setLabelFormat("%g");
  if (hi > lo) {
    a->setRange(lo, hi);
    if (nice) a->applyNiceNumbers();
  }
  return a;
}

// The chart with its title (a note on a second line, smaller and plain: chart titles are rich
// text) and its legend.
QChart* titled_chart(const LineChartSpec& spec) {
  auto* chart = new QChart;
  QString title = QString::fromStdString(spec.title);
  if (!spec.note.empty())
    title = title.toHtmlEscaped() + "<br><span style=\"font-size:10pt; font-weight:normal\">" +
            QString::fromStdString(spec.note).toHtmlEscaped() + "</span>";
  chart->setTitle(title);
  QFont tf;
  tf.setPointSize(13);
  tf.setBold(true);
  chart->setTitleFont(tf);
  // Many series: one per line on the right, so that no name is elided.
  chart->legend()->setAlignment(spec.series.size() > 4 ? Qt::AlignRight : Qt::AlignBottom);
  chart->setBackgroundRoundness(0);
  return chart;
}

// The range the data, its bands, the limit and the mark span (positive values only on a log
// axis; from 0 on a linear y axis).
struct DataRange {
  double xlo, xhi, ylo, yhi;
};
DataRange data_range(const LineChartSpec& spec) {
  double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
  for (const auto& s : spec.series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      if (spec.log_x && s.x[i] <= 0) continue;
      if (spec.log_y && s.y[i] <= 0) continue;
      xlo = std::min(xlo, s.x[i]);
      xhi = std::max(xhi, s.x[i]);
      ylo = std::min(ylo, s.y[i]);
      yhi = std::max(yhi, s.y[i]);
      if (i < s.band_hi.size() && std::isfinite(s.band_hi[i])) yhi = std::max(yhi, s.band_hi[i]);
      if (i < s.band_lo.size() && std::isfinite(s.band_lo[i]) && (!spec.log_y || s.band_lo[i] > 0))
        ylo = std::min(ylo, s.band_lo[i]);
    }
  }
  if (spec.y_limit) {
    ylo = std::min(ylo, *spec.y_limit);
    yhi = std::max(yhi, *spec.y_limit);
  }
  if (!spec.log_y && ylo > 0) ylo = 0;
  if (!(xhi >= xlo)) xlo = 0, xhi = 1;
  if (!(yhi >= ylo)) ylo = 0, yhi = 1;
  if (xhi == xlo) xhi = xlo + 1;
  if (yhi == ylo) yhi = ylo + 1;
  if (spec.x_mark && std::isfinite(*spec.x_mark)) {
    xlo = std::min(xlo, *spec.x_mark);
    xhi = std::max(xhi, *spec.x_mark);
  }
  return {xlo, xhi, ylo, yhi};
}

// Series added to a chart on its two axes.
struct SeriesAdder {
  QChart* chart;
  QAbstractAxis* ax;
  QAbstractAxis* ay;
  const LineChartSpec& spec;

  // A series on both axes with the points of `data` the axes can show (finite; positive on a
  // log axis).
  void attach(QXYSeries* xy, const Series& data) const {
    xy->setName(QString::fromStdString(data.name));
    for (std::size_t i = 0; i < data.x.size() && i < data.y.size(); ++i) {
      if (!std::isfinite(data.x[i]) || !std::isfinite(data.y[i])) continue;
      if ((spec.log_x && data.x[i] <= 0) || (spec.log_y && data.y[i] <= 0)) continue;
      xy->append(data.x[i], data.y[i]);
    }
    chart->addSeries(xy);
    xy->attachAxis(ax);
    xy->attachAxis(ay);
  }
  // A straight reference line (the SLO, the scenario's load).
  void reference(const std::string& name, double x0, double y0, double x1, double y1, QColor colour,
                 Qt::PenStyle style, double width) const {
    auto* line = new QLineSeries;
    attach(line, Series{name, {x0, x1}, {y0, y1}});
    QPen pen(colour);
    pen.setStyle(style);
    pen.setWidthF(width);
    line->setPen(pen);
  }
  // A series' band, under its line: shaded, without a legend entry of its own (the line's name
  // says what it is). On a log axis a lower bound at or below 0 is drawn at the axis.
  void band(const Series& s, QColor c, double bottom) const {
    auto* upper = new QLineSeries;
    auto* lower = new QLineSeries;
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.band_lo[i]) || !std::isfinite(s.band_hi[i]) ||
          (spec.log_x && s.x[i] <= 0))
        continue;
      const double lo = spec.log_y ? std::max(s.band_lo[i], bottom) : s.band_lo[i];
      upper->append(s.x[i], s.band_hi[i]);
      lower->append(s.x[i], lo);
    }
    auto* area = new QAreaSeries(upper, lower);
    QColor fill = c;
    fill.setAlphaF(0.18);
    area->setBrush(fill);
    area->setPen(Qt::NoPen);
    chart->addSeries(area);
    area->attachAxis(ax);
    area->attachAxis(ay);
    for (auto* marker : chart->legend()->markers(area)) marker->setVisible(false);
  }
  // A series' line, its values shown under the pointer (and kept as the chart's "hover"
  // property, which tests read).
  void line(const Series& s, QColor c) const {
    auto* line = new QLineSeries;
    attach(line, s);
    QObject::connect(line, &QXYSeries::hovered, chart,
                     [chart = chart, name = QString::fromStdString(s.name), x_label = spec.x_label,
                      y_label = spec.y_label](const QPointF& p, bool on) {
                       if (!on) {
                         QToolTip::hideText();
                         return;
                       }
                       const QString text = QString("%1\n%2: %3\n%4: %5")
                                                .arg(name, QString::fromStdString(x_label))
                                                .arg(p.x(), 0, 'g', 4)
                                                .arg(QString::fromStdString(y_label))
                                                .arg(p.y(), 0, 'g', 4);
                       chart->setProperty("hover", text);
                       QToolTip::showText(QCursor::pos(), text);
                     });
    QPen pen = line->pen();
    pen.setWidthF(s.muted ? 1.2 : 2.4);
    pen.setColor(c);
    if (s.dashed) pen.setStyle(Qt::DashLine);
    line->setPen(pen);
    line->setPointsVisible(!s.muted && line->count() <= 60);  // markers only on sparse curves
  }
};

}  // namespace

QChart* make_line_chart(const LineChartSpec& spec) {
  QChart* chart = titled_chart(spec);
  const DataRange d = data_range(spec);
  QAbstractAxis* ax = make_axis(spec.log_x, spec.x_label, d.xlo, d.xhi, !spec.x_exact);
  // Room above the highest point (and below the lowest on a log scale).
  const double bottom = spec.log_y ? d.ylo / 1.5 : d.ylo;
  double top = spec.log_y ? d.yhi * 1.5 : d.yhi * 1.05;
  if (spec.y_max && d.yhi <= *spec.y_max) top = *spec.y_max;  // a fraction's axis ends at 1
  QAbstractAxis* ay = make_axis(spec.log_y, spec.y_label, bottom, top);
  chart->addAxis(ax, Qt::AlignBottom);
  chart->addAxis(ay, Qt::AlignLeft);
  // Ten distinct colours (Tableau 10; Qt's default theme repeats after five); the SLO's red apart.
  static const QColor kPalette[] = {
      {31, 119, 180},  {255, 127, 14},  {44, 160, 44},  {148, 103, 189}, {140, 86, 75},
      {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207},  {214, 39, 40}};
  const SeriesAdder add{chart, ax, ay, spec};
  std::size_t colour = 0;
  for (const auto& s : spec.series) {
    const QColor c = s.muted ? QColor(170, 170, 170) : kPalette[colour++ % std::size(kPalette)];
    if (!s.band_lo.empty() && s.band_lo.size() == s.x.size() && s.band_hi.size() == s.x.size())
      add.band(s, c, bottom);
    add.line(s, c);
  }
  for (const auto& m : spec.markers) {
    auto* sc = new QScatterSeries;
    sc->setMarkerShape(m.crossing ? QScatterSeries::MarkerShapeCircle
                                  : QScatterSeries::MarkerShapeRectangle);
    sc->setMarkerSize(m.crossing ? 14 : 11);
    sc->setColor(m.crossing ? QColor(0, 0, 0, 0) : QColor(200, 40, 40, 90));
    sc->setBorderColor(m.crossing ? QColor(20, 20, 20) : QColor(200, 40, 40));
    add.attach(sc, m);
  }
  if (spec.x_mark && std::isfinite(*spec.x_mark)) {
    add.reference(spec.x_mark_label, *spec.x_mark, bottom, *spec.x_mark, top, QColor(110, 110, 110),
                  Qt::DotLine, 1.5);
  }
  if (spec.y_limit) {
    add.reference(spec.y_limit_label, d.xlo, *spec.y_limit, d.xhi, *spec.y_limit,
                  QColor(200, 40, 40), Qt::DashLine, 1.8);
  }
  return chart;
}

namespace {

// Bars of `series` (empty, of either kind) filled from sets, categories on one axis and values
// (from 0, nice numbers) on the other; the title bold as in line charts.
QChart* bar_chart(QAbstractBarSeries* series, const std::string& title,
                  const std::string& value_label, const std::vector<std::string>& categories,
                  const std::vector<std::pair<std::string, std::vector<double>>>& sets,
                  bool horizontal, bool stacked) {
  auto* chart = new QChart;
  chart->setTitle(QString::fromStdString(title));
  QFont tf;
  tf.setPointSize(13);
  tf.setBold(true);
  chart->setTitleFont(tf);
  double top = 0;
  std::vector<double> sums(categories.size(), 0.0);
  for (const auto& [name, values] : sets) {
    auto* set = new QBarSet(QString::fromStdString(name));
    for (std::size_t i = 0; i < values.size(); ++i) {
      *set << values[i];
      if (i < sums.size()) sums[i] += values[i];
      top = std::max(top, values[i]);
    }
    series->append(set);
  }
  if (stacked)
    for (double v : sums) top = std::max(top, v);
  chart->addSeries(series);
  auto* cats = new QBarCategoryAxis;
  for (const auto& c : categories) cats->append(QString::fromStdString(c));
  chart->addAxis(cats, horizontal ? Qt::AlignLeft : Qt::AlignBottom);
  series->attachAxis(cats);
  auto* values = new QValueAxis;
  values->setTitleText(QString::fromStdString(value_label));
  values->setLabelFormat("%g");
  values->setRange(0, top > 0 ? top * 1.05 : 1);
  values->applyNiceNumbers();
  chart->addAxis(values, horizontal ? Qt::AlignBottom : Qt::AlignLeft);
  series->attachAxis(values);
  chart->legend()->setAlignment(Qt::AlignBottom);
  return chart;
}

}  // namespace

QChart* make_stacked_bar_chart(const StackedBarSpec& spec) {
  return bar_chart(new QHorizontalStackedBarSeries, spec.title, spec.value_label, spec.categories,
                   spec.segments, true, true);
}

QChart* make_bar_chart(const BarChartSpec& spec) {
  return bar_chart(new QBarSeries, spec.title, spec.value_label, spec.categories, spec.sets, false,
                   false);
}

std::string render_to_file(const LineChartSpec& spec, const std::string& path, int width,
                           int height) {
  return render_chart_to_file(make_line_chart(spec), path, width, height);
}

bool paint_scene(QGraphicsScene& scene, const std::string& file, bool png, int width, int height,
                 const std::string& title) {
  // Painted into memory, then written by io/checked_file (every write, the fsync and the close
  // checked): Qt's own file writers do not report a full disk.
  const QRectF area(0, 0, width, height);
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (png) {
    QPixmap pm(width * 2, height * 2);
    pm.setDevicePixelRatio(2);
    pm.fill(Qt::white);
    QPainter painter(&pm);
    painter.setRenderHint(QPainter::Antialiasing);
    scene.render(&painter, area, area);
    painter.end();
    if (!pm.save(&buffer, "PNG")) return false;
  } else {
    QSvgGenerator gen;
    gen.setOutputDevice(&buffer);
    gen.setSize(QSize(width, height));
    gen.setViewBox(QRect(0, 0, width, height));
    gen.setTitle(QString::fromStdString(title));
    QPainter painter(&gen);
    painter.setRenderHint(QPainter::Antialiasing);
    scene.render(&painter, area, area);
    if (!painter.end()) return false;
  }
  write_checked(file, bytes);
  return true;
}

void write_checked(const std::string& file, const QByteArray& bytes) {
  sim::CheckedFile f(file);
  f.write(bytes.constData(), static_cast<std::size_t>(bytes.size()));
  f.finish();
}

std::string render_chart_to_file(QChart* chart, const std::string& path, int width, int height) {
  const std::filesystem::path p(path);
  const std::string ext = p.extension().string();
  if (ext != ".png" && ext != ".svg") {
    delete chart;
    return "output must end in .png or .svg: " + path;
  }
  // The chart laid out in a scene of its own size, rendered without a window.
  QGraphicsScene scene;
  scene.addItem(chart);  // the scene owns it
  chart->setGeometry(0, 0, width, height);
  scene.setSceneRect(0, 0, width, height);
  QCoreApplication::processEvents();
  // Written under a temporary name beside the file (removed on SIGINT/SIGTERM, or when this
  // fails), then renamed.
  try {
    sim::OutputSet out;
    const std::string tmp = out.add_file("--out", path);
    // The file's title: the chart's first line (a note follows a <br>).
    const std::string title = chart->title().section("<br>", 0, 0).toStdString();
    if (!paint_scene(scene, tmp, ext == ".png", width, height, title))
      return "could not draw " + path;
    out.publish();
  } catch (const sim::InputError& e) {
    // Named by the final path, not the temporary written to.
    return e.where() == "--out" ? e.what() : path + ": " + e.problem();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace kvfleet::charts

#include "gui/charts/run_dashboard.h"

#include <QtCharts/QChart>
#include <QtCore/QBuffer>
#include <QtCore/QCoreApplication>
#include <QtGui/QFont>
#include <QtGui/QPageSize>
#include <QtGui/QPainter>
#include <QtGui/QPdfWriter>
#include <QtWidgets/QGraphicsScene>
#include <QtWidgets/QGraphicsSimpleTextItem>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>

#include "sim/core/error.h"
#include "sim/io/output_set.h"

namespace kvfleet::charts {

namespace {

// One page laid out in a scene: its title, then the charts in a grid (3 columns for 5 or more,
// else 2).
std::unique_ptr<QGraphicsScene> page_scene(const DashboardPage& page, int width, int height) {
  auto scene = std::make_unique<QGraphicsScene>();
  scene->setSceneRect(0, 0, width, height);
  scene->setBackgroundBrush(Qt::white);
  auto* title = scene->addSimpleText(QString::fromStdString(page.title));
  QFont f;
  f.setPointSize(16);
  f.setBold(true);
  title->setFont(f);
  title->setPos((width - title->boundingRect().width()) / 2, 8);
  int top = 48;
  if (!page.note.empty()) {
    auto* note = scene->addSimpleText(QString::fromStdString(page.note));
    QFont nf;
    nf.setPointSize(11);
    note->setFont(nf);
    note->setPos((width - note->boundingRect().width()) / 2, 40);
    top = 68;
  }
  const int n = static_cast<int>(page.charts.size());
  const int cols = n >= 5 ? 3 : 2;
  const int rows = (n + cols - 1) / cols;
  const double w = static_cast<double>(width) / cols;
  const double h = static_cast<double>(height - top) / std::max(1, rows);
  for (int i = 0; i < n; ++i) {
    QChart* chart = make_line_chart(page.charts[i]);
    QFont tf;
    tf.setPointSize(11);
    tf.setBold(true);
    chart->setTitleFont(tf);
    chart->legend()->setAlignment(Qt::AlignBottom);
    scene->addItem(chart);  // the scene owns it
    chart->setGeometry((i % cols) * w, top + (i / cols) * h, w, h);
  }
  QCoreApplication::processEvents();
  return scene;
}

std::string with_suffix(const std::filesystem::path& p, const std::string& page) {
  return (p.parent_path() / (p.stem().string() + "-" + page + p.extension().string())).string();
}

// `file` is the temporary the image is written to; `png` comes from the final name (the
// temporary's own suffix, ".tmp-PID", says nothing about the format).
void write_image(const DashboardPage& page, const std::string& file, bool png, int width,
                 int height) {
  auto scene = page_scene(page, width, height);
  if (!paint_scene(*scene, file, png, width, height, page.title))
    throw std::runtime_error("could not draw " + file);
}

void write_pdf(const std::vector<DashboardPage>& pages, const std::string& file, int width,
               int height) {
  // Into memory, then written with every call checked (line_chart.h, write_checked).
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  QPdfWriter pdf(&buffer);
  pdf.setResolution(96);
  pdf.setPageSize(QPageSize(QSizeF(width * 0.75, height * 0.75), QPageSize::Point));
  pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
  pdf.setTitle(QString::fromStdString(pages.empty() ? "" : pages[0].title));
  QPainter painter(&pdf);
  bool ok = painter.isActive();
  if (ok) painter.setRenderHint(QPainter::Antialiasing);
  for (std::size_t i = 0; ok && i < pages.size(); ++i) {
    if (i > 0 && !(ok = pdf.newPage())) break;
    auto scene = page_scene(pages[i], width, height);
    scene->render(&painter, QRectF(painter.viewport()), QRectF(0, 0, width, height));
  }
  if (!(painter.isActive() && painter.end() && ok))
    throw std::runtime_error("could not draw " + file);
  // Qt stamps the time of writing as /CreationDate: the same run gives the same bytes when it is
  // the time SOURCE_DATE_EPOCH gives (the reproducible-builds convention), else 1 January 2000.
  const QByteArray key = "/CreationDate (D:";
  if (const qsizetype at = bytes.indexOf(key); at >= 0) {
    const qsizetype start = at + key.size(), end = bytes.indexOf(')', start);
    std::time_t t = 946684800;
    if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"))
      t = static_cast<std::time_t>(std::strtoll(epoch, nullptr, 10));
    std::tm tm{};
    gmtime_r(&t, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%SZ", &tm);
    if (end - start == static_cast<qsizetype>(std::strlen(stamp)))  // offsets stay as they are
      bytes.replace(start, end - start, stamp);
  }
  write_checked(file, bytes);
}

}  // namespace

DashboardOutput::DashboardOutput(const std::string& out) {
  const std::filesystem::path p(out);
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec) || (!out.empty() && out.back() == '/')) {
    // The files go into a temporary folder, published into `out` (made, or an existing one).
    const std::filesystem::path folder = files_.add_folder("--out", out);
    const bool exists = std::filesystem::is_directory(p, ec);
    auto add = [&](const std::string& name, const std::string& page) {
      // In an existing folder, none of the files may be taken by a folder, a link, ...
      if (exists) sim::check_output_file("--out", (p / name).string());
      targets_.emplace_back((folder / name).string(), page);
      written_.push_back((p / name).string());
    };
    for (const char* page : kDashboardPages)
      for (const char* ext : {".png", ".svg"}) add(page + std::string(ext), page);
    add("dashboard.pdf", "");
    return;
  }
  const std::string ext = p.extension().string();
  if (ext != ".pdf" && ext != ".png" && ext != ".svg")
    throw sim::InputError("--out", "",
                          out +
                              ": a run's dashboard is written as FILE.pdf (every page), "
                              "FILE.png or FILE.svg (FILE-<page>.png per page) or into a "
                              "folder (DIR/)");
  if (ext == ".pdf") {
    targets_.emplace_back(files_.add_file("--out", out), "");
    written_.push_back(out);
    return;
  }
  for (const char* page : kDashboardPages) {
    targets_.emplace_back(files_.add_file("--out", with_suffix(p, page)), page);
    written_.push_back(with_suffix(p, page));
  }
}

std::vector<std::string> DashboardOutput::write(const std::vector<DashboardPage>& pages, int width,
                                                int height) {
  for (std::size_t i = 0; i < targets_.size(); ++i) {
    const auto& [file, page_name] = targets_[i];
    try {
      if (page_name.empty()) {
        write_pdf(pages, file, width, height);
        continue;
      }
      const bool png = std::filesystem::path(written_[i]).extension() == ".png";
      for (const auto& page : pages)
        if (page.name == page_name) write_image(page, file, png, width, height);
    } catch (const sim::InputError& e) {
      // Named by the file asked for, not the temporary written to.
      throw sim::InputError(written_[i], "", e.problem());
    }
  }
  files_.publish();
  return written_;
}

}  // namespace kvfleet::charts

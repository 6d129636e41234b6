// The GUI offscreen (QtTest): the default scenario loads, fields carry the declarations' units
// and descriptions, a changed max_num_seqs runs a load sweep whose chart holds the numbers
// `kvfleet run` prints for the same scenario and load, a sweep cancels mid-run, and a bad file
// or value leaves the previous state. Saves a screenshot when KVFLEET_SCREENSHOT names a file.
#include <sys/wait.h>
#include <yaml-cpp/yaml.h>
#include <QtCharts/QAbstractAxis>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <QtCore/QDir>
#include <QtCore/QFileInfo>
#include <QtCore/QRegularExpression>
#include <QtCore/QSettings>
#include <QtCore/QTemporaryDir>
#include <QtGui/QAction>
#include <QtGui/QFontMetrics>
#include <QtGui/QGuiApplication>
#include <QtTest/QSignalSpy>
#include <QtTest/QTest>
#include <QtWidgets/QApplication>
#include <QtWidgets/QCheckBox>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QListWidget>
#include <QtWidgets/QTabWidget>
#include <QtWidgets/QTableWidget>
#include <QtWidgets/QToolBar>
#include <QtWidgets/QWidgetAction>
#include "sim/metrics/fidelity.h"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "gui/app/main_window.h"
#include "gui/app/sizing_view.h"
#include "gui/app/words.h"
#include "sim/simulation/scenario.h"
#include "sim/sweep/sizing.h"

using kvfleet::gui::MainWindow;
using kvfleet::gui::SizingView;
namespace sim = kvfleet::sim;

namespace {

std::string run_cli(const std::string& args) {
  const std::string cmd = std::string(KVFLEET_BINARY_DIR) + "/bin/kvfleet " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  pclose(p);
  return out;
}

// Seconds from a report cell such as "69.98 s" or "34.1 ms".
double seconds(const std::string& v, const std::string& unit) {
  const double x = std::stod(v);
  return unit == "ms" ? x / 1000 : unit == "us" ? x / 1e6 : x;
}

// The column of a table whose header is `name`, or -1.
int column(QTableWidget* t, const QString& name) {
  for (int c = 0; c < t->columnCount(); ++c)
    if (t->horizontalHeaderItem(c) && t->horizontalHeaderItem(c)->text() == name) return c;
  return -1;
}

bool wait_finished(MainWindow& w, int timeout_ms) {
  QSignalSpy spy(&w.sweep(), &kvfleet::gui::LoadSweep::finished);
  if (!w.sweep().running()) return true;
  return spy.wait(timeout_ms);
}

}  // namespace

class GuiTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void aStudyIsADocumentSavedWithItsComments() {
    const QString src = KVFLEET_SOURCE_DIR "/scenarios/conversations/chat-100-users.yaml";
    std::stringstream original;
    original << std::ifstream(src.toStdString()).rdbuf();
    QTemporaryDir dir;
    const QString saved = dir.filePath("chat.yaml");
    {
      MainWindow w;
      QVERIFY(w.openScenario(src));
      QVERIFY(!w.hasUnsavedChanges() && !w.isWindowModified());
      // Leaving a field without changing it is not an edit.
      QVERIFY(
          w.setField("pools[0].engine.max_num_seqs", w.fieldValue("pools[0].engine.max_num_seqs")));
      QVERIFY(!w.hasUnsavedChanges() && !w.isWindowModified());
      QVERIFY(w.setField("pools[0].engine.max_num_seqs", "96"));
      QVERIFY(w.hasUnsavedChanges() && w.isWindowModified());
      QVERIFY(w.saveScenario(saved));
      QVERIFY(w.lastSaveKeptText());
      QVERIFY(!w.hasUnsavedChanges() && !w.isWindowModified());
      std::stringstream text;
      text << std::ifstream(saved.toStdString()).rdbuf();
      // The file's own text, the one value changed where it stood: every other line as it was.
      std::string expect = original.str();
      const std::string from = "engine: {max_num_seqs: 128}";
      expect.replace(expect.find(from), from.size(), "engine: {max_num_seqs: 96}");
      QCOMPARE(QString::fromStdString(text.str()), QString::fromStdString(expect));
      // It loads to the scenario on screen, and the window now edits the saved file.
      QCOMPARE(sim::load_scenario_file(saved.toStdString(), {}).resolved_yaml,
               w.scenario().resolved_yaml);
      QVERIFY(w.windowTitle().contains("chat.yaml"));
      // Every action has a shortcut.
      QStringList missing, named;
      for (QToolBar* tb : w.findChildren<QToolBar*>())
        for (QAction* a : tb->actions()) {
          if (a->text().isEmpty() || qobject_cast<QWidgetAction*>(a)) continue;
          named << a->text();
          if (a->shortcut().isEmpty()) missing << a->text();
        }
      QVERIFY2(named.size() >= 7, qPrintable(named.join(", ")));
      QVERIFY2(missing.isEmpty(), qPrintable(missing.join(", ")));
    }
    // Remembered after a restart: the saved file first, then the one opened.
    MainWindow again;
    const QStringList recent = again.recentFiles();
    QVERIFY(recent.size() >= 2);
    QCOMPARE(recent[0], QString::fromStdString(std::filesystem::absolute(saved.toStdString())));
    QCOMPARE(recent[1], QString::fromStdString(std::filesystem::absolute(src.toStdString())));
  }

  void aStudyKeepsItsSloComparisonAndPins() {
    // Save writes the SLO line, refused share, compared quantity, Compare box and pins into the
    // scenario file (a block of comments: kvfleet loads the same scenario), and Open restores
    // them and runs the saved comparison.
    const QString src = KVFLEET_SOURCE_DIR "/scenarios/conversations/context-policies.yaml";
    std::stringstream original;
    original << std::ifstream(src.toStdString()).rdbuf();
    QTemporaryDir dir;
    const QString saved = dir.filePath("study.yaml");
    const std::vector<std::string> values = {"full", "window"};
    std::vector<std::string> pinned;
    {
      MainWindow w;
      QVERIFY(w.openScenario(src));
      w.setAutoRerun(false);
      QVERIFY(w.setField("workload.num_sessions", "60"));
      QVERIFY(w.setField("workload.users", "30"));
      w.runSweep();
      QVERIFY(wait_finished(w, 120000));
      w.pinRun();
      QVERIFY(w.renamePin(0, "thirty users"));
      pinned = w.pins()[0].overrides;
      w.setSlo(1.5);
      w.setMaxRefused(3);
      QVERIFY(w.setMetric("TTFT p90"));
      w.setCompareBox("workload.context_policy.impl", values);
      // The study's changes are unsaved changes (the title's "*", the prompt on close).
      QVERIFY(w.hasUnsavedChanges() && w.isWindowModified());
      QVERIFY(w.saveScenario(saved));
      QVERIFY(!w.hasUnsavedChanges() && !w.isWindowModified());
      w.setSlo(1.5);  // the same value: no change
      QVERIFY(!w.hasUnsavedChanges());
      QVERIFY(w.setPinVisible(0, false));
      QVERIFY(w.hasUnsavedChanges());
      QVERIFY(w.setPinVisible(0, true));
      QVERIFY(w.saveScenario(saved));
      // The file's own lines are all there, in order; the study is a block of comments after.
      std::stringstream text;
      text << std::ifstream(saved.toStdString()).rdbuf();
      QVERIFY(text.str().find("# --- kvfleet-gui study") != std::string::npos);
      QCOMPARE(sim::load_scenario_file(saved.toStdString(), {}).resolved_yaml,
               w.scenario().resolved_yaml);
      QCOMPARE(kvfleet::gui::without_study(text.str()).substr(0, 200),
               original.str().substr(0, 200));
    }
    MainWindow w;
    QVERIFY(w.openAndRun(saved));
    QVERIFY2(!w.hasUnsavedChanges() && !w.isWindowModified(),
             qPrintable(QString("%1 %2")
                            .arg(w.hasUnsavedChanges())
                            .arg(w.isWindowModified())));  // what the file says
    QCOMPARE(w.latencySpec().y_limit.value_or(0), 1.5);
    QCOMPARE(w.study().refused_pct, 3.0);
    QCOMPARE(w.study().metric, std::string("TTFT p90"));
    QCOMPARE(w.study().compare_key, std::string("workload.context_policy.impl"));
    QVERIFY(w.study().compare_values == values);
    QCOMPARE(w.pins().size(), std::size_t{1});
    QCOMPARE(w.pins()[0].name, std::string("thirty users"));
    QVERIFY(w.pins()[0].overrides == pinned);
    QVERIFY(w.pinList()->item(0)->text().contains("not run"));
    // Opening ran the saved comparison.
    QCOMPARE(w.compare().variants().size(), std::size_t{2});
    QVERIFY(QTest::qWaitFor([&] { return !w.compare().running(); }, 120000));
    // A study with a pin and no comparison: Open reruns the pin beside the current settings, and
    // the pin gets back the curve it was pinned with, though the panel changed after pinning.
    {
      const QString pins_only = dir.filePath("pins.yaml");
      MainWindow a;
      QVERIFY(a.openScenario(src));
      a.setAutoRerun(false);
      QVERIFY(a.setField("workload.num_sessions", "60"));
      QVERIFY(a.setField("workload.users", "30"));
      a.runSweep();
      QVERIFY(wait_finished(a, 120000));
      a.pinRun();
      const auto curve = a.pins()[0].points;
      QVERIFY(a.setField("pools[0].engine.max_num_seqs", "48"));
      QVERIFY(a.saveScenario(pins_only));
      MainWindow b;
      QVERIFY(b.openAndRun(pins_only));
      QCOMPARE(b.compare().variants().size(), std::size_t{2});
      // The pin takes its curve when the comparison's end is delivered (after its threads end).
      QVERIFY(QTest::qWaitFor(
          [&] { return !b.compare().running() && !b.pins().at(0).points.empty(); }, 120000));
      QCOMPARE(b.pins().size(), std::size_t{1});
      QCOMPARE(b.pins()[0].points.size(), curve.size());
      for (std::size_t i = 0; i < curve.size(); ++i)
        QCOMPARE(b.pins()[0].points[i].summary.ttft.p99, curve[i].summary.ttft.p99);
      QVERIFY2(!b.pinList()->item(0)->text().contains("not run"),
               qPrintable(b.pinList()->item(0)->text()));
    }
    // A damaged study block leaves the scenario open and says so.
    {
      std::stringstream text;
      text << std::ifstream(saved.toStdString()).rdbuf();
      std::string t = text.str();
      t.replace(t.find("# slo_s:"), 8, "# slo_s: [oops,");  // still comments; not YAML
      std::ofstream(saved.toStdString()) << t;
    }
    MainWindow again;
    QVERIFY(again.openScenario(saved));
    QVERIFY2(again.lastError().contains("study"), qPrintable(again.lastError()));
    // A value out of the field's range is refused by name (a negative SLO drew no line).
    {
      std::stringstream text;
      text << std::ifstream(saved.toStdString()).rdbuf();
      std::string t = text.str();
      t.replace(t.find("# slo_s: [oops,"), 15, "# slo_s: -3 #");
      std::ofstream(saved.toStdString()) << t;
    }
    MainWindow third;
    QVERIFY(third.openScenario(saved));
    QVERIFY2(third.lastError().contains("slo_s"), qPrintable(third.lastError()));
    QCOMPARE(third.study().slo_s, 2.0);
  }

  void aGpuComparisonsTitleNamesNoGpu() {
    MainWindow w;
    QVERIFY(w.setField("workload.num_requests", "200"));
    QVERIFY(w.runCompare("pools[0].gpu", {"H100-SXM", "L40S"}));
    QVERIFY(QTest::qWaitFor([&] { return !w.compare().running(); }, 120000));
    QCoreApplication::processEvents();
    const QString title = QString::fromStdString(w.latencySpec().title);
    QVERIFY2(!title.contains("H100") && title.contains("Llama-3-8B"), qPrintable(title));
    QVERIFY2(title.contains("by GPU"), qPrintable(title));
  }

  void loadsBeyondTheWorkloadAreNotRunAsIfTheyHeld() {
    // 60 conversations: 25 to 200 users at the panel's factors. Users beyond 60 would have
    // nothing to send; those points say so instead of repeating the 60-user run as if it held.
    MainWindow w;
    QVERIFY(w.openScenario(KVFLEET_SOURCE_DIR "/scenarios/conversations/context-policies.yaml"));
    QVERIFY(w.setField("workload.num_sessions", "60"));
    QVERIFY(w.setField("workload.users", "100"));
    w.runSweep();
    QVERIFY(wait_finished(w, 120000));
    int beyond = 0, ran = 0;
    for (const auto& p : w.sweep().points()) {
      QVERIFY(p.done);
      if (p.load > 60) {
        QVERIFY(!p.ok);
        QVERIFY2(QString::fromStdString(p.error).contains("beyond the workload"), p.error.c_str());
        ++beyond;
      } else {
        QVERIFY2(p.ok, p.error.c_str());
        ++ran;
      }
    }
    QVERIFY(beyond > 0 && ran > 0);
  }

  void progressMovesWithinAPoint() {
    // A long point: the bar moves with the share of its requests sent, and the status names the
    // simulated time each running point has reached.
    MainWindow w;
    QVERIFY(w.setField("workload.num_requests", "400000"));
    w.runSweep();
    bool within = false;
    QVERIFY(QTest::qWaitFor(
        [&] {
          for (const auto& p : w.sweep().points())
            within = within || (p.started && !p.done && p.requests_so_far > 0);
          return within;
        },
        60000));
    const double f = w.sweep().doneFraction();
    int done = 0;
    for (const auto& p : w.sweep().points()) done += p.done ? 1 : 0;
    QVERIFY2(f > done && f < done + 2, qPrintable(QString::number(f)));
    QVERIFY2(w.sweep().describeProgress().contains("s simulated"),
             qPrintable(w.sweep().describeProgress()));
    w.cancelSweep();
    QVERIFY(wait_finished(w, 120000));
  }

  void chartsShowTheValuesUnderThePointer() {
    kvfleet::charts::LineChartSpec spec;
    spec.x_label = "Users";
    spec.y_label = "TTFT p99 (s)";
    spec.series.push_back({"window (turns 4)", {100, 200}, {0.25, 1.5}});
    std::unique_ptr<QChart> chart(kvfleet::charts::make_line_chart(spec));
    QLineSeries* line = nullptr;
    for (auto* s : chart->series())
      if (s->name() == "window (turns 4)") line = qobject_cast<QLineSeries*>(s);
    QVERIFY(line);
    Q_EMIT line->hovered(QPointF(200, 1.5), true);
    QCOMPARE(chart->property("hover").toString(),
             QString("window (turns 4)\nUsers: 200\nTTFT p99 (s): 1.5"));
  }

  void tablesExportTheirNumbersNotTheirText() {
    QTableWidget t(2, 3);
    t.setHorizontalHeaderLabels({"variant", "capacity", "between loads"});
    const char* text[2][3] = {{"a, b", "at least 300", "—"}, {"c", "45.5", "38 – 75"}};
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 3; ++c) t.setItem(r, c, new QTableWidgetItem(text[r][c]));
    t.item(0, 1)->setData(kvfleet::gui::kNumberRole, 300.0);
    t.item(0, 1)->setData(kvfleet::gui::kBoundRole, "at least");
    t.item(1, 1)->setData(kvfleet::gui::kNumberRole, 45.5);
    t.item(1, 1)->setData(kvfleet::gui::kBoundRole, "");
    t.item(1, 2)->setData(kvfleet::gui::kNumberRole, 38.0);
    t.item(1, 2)->setData(kvfleet::gui::kHighRole, 75.0);
    QTemporaryDir dir;
    QVERIFY(kvfleet::gui::export_table_csv(&t, dir.filePath("t.csv")).isEmpty());
    std::stringstream csv;
    csv << std::ifstream(dir.filePath("t.csv").toStdString()).rdbuf();
    QCOMPARE(QString::fromStdString(csv.str()),
             QString("variant,capacity,capacity (bound),between loads (low),between loads (high)\n"
                     "\"a, b\",300,at least,,\n"
                     "c,45.5,,38,75\n"));
  }

  void editsAnyPoolWithEditorsFromTheDeclarations() {
    MainWindow w;
    QVERIFY(w.openScenario(KVFLEET_SOURCE_DIR "/scenarios/fleet/pd-disaggregated.yaml"));
    QCOMPARE(w.fieldValue("pools[0].engine.max_num_seqs"), QString("256"));
    QVERIFY(!w.setField("pools[1].engine.max_num_seqs", "48"));  // not on the panel yet
    w.selectPool(1);
    QVERIFY(w.setField("pools[1].engine.max_num_seqs", "48"));
    QCOMPARE(w.fieldValue("pools[1].engine.max_num_seqs"), QString("48"));
    QVERIFY(!w.setField("pools[0].engine.max_num_seqs", "64"));
    // A declared boolean is a check box; a key with declared choices a list of them.
    int boxes = 0;
    for (auto* b : w.findChildren<QCheckBox*>()) boxes += b->toolTip().contains("prefix");
    QVERIFY(boxes >= 1);
    bool routers = false;
    for (auto* c : w.findChildren<QComboBox*>())
      routers |= c->findText("prefix_aware") >= 0 && c->findText("round_robin") >= 0;
    QVERIFY(routers);
    if (const char* shots = std::getenv("KVFLEET_SCREENSHOT_DIR")) {
      w.resize(1280, 800);
      QVERIFY(w.grab().save(QDir(shots).filePath("gui_pools.png")));
    }
    w.selectPool(0);
    QVERIFY(w.setField("pools[0].engine.max_num_seqs", "64"));
    QCOMPARE(w.fieldValue("pools[0].engine.max_num_seqs"), QString("64"));
    QCOMPARE(w.fieldValue("pools[1].engine.max_num_seqs"), QString("48"));  // kept
  }
  // The Sizing tab answers "how many H100 vs L40S, at what cost" with kvfleet size's search:
  // each row equals find_replicas on the same inputs and the CLI's answer.
  void sizingAnswersWhatKvfleetSizeAnswers() {
    MainWindow w;
    QVERIFY(w.setField("workload.num_requests", "3000"));
    SizingView* z = w.sizingView();
    QVERIFY(z != nullptr);
    z->setTarget(100, "requests/s");
    z->setSlo(2.0, 0.1, 1.0, 1.0);
    z->setReplicates(2);
    z->setPrice(2.5);
    z->setVariants("pools[0].gpu", "H100-SXM, L40S");
    QSignalSpy done(z, &SizingView::finished);
    QVERIFY(z->size());
    QVERIFY(done.wait(300000));
    QCOMPARE(static_cast<int>(z->rows().size()), 2);
    QCOMPARE(z->table()->rowCount(), 2);
    for (std::size_t i = 0; i < z->rows().size(); ++i) {
      const auto& row = z->rows()[i];
      QVERIFY2(row.error.empty(), row.error.c_str());
      QVERIFY2(row.result.not_met.empty(), row.result.not_met.c_str());
      QVERIFY(row.result.replicas >= 1);
      QCOMPARE(z->table()->item(static_cast<int>(i), 1)->text(),
               QString::number(row.result.replicas));
      // The same search from the library and from the command line.
      sim::SizingOptions o;
      o.target = 100;
      o.replicates = 2;
      o.price_per_hour = 2.5;
      o.sets = row.overrides;
      sim::ScenarioSource src;
      src.text = sim::builtin_default_scenario();
      const sim::SizingResult direct = sim::find_replicas(src, sim::parse_slo(z->sloText()), o);
      QCOMPARE(direct.replicas, row.result.replicas);
      QCOMPARE(direct.cost_per_month, row.result.cost_per_month);
      const std::string cmd = z->cliCommand(i);
      const std::string out = run_cli(cmd.substr(std::string("kvfleet ").size()));
      const std::string want = "replicas needed: " + std::to_string(row.result.replicas) + " (";
      QVERIFY2(out.find(want) != std::string::npos, (cmd + "\n" + out).c_str());
      // What the fleet serves at the answer, in requests/s and tokens/s, as the CLI prints it.
      std::smatch m;
      QVERIFY2(
          std::regex_search(out, m, std::regex(R"(: (\S+) requests/s, (\S+) output tokens/s)")),
          out.c_str());
      QVERIFY(std::fabs(std::stod(m[1]) / row.result.requests_per_s - 1) < 1e-3);
      QVERIFY(std::fabs(std::stod(m[2]) / row.result.output_tokens_per_s - 1) < 1e-3);
      QVERIFY(z->table()->item(static_cast<int>(i), 3)->text().contains("requests/s"));
      QCOMPARE(z->table()->item(static_cast<int>(i), 3)->data(kvfleet::gui::kNumberRole).toDouble(),
               row.result.requests_per_s);
    }
    // An L40S costs nothing here unless priced: both rows are priced at $2.50 per GPU-hour.
    QVERIFY(z->table()->item(0, 4)->text().startsWith("$"));
    if (const char* shots = std::getenv("KVFLEET_SCREENSHOT_DIR")) {
      w.resize(1400, 860);
      w.tabs()->setCurrentWidget(z);
      w.show();
      QTest::qWait(300);
      QVERIFY(w.grab().save(QDir(shots).filePath("gui_sizing_requests.png")));
    }
  }

  void sizingForOutputTokensPerSecondIsTheRateThatOffersThem() {
    // The target in output tokens/s: sized as kvfleet size --metric output_tokens_per_s, the
    // rate it became in the tooltip.
    MainWindow w;
    QVERIFY(w.setField("workload.num_requests", "2000"));
    SizingView* z = w.sizingView();
    z->setTarget(30000, "output tokens/s");
    z->setSlo(2.0, 0.1, 1.0, 1.0);
    z->setReplicates(1);
    z->setVariants("", "");
    QSignalSpy done(z, &SizingView::finished);
    QVERIFY(z->size());
    QVERIFY(done.wait(300000));
    QCOMPARE(static_cast<int>(z->rows().size()), 1);
    const auto& row = z->rows()[0];
    QVERIFY2(row.error.empty(), row.error.c_str());
    QCOMPARE(row.result.target_output_tokens_per_s, 30000.0);
    QVERIFY(row.result.output_tokens_per_request > 0);
    const std::string cmd = z->cliCommand(0);
    QVERIFY2(cmd.find("--metric output_tokens_per_s") != std::string::npos, cmd.c_str());
    const std::string out = run_cli(cmd.substr(std::string("kvfleet ").size()));
    const std::string want = "replicas needed: " + std::to_string(row.result.replicas) + " (";
    QVERIFY2(out.find(want) != std::string::npos, (cmd + "\n" + out).c_str());
    QVERIFY2(z->table()->item(0, 3)->toolTip().contains("output tokens per request"),
             qPrintable(z->table()->item(0, 3)->toolTip()));
  }

  void theArchitectsQuestionInOneScreen() {
    // How many H100 vs L40S for 2,000 concurrent chat users at TTFT p99 <= 2 s, TPOT p99 <=
    // 50 ms, <= 1% timeouts, and what does each cost per month? (chat-100-users.yaml with 4,000
    // conversations, 3 seeds, the presets' list prices.) Each row equals kvfleet size.
    MainWindow w;
    QVERIFY(w.openScenario(KVFLEET_SOURCE_DIR "/scenarios/conversations/chat-100-users.yaml"));
    QVERIFY(w.setField("workload.num_sessions", "4000"));
    SizingView* z = w.sizingView();
    z->setTarget(2000, "users");
    // Rejections at most 5%: with full history the longest conversations outgrow the context
    // (about 2% of turns at any fleet size), which no number of GPUs changes.
    z->setSlo(2.0, 0.05, 1.0, 5.0);
    z->setReplicates(3);
    z->setPrice(0);  // the scenario's price, else the GPU preset's list price
    z->setVariants("pools[0].gpu", "H100-SXM, L40S");
    QSignalSpy done(z, &SizingView::finished);
    QVERIFY(z->size());
    QVERIFY(done.wait(600000));
    QCOMPARE(static_cast<int>(z->rows().size()), 2);
    for (std::size_t i = 0; i < z->rows().size(); ++i) {
      const auto& r = z->rows()[i].result;
      QVERIFY2(z->rows()[i].error.empty() && r.not_met.empty(),
               (z->rows()[i].error + r.not_met).c_str());
      QVERIFY2(r.price_source.find("list price") != std::string::npos, r.price_source.c_str());
      const std::string cmd = z->cliCommand(i);
      const std::string out = run_cli(cmd.substr(std::string("kvfleet ").size()));
      char want[160];
      std::snprintf(want, sizeof want, "replicas needed: %d (", r.replicas);
      QVERIFY2(out.find(want) != std::string::npos, (cmd + "\n" + out).c_str());
      std::snprintf(want, sizeof want, "$%.0f per month", r.cost_per_month);
      QVERIFY2(out.find(want) != std::string::npos, (cmd + "\n" + out).c_str());
      std::printf("architect: %s: %d replicas, $%.0f per month (%s)\n", z->rows()[i].label.c_str(),
                  r.replicas, r.cost_per_month, r.limited_by.c_str());
    }
    if (const char* shots = std::getenv("KVFLEET_SCREENSHOT_DIR")) {
      w.resize(1400, 860);
      w.tabs()->setCurrentWidget(z);
      w.show();
      QTest::qWait(300);
      QVERIFY(w.grab().save(QDir(shots).filePath("gui_sizing.png")));
    }
  }

  void startsOnTheDefaultScenarioWithTooltips() {
    MainWindow w;
    QCOMPARE(w.fieldValue("pools[0].engine.max_num_seqs"), QString("256"));
    const auto edits = w.findChildren<QLineEdit*>();
    bool described = false;
    for (auto* e : edits) described |= e->toolTip().contains("most sequences in one step");
    QVERIFY(described);
  }

  void chartHoldsWhatTheCliPrints() {
    MainWindow w;
    QVERIFY(w.setField("workload.num_requests", "1500"));
    QVERIFY(w.setField("pools[0].engine.max_num_seqs", "64"));
    w.runSweep();
    QVERIFY(wait_finished(w, 120000));
    const auto& spec = w.latencySpec();
    const kvfleet::gui::LoadSweep& sw = w.sweep();
    const auto pts = sw.points();
    QCOMPARE(static_cast<int>(pts.size()), 8);
    // Factor 1.0 is the fourth load: the scenario's own rate.
    const double load = pts[3].load;
    const auto ttft = std::find_if(spec.series.begin(), spec.series.end(),
                                   [](const auto& s) { return s.name == "TTFT p99"; });
    QVERIFY(ttft != spec.series.end());
    QCOMPARE(ttft->x.size(), std::size_t{8});
    const std::string out = run_cli(
        "run --set workload.num_requests=1500 --set pools[0].engine.max_num_seqs=64 --set "
        "workload.arrival.rate_per_s=" +
        std::to_string(load));
    std::smatch m;
    const std::regex row(
        R"(TTFT \(time to first token\)\s+(\S+) (\S+)\s+(\S+) (\S+)\s+(\S+) (\S+)\s+(\S+) (\S+))");
    QVERIFY2(std::regex_search(out, m, row), out.c_str());
    const double cli_p99 = seconds(m[7], m[8]);
    const double gui_p99 = ttft->y[3];
    // The report prints 4 significant digits.
    QVERIFY2(std::fabs(gui_p99 - cli_p99) <= 0.006 * cli_p99 + 1e-4,
             (std::to_string(gui_p99) + " vs " + std::to_string(cli_p99)).c_str());
    if (const char* shot = std::getenv("KVFLEET_SCREENSHOT")) {
      w.resize(1400, 860);
      w.show();
      QTest::qWait(300);
      QVERIFY(w.grab().save(shot));
    }
  }

  void switchingTheContextPolicyImplementationWorksBothWays() {
    // context-policies.yaml names `window` with `turns: 4`: full and summarize must be chosen
    // without "turns: unknown key", and back, each taking its own defaults.
    MainWindow w;
    QVERIFY(w.openScenario(KVFLEET_SOURCE_DIR "/scenarios/conversations/context-policies.yaml"));
    QCOMPARE(w.fieldValue("workload.context_policy.turns"), QString("4"));
    QVERIFY(w.setField("workload.context_policy.impl", "full"));
    QCoreApplication::processEvents();
    QCOMPARE(w.fieldValue("workload.context_policy.impl"), QString("full"));
    QVERIFY(w.setField("workload.context_policy.impl", "summarize"));
    QCoreApplication::processEvents();
    QCOMPARE(w.fieldValue("workload.context_policy.keep_turns"), QString("2"));  // its default
    QVERIFY(w.setField("workload.context_policy.keep_turns", "3"));
    QVERIFY(w.setField("workload.context_policy.impl", "window"));
    QCoreApplication::processEvents();
    QCOMPARE(w.fieldValue("workload.context_policy.impl"), QString("window"));
    QCOMPARE(w.fieldValue("workload.context_policy.keep_turns"), QString(""));
  }

  void openRunsTheFileAndNumbersOutOfRangeAreRefusedAloud() {
    MainWindow w;
    // Open (and Recent) run the file's sweep, as the window does at start; with "Rerun after a
    // change" off (heavy scenarios) they do not.
    w.setAutoRerun(false);
    QVERIFY(w.openAndRun(KVFLEET_SOURCE_DIR "/scenarios/default.yaml"));
    QVERIFY(!w.sweep().running());
    QCOMPARE(w.pointsTable()->table()->rowCount(), 0);
    w.setAutoRerun(true);
    QVERIFY(w.openAndRun(KVFLEET_SOURCE_DIR "/scenarios/default.yaml"));
    QVERIFY(wait_finished(w, 120000));
    QVERIFY(w.pointsTable()->table()->rowCount() > 0);
    // "-3" typed as the SLO is refused by name and the SLO stays (it became 3 s: the "-" was
    // dropped without a word).
    auto* slo = w.findChild<QDoubleSpinBox*>("slo");
    QVERIFY(slo);
    w.show();
    slo->setFocus();
    slo->selectAll();
    QTest::keyClicks(slo, "-3");
    QTest::keyClick(slo, Qt::Key_Return);
    QCOMPARE(slo->value(), 2.0);
    QVERIFY2(w.lastError().contains("SLO line: -3 refused"), qPrintable(w.lastError()));
    // A value in range is taken.
    slo->selectAll();
    QTest::keyClicks(slo, "3");
    QTest::keyClick(slo, Qt::Key_Return);
    QCOMPARE(slo->value(), 3.0);
    // The sizing panel's fields refuse the same way, on its status line.
    auto* ttft = w.sizingView()->findChild<QDoubleSpinBox*>("TTFT p99 at most");
    QVERIFY(ttft);
    w.tabs()->setCurrentWidget(w.sizingView());
    ttft->setFocus();
    ttft->selectAll();
    QTest::keyClicks(ttft, "-5");
    QTest::keyClick(ttft, Qt::Key_Return);
    QCOMPARE(ttft->value(), 2000.0);
    QVERIFY2(w.sizingView()->status().contains("TTFT p99 at most: -5 refused"),
             qPrintable(w.sizingView()->status()));
  }

  void refusedWorkIsShownStaleCurvesSaySoAndOpenClearsTheViews() {
    // Full history refuses the longest conversations' turns (context overflow): the Points
    // table shows them, as many as `kvfleet run` reports at the same load.
    MainWindow w;
    QVERIFY(w.openScenario(KVFLEET_SOURCE_DIR "/scenarios/conversations/context-policies.yaml"));
    QVERIFY(w.setField("workload.context_policy.impl", "full"));
    QCoreApplication::processEvents();
    QVERIFY(w.setField("workload.num_sessions", "60"));
    // At most 60 users (2 x 30): more would have no conversation to hold (a load beyond the
    // workload, refused since this test once ran 300 users on 60 conversations).
    QVERIFY(w.setField("workload.users", "30"));
    w.runSweep();
    QVERIFY(wait_finished(w, 120000));
    QTableWidget* t = w.pointsTable()->table();
    const int refused = column(t, "refused turns (context)");
    const int rejected = column(t, "rejected");
    QVERIFY(refused >= 0 && rejected >= 0 && column(t, "goodput (%)") >= 0);
    QCOMPARE(t->item(3, 0)->text(), QString("30"));  // factor 1: the scenario's own load
    const std::string out =
        run_cli(std::string("run ") + KVFLEET_SOURCE_DIR +
                "/scenarios/conversations/context-policies.yaml --set "
                "workload.context_policy.impl=full --set workload.num_sessions=60 --set "
                "workload.users=30");
    std::smatch m;
    QVERIFY2(std::regex_search(out, m, std::regex(R"((\d+) rejected\b)")), out.c_str());
    QCOMPARE(t->item(3, rejected)->text(), QString::fromStdString(m[1]));
    QVERIFY2(std::regex_search(out, m, std::regex(R"(context_overflow (\d+))")), out.c_str());
    QCOMPARE(t->item(3, refused)->text(), QString::fromStdString(m[1]));
    QVERIFY(t->item(3, refused)->text().toInt() > 0);
    // Every declared counter has a column, named by its declaration, with the report's value.
    for (const auto& tot : kvfleet::sim::summary_totals())
      QVERIFY2(column(t, QString::fromStdString(tot.label + " (" + tot.unit + ")")) >= 0,
               tot.name.c_str());
    const int steps = column(t, "Engine steps (steps)");
    QVERIFY2(std::regex_search(out, m, std::regex(R"(\n  steps +(\d+) steps)")), out.c_str());
    QCOMPARE(t->item(3, steps)->text(), QString::fromStdString(m[1]));
    QVERIFY(!QString::fromStdString(w.latencySpec().title).contains("stale"));
    QVERIFY(QString::fromStdString(w.latencySpec().title).contains("Llama-3-8B on L40S"));
    // On the chart too: the loads with refused requests are marked, and the scenario's load.
    QCOMPARE(w.latencySpec().markers.size(), std::size_t{1});
    QCOMPARE(w.latencySpec().markers[0].x.size(), std::size_t{8});  // 2.8% refused at every load
    QCOMPARE(*w.latencySpec().x_mark, 30.0);
    QCOMPARE(QString::fromStdString(w.latencySpec().x_label), QString("Users"));
    if (const char* shots = std::getenv("KVFLEET_SCREENSHOT_DIR")) {
      w.resize(1400, 860);
      w.show();
      for (int tab : {0, 4}) {
        w.tabs()->setCurrentIndex(tab);
        QTest::qWait(200);
        QVERIFY(w.grab().save(QString(shots) + QString("/gui_refused_tab%1.png").arg(tab)));
      }
    }

    // A field changes: the curves say they are stale until the next run.
    QVERIFY(w.setField("pools[0].engine.max_num_seqs", "64"));
    QVERIFY(QString::fromStdString(w.latencySpec().title).contains("stale"));

    // Open: nothing of the previous scenario stays.
    QVERIFY(w.openScenario(KVFLEET_SOURCE_DIR "/scenarios/default.yaml"));
    QCOMPARE(t->rowCount(), 0);
    for (const auto& s : w.latencySpec().series) QVERIFY(s.x.empty());
    QCOMPARE(QString::fromStdString(w.latencySpec().x_label), QString("Arrival rate (requests/s)"));
    QVERIFY(!QString::fromStdString(w.latencySpec().title).contains("stale"));
  }

  void capacityIsInterpolatedBetweenThePointsAroundTheSlo() {
    using kvfleet::gui::LoadPoint;
    auto point = [](double load, double ttft_p99, std::int64_t rejected) {
      LoadPoint p;
      p.load = load;
      p.done = p.ok = true;
      p.summary.requests = 100;
      p.summary.ok = 100 - rejected;
      p.summary.rejected = rejected;
      p.summary.ttft.p99 = ttft_p99;
      return p;
    };
    const auto* ttft = kvfleet::gui::find_compare_metric("TTFT p99");
    QVERIFY(ttft);
    // Latency crosses 2 s between loads 20 (1 s) and 30 (4 s): halfway on a log scale, 25.
    auto c = kvfleet::gui::estimate_capacity({point(10, 0.5, 0), point(20, 1, 0), point(30, 4, 0)},
                                             *ttft, 2.0, 1.0);
    QCOMPARE(c.value, 25.0);
    QCOMPARE(c.lo, 20.0);
    QCOMPARE(c.hi, 30.0);
    QCOMPARE(QString::fromStdString(c.limited_by), QString("latency"));
    // Rejections past 1% at load 30 (0% at 20, 4% at 30): a quarter of the way, 22.5.
    c = kvfleet::gui::estimate_capacity({point(20, 1, 0), point(30, 1, 4)}, *ttft, 2.0, 1.0);
    QCOMPARE(c.value, 22.5);
    QCOMPARE(QString::fromStdString(c.limited_by), QString("rejections"));
    // Requests the client gave up on count as refused (issue 36: with client.timeout_s set,
    // 6-25% timed out at every load and the table said "at least 300", limited by nothing).
    {
      auto timing_out = [&](double load, std::int64_t timed_out) {
        LoadPoint p = point(load, 1, 0);
        p.summary.timed_out = timed_out;
        p.summary.ok = 100 - timed_out;
        return p;
      };
      c = kvfleet::gui::estimate_capacity({timing_out(20, 0), timing_out(30, 4)}, *ttft, 2.0, 1.0);
      QCOMPARE(c.value, 22.5);
      QCOMPARE(QString::fromStdString(c.limited_by), QString("rejections"));
      c = kvfleet::gui::estimate_capacity({timing_out(20, 7), timing_out(300, 25)}, *ttft, 2.0,
                                          1.0);
      QVERIFY(c.below && !c.beyond);
    }
    c = kvfleet::gui::estimate_capacity({point(20, 3, 0)}, *ttft, 2.0, 1.0);
    QVERIFY(c.below);
    c = kvfleet::gui::estimate_capacity({point(20, 1, 0), point(40, 1, 0)}, *ttft, 2.0, 1.0);
    QVERIFY(c.beyond);
    QCOMPARE(c.value, 40.0);
  }

  void pinsAreNamedByWhatDiffersRemovableAndBecomeAComparison() {
    MainWindow w;
    QVERIFY(w.setField("workload.num_requests", "300"));
    w.runSweep();
    QVERIFY(wait_finished(w, 120000));
    w.pinRun();
    QVERIFY(w.setField("pools[0].engine.max_num_seqs", "32"));
    w.runSweep();
    QVERIFY(wait_finished(w, 120000));
    w.pinRun();
    QCOMPARE(w.pins().size(), std::size_t{2});
    // Named by what differs from the current scenario, in the pin's own values.
    QCOMPARE(QString::fromStdString(w.pinLabel(0)), QString("Max running sequences 256"));
    QCOMPARE(QString::fromStdString(w.pinLabel(1)), QString("same settings"));
    auto dashed = [&] {
      std::vector<std::string> names;
      for (const auto& s : w.latencySpec().series)
        if (s.dashed) names.push_back(s.name);
      return names;
    };
    QCOMPARE(dashed().size(), std::size_t{2});  // one curve per pin, not four
    QCOMPARE(QString::fromStdString(dashed()[0]),
             QString("pin: Max running sequences 256 (TTFT p99)"));
    // A field changed: the pins' names follow, in the list and in the legend alike.
    w.setAutoRerun(false);
    QVERIFY(w.setField("pools[0].engine.max_num_seqs", "64"));
    QCOMPARE(QString::fromStdString(w.pinLabel(1)), QString("Max running sequences 32"));
    for (std::size_t i = 0; i < w.pins().size(); ++i) {
      QCOMPARE(w.pinList()->item(static_cast<int>(i))->text(),
               QString::fromStdString(w.pinLabel(i)));
      QCOMPARE(QString::fromStdString(dashed()[i]),
               QString::fromStdString("pin: " + w.pinLabel(i) + " (TTFT p99)"));
    }
    QVERIFY(w.setField("pools[0].engine.max_num_seqs", "32"));
    w.setAutoRerun(true);
    if (const char* shots = std::getenv("KVFLEET_SCREENSHOT_DIR")) {
      w.resize(1600, 1000);
      w.show();
      w.tabs()->setCurrentIndex(0);
      QTest::qWait(300);
      QVERIFY(w.grab().save(QString(shots) + "/gui_pins.png"));
    }
    QVERIFY(w.renamePin(1, "limit 32"));
    QCOMPARE(QString::fromStdString(w.pinLabel(1)), QString("limit 32"));
    QVERIFY(w.setPinVisible(0, false));
    QCOMPARE(dashed().size(), std::size_t{1});
    QVERIFY(w.setPinVisible(0, true));
    QVERIFY(w.removePin(1));
    QCOMPARE(w.pins().size(), std::size_t{1});
    // One click: the pins and the current settings side by side.
    QVERIFY(w.comparePins());
    QVERIFY(QTest::qWaitFor([&] { return !w.compare().running(); }, 120000));
    QCOMPARE(w.compare().variants().size(), std::size_t{2});
    QCOMPARE(QString::fromStdString(w.compare().variants()[0].label),
             QString("Max running sequences 256"));
    QCOMPARE(QString::fromStdString(w.compare().variants()[1].label), QString("current settings"));
    // The pinned settings reran give the pinned curve again.
    const auto pinned = w.pins()[0].points;
    const auto rerun = w.compare().variants()[0].sweep->points();
    QCOMPARE(rerun.size(), pinned.size());
    for (std::size_t i = 0; i < rerun.size(); ++i)
      QCOMPARE(rerun[i].summary.ttft.p99, pinned[i].summary.ttft.p99);
  }

  void aChangedFieldRerunsAfterAPauseAndErrorsUseThePanelsWords() {
    MainWindow w;
    QVERIFY(w.setField("workload.num_requests", "300"));
    w.runSweep();
    QVERIFY(wait_finished(w, 120000));
    const double before = w.sweep().points()[3].summary.ttft.p99;
    QVERIFY(w.setField("pools[0].engine.max_num_seqs", "4"));
    QVERIFY(w.rerunPending());
    QVERIFY(QString::fromStdString(w.latencySpec().title).contains("stale"));
    // After the pause the sweep reruns by itself; the curves are current again.
    QVERIFY(QTest::qWaitFor(
        [&] {
          const auto pts = w.sweep().points();
          return !w.rerunPending() && !w.sweep().running() && !pts.empty() && pts[3].done;
        },
        60000));
    QVERIFY(!QString::fromStdString(w.latencySpec().title).contains("stale"));
    QVERIFY(w.sweep().points()[3].summary.ttft.p99 != before);  // 4 sequences at a time: slower
    // Off for heavy scenarios: nothing reruns.
    w.setAutoRerun(false);
    QVERIFY(w.setField("pools[0].engine.max_num_seqs", "8"));
    QVERIFY(!w.rerunPending());
    // A refused value is named in the panel's words, not as a command line.
    QVERIFY(!w.setField("pools[0].engine.max_num_seqs", "abc"));
    QVERIFY2(!w.lastError().contains("--set"), qPrintable(w.lastError()));
    // The declaration's label, not the key.
    QVERIFY2(w.lastError().startsWith("Max running sequences:"), qPrintable(w.lastError()));
  }

  void aChangedFieldRerunsTheComparisonTheCompareBoxHolds() {
    // Rerun after a change reruns the comparison the Compare box holds now, not the last one
    // run (issue 36: it reran the previous comparison).
    MainWindow w;
    QVERIFY(w.setField("workload.num_requests", "300"));
    QVERIFY(w.runCompare("pools[0].engine.max_num_seqs", {"32", "64"}));
    QVERIFY(QTest::qWaitFor([&] { return !w.compare().running(); }, 120000));
    w.setCompareBox("pools[0].engine.max_num_seqs", {"16", "32", "64"});
    w.setAutoRerun(true);
    QVERIFY(w.setField("workload.num_requests", "301"));
    QVERIFY(w.rerunPending());
    QVERIFY(QTest::qWaitFor(
        [&] {
          return !w.rerunPending() && !w.compare().running() && w.compare().variants().size() == 3;
        },
        120000));
    std::vector<std::string> ran;
    for (const auto& v : w.compare().variants()) ran.push_back(v.value);
    QCOMPARE(ran, (std::vector<std::string>{"16", "32", "64"}));
  }

  void labelsFitInARealWindowAtTwoSizes() {
    // The real window (Xvfb, not offscreen rendering): at 1600×1000 and 1280×800, on every tab,
    // every chart's axis titles fit along their axis and its title fits across the chart.
    if (QGuiApplication::platformName() == "offscreen")
      QSKIP("needs a real window: ctest runs this under Xvfb (gui_real_window)");
    MainWindow w;
    QVERIFY(w.openScenario(KVFLEET_SOURCE_DIR "/scenarios/conversations/context-policies.yaml"));
    w.setAutoRerun(false);
    QVERIFY(w.setField("workload.num_sessions", "60"));
    QVERIFY(w.setField("workload.users", "30"));  // 2 x 30 users: within its 60 conversations
    // First a load sweep (every view full), then a comparison (the latency tab's longest title
    // and the capacity table).
    for (const bool compare : {false, true}) {
      if (compare) {
        QVERIFY(w.runCompare("workload.context_policy.impl", {"full", "window", "summarize"}));
        QVERIFY(QTest::qWaitFor([&] { return !w.compare().running(); }, 120000));
      } else {
        w.runSweep();
        QVERIFY(wait_finished(w, 120000));
      }
      QCoreApplication::processEvents();
      for (const QSize size : {QSize(1600, 1000), QSize(1280, 800)}) {
        w.resize(size);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        for (int tab = 0; tab < (compare ? 1 : w.tabs()->count()); ++tab) {
          w.tabs()->setCurrentIndex(tab);
          QTest::qWait(150);
          check_labels(w, size, tab);
          if (const char* shots = std::getenv("KVFLEET_SCREENSHOT_DIR")) {
            const QString name = QString("/gui_real_%1x%2_tab%3%4.png")
                                     .arg(size.width())
                                     .arg(size.height())
                                     .arg(tab)
                                     .arg(compare ? "_compare" : "");
            QVERIFY(w.grab().save(QString(shots) + name));
          }
        }
      }
    }
  }

  // Every chart on the current tab: its axis titles fit along their axis, its title across it.
  static void check_labels(MainWindow& w, QSize size, int tab) {
    for (QChartView* v : w.tabs()->currentWidget()->findChildren<QChartView*>()) {
      if (!v->isVisible() || !v->chart()) continue;
      QChart* c = v->chart();
      const QRectF plot = c->plotArea();
      const QString where = QString("%1×%2, tab '%3', chart '%4'")
                                .arg(size.width())
                                .arg(size.height())
                                .arg(w.tabs()->tabText(tab))
                                .arg(c->title());
      for (QAbstractAxis* a : c->axes()) {
        const int need = QFontMetrics(a->titleFont()).horizontalAdvance(a->titleText());
        const double room = a->orientation() == Qt::Vertical ? plot.height() : plot.width();
        QVERIFY2(need <= room, qPrintable(where + ": axis title '" + a->titleText() +
                                          QString("' needs %1 px, has %2").arg(need).arg(room)));
      }
      // Qt elides a title longer than the chart's width inside its margins.
      const int title = QFontMetrics(c->titleFont()).horizontalAdvance(c->title());
      const int room = c->size().width() - c->margins().left() - c->margins().right();
      QVERIFY2(title <= room,
               qPrintable(where + QString(": title needs %1 px, has %2").arg(title).arg(room)));
    }
  }

  void workedExampleCapacitiesAgreeWithKvfleetCapacity() {
    // docs/gui.md's question: how many users per L40S under full, window and summarize, with
    // max_num_seqs 32 and 128? The compare table's capacity for each variant brackets what
    // `kvfleet capacity --slo ttft_p99=2s,reject_rate=1%` finds for it by bisection.
    MainWindow w;
    QVERIFY(w.openScenario(KVFLEET_SOURCE_DIR "/scenarios/conversations/context-policies.yaml"));
    w.setAutoRerun(false);
    for (const char* seqs : {"32", "128"}) {
      QVERIFY(w.setField("pools[0].engine.max_num_seqs", seqs));
      QVERIFY(w.runCompare("workload.context_policy.impl", {"full", "window", "summarize"}));
      QVERIFY(QTest::qWaitFor([&] { return !w.compare().running(); }, 120000));
      QCoreApplication::processEvents();
      // The table's capacities come from kvfleet capacity's own search, run after the sweeps.
      QVERIFY(QTest::qWaitFor([&] { return !w.capacitySearch().running(); }, 300000));
      QCoreApplication::processEvents();
      if (const char* shots = std::getenv("KVFLEET_SCREENSHOT_DIR")) {
        w.resize(1600, 1000);
        w.show();
        w.tabs()->setCurrentIndex(0);
        QTest::qWait(300);
        QVERIFY(w.grab().save(QString(shots) + "/gui_worked_seqs" + seqs + ".png"));
      }
      QCOMPARE(QString::fromStdString(w.capacitySlo()), QString("ttft_p99=2s,refused_rate=1%"));
      for (std::size_t v = 0; v < 3; ++v) {
        const std::string policy = w.compare().variants()[v].value;
        const std::string out =
            run_cli(std::string("capacity ") + KVFLEET_SOURCE_DIR +
                    "/scenarios/conversations/context-policies.yaml --metric users --slo "
                    "ttft_p99=2s,refused_rate=1% --replicates 1 --step-sensitivity 0 --set "
                    "workload.context_policy.impl=" +
                    policy + " --set pools[0].engine.max_num_seqs=" + seqs);
        std::smatch m;
        QVERIFY2(std::regex_search(out, m, std::regex(R"(workload\.users = (\S+) )")), out.c_str());
        const double cli = std::stod(m[1]);
        const auto c = w.variantCapacity(v);
        QVERIFY(c.bisected);
        // The same number as the command line: not read off the load grid.
        if (cli > 0)
          QCOMPARE(w.capacityTable()->item(static_cast<int>(v), 1)->text(),
                   QString::fromStdString(m[1].str()));
        const std::string what = policy + ", max_num_seqs " + seqs + ": kvfleet capacity " +
                                 m[1].str() + ", compare table lo " + std::to_string(c.lo) +
                                 " hi " + std::to_string(c.hi);
        if (cli == 0) {
          QVERIFY2(c.below, what.c_str());  // misses already at the lowest load
        } else {
          QVERIFY2(!c.below && !c.beyond, what.c_str());
          QVERIFY2(c.lo <= cli && cli < c.hi, what.c_str());
        }
        std::printf("worked example: %s; bisected %.4g\n", what.c_str(), c.value);
        if (!c.below && !c.beyond) {  // the crossing is marked on the chart at the capacity
          bool marked = false;
          for (const auto& mk : w.latencySpec().markers) {
            for (std::size_t i = 0; mk.crossing && i < mk.x.size(); ++i)
              marked |= std::fabs(mk.x[i] - c.value) < 1e-9 && mk.y[i] == 2.0;
          }
          QVERIFY2(marked, what.c_str());
        }
      }
    }
  }

  void everyWordOnScreenComesFromADeclarationNotAKey() {
    // Labels, lists, tables, chart titles, axes and legends after a comparison of a conversation
    // scenario: no raw scenario or output key ("num_sessions", "time_to_first_token_p99_s")
    // anywhere but in what the user types. Labels come from the declarations (Attr::label).
    MainWindow w;
    QVERIFY(w.openScenario(KVFLEET_SOURCE_DIR "/scenarios/conversations/context-policies.yaml"));
    QVERIFY(w.setField("workload.num_sessions", "40"));
    QVERIFY(w.setField("workload.users", "10"));
    w.setAutoRerun(false);
    QVERIFY(w.runCompare("workload.context_policy.impl", {"full", "window", "summarize"}));
    QVERIFY(QTest::qWaitFor([&] { return !w.compare().running(); }, 300000));
    for (const auto& v : w.compare().variants()) QVERIFY(!v.sweep->points().empty());
    // The Compare box says what ran, by the parameter's label, however it was asked for.
    bool box_says_it = false, values_say_it = false;
    for (auto* c : w.findChildren<QComboBox*>())
      box_says_it |= c->isEditable() && c->currentText() == "Context policy";
    for (auto* e : w.findChildren<QLineEdit*>())
      values_say_it |= e->text() == "full, window, summarize";
    QVERIFY(box_says_it && values_say_it);
    w.pinRun();
    QVERIFY(w.setField("pools[0].engine.max_num_seqs", "48"));
    std::vector<QString> shown;
    for (auto* l : w.findChildren<QLabel*>()) shown.push_back(l->text());
    for (auto* c : w.findChildren<QCheckBox*>()) shown.push_back(c->text());
    for (auto* c : w.findChildren<QComboBox*>())
      for (int i = 0; i < c->count(); ++i) shown.push_back(c->itemText(i));
    for (auto* l : w.findChildren<QListWidget*>())
      for (int i = 0; i < l->count(); ++i) shown.push_back(l->item(i)->text());
    for (auto* t : w.findChildren<QTableWidget*>()) {
      for (int c = 0; c < t->columnCount(); ++c)
        if (t->horizontalHeaderItem(c)) shown.push_back(t->horizontalHeaderItem(c)->text());
      for (int r = 0; r < t->rowCount(); ++r)
        for (int c = 0; c < t->columnCount(); ++c)
          if (t->item(r, c)) shown.push_back(t->item(r, c)->text());
    }
    for (auto* v : w.findChildren<QChartView*>()) {
      shown.push_back(v->chart()->title());
      for (auto* a : v->chart()->axes()) shown.push_back(a->titleText());
      for (auto* s : v->chart()->series()) shown.push_back(s->name());
    }
    // A declared value ("fp8_e4m3", as vLLM spells it) is a value, not a key.
    std::set<QString> values;
    for (const auto& row : kvfleet::sim::scenario_parameters())
      for (const auto& c : row.choices) values.insert(QString::fromStdString(c));
    const QRegularExpression key(R"(\b[a-z][a-z0-9]*_[a-z0-9_]+\b)");
    bool named_by_declaration = false;
    for (const QString& text : shown) {
      if (std::getenv("KVFLEET_SHOW_WORDS")) std::printf("shown: %s\n", qPrintable(text));
      if (values.count(text)) continue;
      QVERIFY2(!key.match(text).hasMatch(), qPrintable("a raw key on screen: " + text));
      named_by_declaration |= text.contains("Max running sequences");
    }
    QVERIFY(named_by_declaration);  // the panel's field and the pin's name
    const auto names = [&] {
      std::vector<std::string> n;
      for (const auto& v : w.compare().variants()) n.push_back(v.label);
      return n;
    }();
    QCOMPARE(names.size(), std::size_t{3});
    QCOMPARE(QString::fromStdString(names[1]), QString("window (turns kept 4)"));
  }

  void wordsForKeysWithAndWithoutLabels() {
    using namespace kvfleet::gui;
    // A labelled key: its label; a unit the label names is not repeated, another one is.
    QCOMPARE(QString::fromStdString(key_label("pools[1].engine.max_num_seqs")),
             QString("Max running sequences"));
    QCOMPARE(QString::fromStdString(value_label("pools[0].engine.max_num_seqs", "32")),
             QString("Max running sequences 32"));
    QCOMPARE(QString::fromStdString(value_label("pools[0].engine.block_size", "32")),
             QString("KV block size 32 tokens"));
    QCOMPARE(QString::fromStdString(with_unit("Concurrent users", "users")),
             QString("Concurrent users"));
    QCOMPARE(QString::fromStdString(with_unit("Client timeout", "s")),
             QString("Client timeout (s)"));
    // A parameter of a labelled section: the section's label and its own name.
    QCOMPARE(QString::fromStdString(key_label("workload.turns.mean")),
             QString("Turns per conversation, mean"));
    // An implementation: its section's label and the implementation's name.
    QCOMPARE(QString::fromStdString(setting_label("workload.context_policy.impl", "window")),
             QString("Context policy window"));
    // Nothing labels it: its last part in words, with its declared unit.
    QCOMPARE(QString::fromStdString(setting_label("pools[0].engine.max_model_len", "4096")),
             QString("max model len 4096 tokens"));
    QCOMPARE(QString::fromStdString(inline_label("workload.context_policy.turns")),
             QString("turns kept"));
    QCOMPARE(QString::fromStdString(inline_label("pools[0].engine.kv_cache_dtype")),
             QString("KV precision"));
  }

  void compareModeDrawsOneLabelledCurveFamilyPerValue() {
    // The architect's question: full, window and summarize side by side. Each curve's TTFT p99
    // at each load equals kvfleet run's for that policy at that load.
    MainWindow w;
    QVERIFY(w.openScenario(KVFLEET_SOURCE_DIR "/scenarios/conversations/context-policies.yaml"));
    QVERIFY(w.setField("workload.num_sessions", "60"));
    QVERIFY(w.setField("workload.users", "30"));  // 2 x 30 users: within its 60 conversations
    QVERIFY(!w.runCompare("workload.context_policy.impl", {"full"}));  // one value: refused
    // A value the scenario refuses gets its own row, saying why in the panel's words (not the
    // command line's); the others run. Every value refused: nothing runs, and the error says so.
    QVERIFY(!w.runCompare("workload.context_policy.impl", {"fancy", "nope"}));
    QVERIFY2(w.lastError().contains("every value is refused"), qPrintable(w.lastError()));
    QVERIFY(w.runCompare("workload.context_policy.impl", {"full", "fancy"}));
    {
      QTableWidget* refused = w.capacityTable();
      QCOMPARE(refused->rowCount(), 2);
      QCOMPARE(refused->item(1, 0)->text(), QString("fancy"));
      QCOMPARE(refused->item(1, 1)->text(), QString("refused"));
      QVERIFY2(refused->item(1, 5)->text().contains("fancy") &&
                   !refused->item(1, 5)->text().contains("--set"),
               qPrintable(refused->item(1, 5)->text()));
      w.cancelSweep();
      QVERIFY(QTest::qWaitFor([&] { return !w.compare().running(); }, 120000));
    }
    QVERIFY(w.runCompare("workload.context_policy.impl", {"full", "window", "summarize"}));
    QVERIFY(QTest::qWaitFor([&] { return !w.compare().running(); }, 120000));
    QCoreApplication::processEvents();
    QVERIFY(w.setMetric("TTFT p99"));
    const auto& spec = w.latencySpec();
    QCOMPARE(QString::fromStdString(spec.y_label), QString("TTFT p99 (s)"));
    QCOMPARE(QString::fromStdString(spec.x_label), QString("Users"));
    std::vector<std::string> names;
    for (const auto& s : spec.series) {
      if (s.name == spec.y_limit_label) continue;
      names.push_back(s.name);
      QCOMPARE(s.x.size(), std::size_t{8});
      for (std::size_t i = 0; i < s.x.size(); ++i) {
        char users[32];
        std::snprintf(users, sizeof users, "%g", s.x[i]);
        const std::string policy = s.name.substr(0, s.name.find(' '));  // "window (turns kept 4)"
        const std::string out = run_cli(
            std::string("run ") + KVFLEET_SOURCE_DIR +
            "/scenarios/conversations/context-policies.yaml --set workload.context_policy.impl=" +
            policy + " --set workload.num_sessions=60 --set workload.users=" + users);
        std::smatch m;
        const std::regex row(
            R"(TTFT \(time to first token\)\s+(\S+) (\S+)\s+(\S+) (\S+)\s+(\S+) (\S+)\s+(\S+) (\S+))");
        QVERIFY2(std::regex_search(out, m, row), out.c_str());
        const double cli = seconds(m[7], m[8]);
        QVERIFY2(std::fabs(s.y[i] - cli) <= 0.0006 * cli + 1e-4,
                 (s.name + " at " + users + " users: " + std::to_string(s.y[i]) + " vs " +
                  std::to_string(cli))
                     .c_str());
      }
    }
    // Each labelled by its value and that implementation's parameters, in the declarations' words
    // with their units.
    QCOMPARE(names, (std::vector<std::string>{
                        "full", "window (turns kept 4)",
                        "summarize (summarise at 4000 tokens, turns kept verbatim 2)"}));
    if (const char* shots = std::getenv("KVFLEET_SCREENSHOT_DIR")) {
      w.resize(1600, 1000);
      w.show();
      w.tabs()->setCurrentIndex(0);
      QTest::qWait(300);
      QVERIFY(w.grab().save(QString(shots) + "/gui_compare.png"));
    }
    // The crossings are marked: window and summarize cross the 2 s line within the loads tried?
    // Whatever crosses is marked on the SLO line at its capacity.
    for (const auto& mk : spec.markers) {
      if (!mk.crossing) continue;
      for (std::size_t i = 0; i < mk.x.size(); ++i) QCOMPARE(mk.y[i], 2.0);
    }
    // One capacity row per variant, named as the curves.
    QTableWidget* cap = w.capacityTable();
    QCOMPARE(cap->rowCount(), 3);
    QCOMPARE(cap->item(0, 0)->text(), QString("full"));
    // Each capacity carries the expected error of the cost model that priced it (the same text
    // as the report's and kvfleet capacity's, from sim/metrics/fidelity).
    const int last = cap->columnCount() - 1;
    QCOMPARE(cap->horizontalHeaderItem(last)->text(), QString("cost model's expected error"));
    const auto e = kvfleet::sim::expected_error("roofline", false);
    QVERIFY(cap->item(0, last)->text().contains(QString("TPOT ±%1%").arg(100 * e.tpot, 0, 'f', 1)));
    // Exported as numbers: the capacity (with its bound), the range between loads as two
    // columns, per GPU; text only where the table holds text.
    {
      const QString csv_path = QDir::temp().filePath("kvfleet_gui_capacity.csv");
      w.tabs()->setCurrentIndex(0);
      QVERIFY(w.exportCurrentTable(csv_path).isEmpty());
      std::ifstream csv(csv_path.toStdString());
      std::string header, row;
      std::getline(csv, header);
      QVERIFY2(header.find(" (bound)") != std::string::npos, header.c_str());
      bool exact = false;
      for (int r = 0; std::getline(csv, row); ++r) {
        QVERIFY2(row.find(" – ") == std::string::npos, row.c_str());
        const auto c = w.variantCapacity(static_cast<std::size_t>(r));
        exact = exact || (c.known && !c.below && !c.beyond);
        // The variant's name may be quoted and hold commas: the capacity follows its last quote.
        const std::size_t name_end = row[0] == '"' ? row.find('"', 1) + 1 : row.find(',');
        const std::size_t at = name_end + 1, next = row.find(',', at);
        const std::string bound = row.substr(next + 1, row.find(',', next + 1) - next - 1);
        QVERIFY(c.known);
        QCOMPARE(std::stod(row.substr(at, next - at)), c.below ? c.hi : c.value);
        QCOMPARE(QString::fromStdString(bound), QString(c.below    ? "below"
                                                        : c.beyond ? "at least"
                                                                   : ""));
      }
      if (exact)
        QVERIFY2(header.find("between loads (low),between loads (high)") != std::string::npos,
                 header.c_str());
    }
    // The refused share the capacity allows is the panel's: full history, limited by its
    // rejections at 1%, holds to a higher load when 30% may be refused.
    {
      const auto strict = w.variantCapacity(0);
      QCOMPARE(QString::fromStdString(strict.limited_by), QString("rejections"));
      w.setMaxRefused(30);
      const auto loose = w.variantCapacity(0);
      QVERIFY2(!loose.below && loose.value > strict.hi, qPrintable(QString::number(loose.value)));
      QVERIFY(cap->horizontalHeaderItem(1)->text().contains("rejected ≤ 30%"));
      w.setMaxRefused(1);
      QCOMPARE(w.variantCapacity(0).below, strict.below);
    }
    // "at least" stays "at least" per GPU.
    for (int r = 0; r < cap->rowCount(); ++r)
      if (w.variantCapacity(static_cast<std::size_t>(r)).beyond)
        QVERIFY2(cap->item(r, 3)->text().startsWith("at least"),
                 qPrintable(cap->item(r, 3)->text()));
    // Points, Run over time and Fleet show the comparison's runs, each named by its variant,
    // and draw what that variant's sweep holds.
    QVERIFY2(w.pointsTable()->hint().contains("comparison"), qPrintable(w.pointsTable()->hint()));
    {
      std::size_t runs = 0;
      for (const auto& v : w.compare().variants()) runs += v.sweep->points().size();
      QTableWidget* pts = w.pointsTable()->table();
      QCOMPARE(static_cast<std::size_t>(pts->rowCount()), runs);
      QCOMPARE(pts->horizontalHeaderItem(0)->text(), QString("variant"));
      const auto& last = w.compare().variants().back();
      const int row = static_cast<int>(runs) - 1;
      QCOMPARE(pts->item(row, 0)->text(), QString::fromStdString(last.label));
      QCOMPARE(pts->item(row, 1)->text().toDouble(), last.sweep->points().back().load);
      for (kvfleet::gui::RunView* view :
           std::initializer_list<kvfleet::gui::RunView*>{w.timelineView(), w.fleetView()}) {
        QComboBox* pick = view->picker();
        QCOMPARE(static_cast<std::size_t>(pick->count()), runs);
        QVERIFY2(pick->itemText(row).startsWith(QString::fromStdString(last.label) + ", load"),
                 qPrintable(pick->itemText(row)));
        pick->setCurrentIndex(row);
        QVERIFY(!view->topView()->chart()->series().isEmpty());
      }
      // The fleet view's per-replica bars are that variant's replicas at that load.
      const auto* bars = w.fleetView()->topView()->chart();
      QVERIFY(!bars->title().isEmpty());
      if (const char* shots = std::getenv("KVFLEET_SCREENSHOT_DIR")) {
        w.resize(1600, 1000);
        w.show();
        w.tabs()->setCurrentWidget(w.timelineView());
        QTest::qWait(300);
        QVERIFY(w.grab().save(QString(shots) + "/gui_compare_run_over_time.png"));
      }
    }
    // A field changed with auto-rerun off: the comparison on screen says it is stale; leaving a
    // field unchanged is not a change.
    w.setAutoRerun(false);
    QVERIFY(w.setField("workload.num_sessions", "60"));
    QVERIFY(!QString::fromStdString(w.latencySpec().title).contains("stale"));
    QVERIFY(w.setField("workload.num_sessions", "61"));
    QVERIFY2(QString::fromStdString(w.latencySpec().title).contains("stale"),
             w.latencySpec().title.c_str());
    QVERIFY(w.setField("workload.num_sessions", "60"));
    QVERIFY(w.setField("workload.users", "30"));  // 2 x 30 users: within its 60 conversations
    // Goodput: full history refuses the longest conversations' turns, a window does not.
    QVERIFY(w.setMetric("Goodput"));
    const auto& g = w.latencySpec();
    QCOMPARE(QString::fromStdString(g.y_label), QString("Goodput (%)"));
    QVERIFY(g.series[0].y[3] < g.series[1].y[3]);
    // Open clears the comparison.
    QVERIFY(w.openScenario(KVFLEET_SOURCE_DIR "/scenarios/default.yaml"));
    QVERIFY(w.compare().variants().empty());
    QCOMPARE(cap->rowCount(), 0);
  }

  void contextPolicyAndLimitsOnAConversationScenario() {
    MainWindow w;
    const QString path = KVFLEET_SOURCE_DIR "/scenarios/conversations/chat-100-users.yaml";
    QVERIFY(w.openScenario(path));
    QVERIFY(w.setField("workload.context_policy.impl", "window"));
    QCoreApplication::processEvents();  // the panel now shows the window policy's parameters
    QCOMPARE(w.fieldValue("workload.context_policy.turns"), QString("8"));
    QVERIFY(w.setField("workload.context_policy.turns", "6"));
    QVERIFY(w.setField("pools[0].engine.max_num_seqs", "64"));
    QVERIFY(w.setField("workload.num_sessions", "200"));  // 2 x 100 users at most
    w.runSweep();
    QVERIFY(wait_finished(w, 120000));
    const auto pts = w.sweep().points();
    QCOMPARE(w.sweep().key(), std::string("workload.users"));
    const auto& spec = w.latencySpec();
    const auto e2e = std::find_if(spec.series.begin(), spec.series.end(),
                                  [](const auto& s) { return s.name == "E2E p99"; });
    QVERIFY(e2e != spec.series.end());
    // Factor 1 is the scenario's 100 users.
    QCOMPARE(pts[3].load, 100.0);
    const std::string out =
        run_cli(std::string("run ") + KVFLEET_SOURCE_DIR +
                "/scenarios/conversations/chat-100-users.yaml --set "
                "workload.context_policy.impl=window --set workload.context_policy.turns=6 --set "
                "pools[0].engine.max_num_seqs=64 --set workload.num_sessions=200");
    std::smatch m;
    const std::regex row(
        R"(E2E \(end-to-end\)\s+(\S+) (\S+)\s+(\S+) (\S+)\s+(\S+) (\S+)\s+(\S+) (\S+))");
    QVERIFY2(std::regex_search(out, m, row), out.c_str());
    const double cli = seconds(m[7], m[8]);
    QVERIFY2(std::fabs(e2e->y[3] - cli) <= 0.006 * cli + 1e-4,
             (std::to_string(e2e->y[3]) + " vs " + std::to_string(cli)).c_str());

    // The other views hold the runs: timeline, fleet, points table; exports work.
    QCOMPARE(w.pointsTable()->table()->rowCount(), 8);
    {  // each point names what limits it, as the run report does
      QTableWidget* t = w.pointsTable()->table();
      const int col = column(t, "binding resource");
      QVERIFY(col >= 0);
      const QStringList known = {"unsaturated", "memory-bound", "compute-bound", "queue-bound"};
      for (int r = 0; r < t->rowCount(); ++r)
        QVERIFY2(t->item(r, col) && known.contains(t->item(r, col)->text()),
                 qPrintable(QString("row %1").arg(r)));
    }
    const QString dir = QDir::temp().filePath("kvfleet_gui_exports");
    QDir().mkpath(dir);
    w.tabs()->setCurrentIndex(1);  // run over time
    QVERIFY(w.exportCurrentChart(dir + "/timeline.png").isEmpty());
    QVERIFY(QFileInfo(dir + "/timeline.png").size() > 5000);
    w.tabs()->setCurrentWidget(w.pointsTable());
    QVERIFY(w.exportCurrentTable(dir + "/points.csv").isEmpty());
    std::ifstream csv((dir + "/points.csv").toStdString());
    int lines = 0;
    for (std::string l; std::getline(csv, l);) ++lines;
    QCOMPARE(lines, 9);
    w.tabs()->setCurrentIndex(3);  // fleet
    QVERIFY(w.exportCurrentChart(dir + "/fleet.svg").isEmpty());
    if (const char* shots = std::getenv("KVFLEET_SCREENSHOT_DIR")) {
      w.resize(1400, 860);
      w.show();
      for (int tab : {1, 2, 3}) {
        w.tabs()->setCurrentIndex(tab);
        QTest::qWait(200);
        QVERIFY(w.grab().save(QString(shots) + QString("/gui_tab%1.png").arg(tab)));
      }
    }
  }

  void opensASweepFile() {
    MainWindow w;
    const QString dir = QDir::temp().filePath("kvfleet_gui_sweep");
    QDir().mkpath(dir);
    const std::string h5 = (dir + "/s.h5").toStdString();
    run_cli(std::string("sweep ") + KVFLEET_SOURCE_DIR +
            "/scenarios/sweeps/load-vs-max-seqs.yaml --quiet --out " + h5);
    QVERIFY(w.openSweepFile(QString::fromStdString(h5)));
    QCOMPARE(w.sweepFileView()->table()->rowCount(), 30);
    // The file varies max_num_seqs and the rate. Without max_num_seqs as the series, the chart
    // shows one chosen value of it, never their mean.
    auto* v = w.sweepFileView();
    QVERIFY(v->setX("workload.arrival.rate_per_s"));
    QVERIFY(v->setSeries(""));
    QVERIFY(v->setAxisFilter("pools[0].engine.max_num_seqs", "256"));
    QCOMPARE(v->spec().series.size(), std::size_t{1});
    QVERIFY(QString::fromStdString(v->spec().title).contains("max_num_seqs = 256"));
    const auto one = v->spec().series[0].y;
    QVERIFY(v->setAxisFilter("pools[0].engine.max_num_seqs", "(mean over)"));
    QVERIFY(QString::fromStdString(v->spec().note).contains("mean over"));
    QVERIFY(v->spec().series[0].y != one);
    QVERIFY(w.exportCurrentTable(dir + "/sweep.csv").isEmpty());
    // A file that is not a sweep: an error, and the table stays.
    const QString bad = dir + "/bad.h5";
    std::ofstream(bad.toStdString()) << "not hdf5";
    QVERIFY(!w.openSweepFile(bad));
    QVERIFY(w.lastError().contains("bad.h5"));
    QCOMPARE(w.sweepFileView()->table()->rowCount(), 30);
  }

  void cancelStopsMidRun() {
    // One thread, cancelled when the first point arrives: the point then running stops at its
    // next sample and no further point starts (20,000 requests make a point long enough that the
    // sweep cannot finish while the cancel is on its way).
    kvfleet::gui::LoadSweep sweep;
    QSignalSpy first(&sweep, &kvfleet::gui::LoadSweep::pointDone);
    QSignalSpy finished(&sweep, &kvfleet::gui::LoadSweep::finished);
    QVERIFY(sweep.start(kvfleet::sim::builtin_default_scenario(), ".",
                        {"workload.num_requests=20000"}, "workload.arrival.rate_per_s", 36,
                        {0.5, 1, 1.5, 2}, 1));
    QVERIFY(first.wait(60000));
    sweep.cancel();
    QVERIFY(finished.count() > 0 || finished.wait(60000));
    QCOMPARE(finished.front().at(0).toBool(), true);
    int done = 0;
    for (const auto& p : sweep.points()) done += p.done ? 1 : 0;
    QVERIFY(done >= 1);
    QVERIFY(done < 4);
    // And from the window: the Cancel path ends the sweep and leaves the window usable.
    MainWindow w;
    QVERIFY(w.setField("workload.num_requests", "20000"));
    w.runSweep();
    w.cancelSweep();
    QVERIFY(wait_finished(w, 60000));
    QVERIFY(w.setField("pools[0].engine.max_num_seqs", "32"));
  }

  void aCalibrationFileCorrectsThePoolsCostModel() {
    // What kvfleet-calibrate fit writes, taken by the pool on the panel: the cost model becomes
    // `fitted` with the file's factors; another GPU's file is refused and nothing changes.
    QTemporaryDir dir;
    const QString cal = dir.filePath("cal.yaml");
    std::ofstream(cal.toStdString())
        << "kvfleet_calibration: 1\ngpu: H100-SXM\npool:\n"
           "  cost_model: {impl: fitted, adjust: {gemm_bandwidth: 0.8}, step_overhead_s: 0.002}\n"
           "  frontend: {request_s: 0.01}\n";
    const QString other = dir.filePath("a100.yaml");
    std::ofstream(other.toStdString()) << "kvfleet_calibration: 1\ngpu: A100-80GB\npool: {}\n";
    MainWindow w;
    QVERIFY(w.openScenario(KVFLEET_SOURCE_DIR "/scenarios/default.yaml"));
    const std::string before = w.scenario().resolved_yaml;
    QVERIFY(!w.calibratePool(other));
    QVERIFY2(w.lastError().contains("A100-80GB"), qPrintable(w.lastError()));
    QCOMPARE(w.scenario().resolved_yaml, before);
    QVERIFY(!w.hasUnsavedChanges());
    QVERIFY2(w.calibratePool(cal), qPrintable(w.lastError()));
    const YAML::Node pool = YAML::Load(w.scenario().resolved_yaml)["pools"][0];
    QCOMPARE(pool["cost_model"]["impl"].as<std::string>(), std::string("fitted"));
    QCOMPARE(pool["cost_model"]["adjust"]["gemm_bandwidth"].as<double>(), 0.8);
    QCOMPARE(pool["frontend"]["request_s"].as<double>(), 0.01);
    QVERIFY(w.hasUnsavedChanges());
    // A later edit keeps the calibration.
    QVERIFY(w.setField("pools[0].engine.max_num_seqs", "64"));
    QCOMPARE(
        YAML::Load(w.scenario().resolved_yaml)["pools"][0]["cost_model"]["adjust"]["gemm_bandwidth"]
            .as<double>(),
        0.8);
    // Saved, it loads to the scenario on screen.
    const QString saved = dir.filePath("calibrated.yaml");
    QVERIFY(w.saveScenario(saved));
    QCOMPARE(sim::load_scenario_file(saved.toStdString(), {}).resolved_yaml,
             w.scenario().resolved_yaml);
    std::stringstream text;
    text << std::ifstream(saved.toStdString()).rdbuf();
    // The file names the calibration rather than copying its numbers.
    QVERIFY2(text.str().find("calibration: " + cal.toStdString()) != std::string::npos,
             text.str().c_str());
    QVERIFY2(text.str().find("cost_model: {impl: fitted}") != std::string::npos,
             text.str().c_str());
  }

  void badInputKeepsThePreviousState() {
    MainWindow w;
    QVERIFY(!w.setField("pools[0].engine.max_num_seqs", "-5"));
    QVERIFY(w.lastError().contains("max_num_seqs"));
    QCOMPARE(w.fieldValue("pools[0].engine.max_num_seqs"), QString("256"));
    const QString bad = QDir::temp().filePath("kvfleet_gui_bad.yaml");
    std::ofstream(bad.toStdString())
        << "workload: {impl: synthetic, num_requests: 10, input_tokens: {impl: fixed, value: 10},"
           " output_tokens: {impl: fixed, value: 10}}\npools:\n  - engine: {max_num_seqs: many}\n";
    QVERIFY(!w.openScenario(bad));
    QVERIFY2(w.lastError().contains("max_num_seqs"), qPrintable(w.lastError()));
    QCOMPARE(w.fieldValue("pools[0].engine.max_num_seqs"), QString("256"));
  }
};

int main(int argc, char** argv) {
  // Offscreen unless a real display was asked for (the Xvfb run sets QT_QPA_PLATFORM=xcb).
  if (qgetenv("QT_QPA_PLATFORM") != "xcb") qputenv("QT_QPA_PLATFORM", "offscreen");
  qputenv("KVFLEET_GUI_NO_DIALOGS", "1");
  // Recent files go to a settings folder of the test's own, not the user's.
  QTemporaryDir settings;
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, settings.path());
  QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settings.path());
  QApplication app(argc, argv);
  GuiTest t;
  return QTest::qExec(&t, argc, argv);
}

#include "gui_test.moc"

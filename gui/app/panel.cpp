// The scenario panel: one field per parameter, each editor, label, unit and tooltip from the
// parameter's declaration (gui/app/words.h); a changed field is a --set override checked at
// once.
#include <yaml-cpp/yaml.h>
#include <QtCore/QTimer>
#include <QtWidgets/QCheckBox>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QFormLayout>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>

#include <algorithm>

#include "gui/app/main_window.h"
#include "gui/app/words.h"
#include "gui/app/yaml_lookup.h"
#include "sim/core/error.h"
#include "sim/simulation/scenario.h"

namespace kvfleet::gui {

namespace {

// What the panel shows, as --set keys ("pool." stands for the pool chosen above the form); the
// label, editor (check box, list of choices or text), unit, tooltip and range come from the
// parameter declarations (gui/app/words.h).
constexpr const char* kPoolKeys[] = {
    "pool.model",
    "pool.gpu",
    "pool.replicas",
    "pool.tensor_parallel",
    "pool.pipeline_parallel",
    "pool.weight_dtype",
    "pool.engine.kv_cache_dtype",
    "pool.engine.block_size",
    "pool.engine.enable_prefix_caching",
    "pool.engine.max_num_seqs",
    "pool.engine.max_num_batched_tokens",
    "pool.engine.gpu_memory_utilization",
    "router.impl",
};

}  // namespace

namespace {

// The editor of a field: the model and GPU lists (presets and the scenario's own), a check box
// for a boolean, the declared choices, else a line of text.
QWidget* field_editor(const std::string& key, const sim::config::Documenter::Row* row,
                      const YAML::Node& root) {
  auto combo = [](const std::vector<std::string>& items) {
    auto* c = new QComboBox;
    for (const auto& i : items) c->addItem(QString::fromStdString(i));
    return c;
  };
  auto names = [&](const char* section, std::vector<std::string> v) {
    for (const auto& d : root[section]) v.push_back(d["name"].as<std::string>());
    return v;
  };
  if (key.ends_with(".model")) {
    std::vector<std::string> models;
    for (const auto& m : sim::model_presets()) models.push_back(m.name);
    return combo(names("models", models));
  }
  if (key.ends_with(".gpu")) {
    std::vector<std::string> gpus;
    for (const auto& g : sim::gpu_presets()) gpus.push_back(g.name);
    return combo(names("gpus", gpus));
  }
  if (row && row->kind == "boolean") return new QCheckBox;
  if (row && !row->choices.empty()) return combo(row->choices);
  return new QLineEdit;
}

}  // namespace

// `label` is the declaration's (key_label) unless the panel says what the key means here.
void MainWindow::addField(const std::string& key, std::string label, const char* unit_override,
                          const YAML::Node& root) {
  if (label.empty()) label = key_label(key);
  const auto* row = declaration(key);
  QWidget* editor = field_editor(key, row, root);
  // Unit and tooltip: the key's declaration (a component's: its section's).
  std::string unit = unit_override ? unit_override : "";
  if (row) {
    std::string tip = row->description;
    if (!row->unit.empty()) tip += " [" + row->unit + "]";
    if (!row->type.empty()) tip += "\n" + row->type;
    editor->setToolTip(QString::fromStdString(tip + "\nkey: " + key));
    if (!unit_override) unit = row->unit;
  }
  auto* l = new QLabel(QString::fromStdString(with_unit(label, unit)));
  l->setToolTip(editor->toolTip());
  form_->addRow(l, editor);
  fields_.push_back({key, label, editor});
}

void MainWindow::buildPanel() {
  while (form_->rowCount() > 0) form_->removeRow(0);
  fields_.clear();
  const YAML::Node root = YAML::Load(scenario_.resolved_yaml);
  const std::size_t pools = root["pools"].IsSequence() ? root["pools"].size() : 1;
  if (pool_ >= pools) pool_ = 0;
  const std::string pool = "pools[" + std::to_string(pool_) + "]";
  if (pools > 1) {  // any pool can be edited
    auto* c = new QComboBox;
    for (std::size_t p = 0; p < pools; ++p)
      c->addItem(QString::fromStdString(lookup(root, "pools[" + std::to_string(p) + "].name")));
    c->setCurrentIndex(static_cast<int>(pool_));
    connect(
        c, &QComboBox::activated, this, [this](int i) { selectPool(static_cast<std::size_t>(i)); },
        Qt::QueuedConnection);
    form_->addRow(new QLabel("Pool"), c);
  }
  for (const char* k : kPoolKeys) {
    std::string key = k;
    if (key.starts_with("pool.")) key = pool + key.substr(4);
    addField(key, "", nullptr, root);
  }
  if (!lookup(root, "workload.context_policy.impl").empty()) {
    addField("workload.context_policy.impl", "", nullptr, root);
    // The chosen policy's own parameters (window: turns; summarize: threshold, kept turns...).
    const YAML::Node cp = root["workload"]["context_policy"];
    for (auto it = cp.begin(); it != cp.end(); ++it) {
      const std::string k = it->first.as<std::string>();
      if (k == "impl" || !it->second.IsScalar()) continue;
      addField("workload.context_policy." + k, "  " + key_label("workload.context_policy." + k),
               nullptr, root);
    }
  }
  const std::string load = loadKey();
  // The load is the sweep's ×1; requests and conversations are per point of the sweep.
  if (!load.empty()) addField(load, key_label(load) + " at ×1", nullptr, root);
  if (!lookup(root, "workload.num_requests").empty())
    addField("workload.num_requests", key_label("workload.num_requests") + " per point", nullptr,
             root);
  if (!lookup(root, "workload.num_sessions").empty()) {
    addField("workload.num_sessions", key_label("workload.num_sessions") + " per point", nullptr,
             root);
    addField("workload.turns.mean", "", "turns", root);
  }
  refreshFields();
  refillCompareList(load);
  connectFields();
}

// Compare: every field but the load, by its label; any other key may be typed.
void MainWindow::refillCompareList(const std::string& load) {
  const QString previous = compare_key_->currentText();
  compare_key_->clear();
  for (const auto& f : fields_) {
    if (f.key == load) continue;
    compare_key_->addItem(QString::fromStdString(f.label), QString::fromStdString(f.key));
  }
  if (const int i = compare_key_->findText(previous); i >= 0) compare_key_->setCurrentIndex(i);
}

void MainWindow::connectFields() {
  for (auto& f : fields_) {
    const std::string key = f.key;
    if (auto* e = qobject_cast<QLineEdit*>(f.editor)) {
      connect(e, &QLineEdit::editingFinished, this, [this, key, e] { setField(key, e->text()); });
    } else if (auto* c = qobject_cast<QComboBox*>(f.editor)) {
      connect(c, &QComboBox::activated, this, [this, key, c] { setField(key, c->currentText()); });
    } else if (auto* b = qobject_cast<QCheckBox*>(f.editor)) {
      connect(b, &QCheckBox::toggled, this,
              [this, key](bool on) { setField(key, on ? "true" : "false"); });
    }
  }
}

void MainWindow::selectPool(std::size_t p) {
  pool_ = p;
  buildPanel();
}

void MainWindow::refreshFields() {
  const YAML::Node root = YAML::Load(scenario_.resolved_yaml);
  for (auto& f : fields_) {
    const QString v = QString::fromStdString(lookup(root, f.key));
    f.editor->blockSignals(true);
    if (auto* e = qobject_cast<QLineEdit*>(f.editor)) e->setText(v);
    if (auto* c = qobject_cast<QComboBox*>(f.editor)) c->setCurrentText(v);
    if (auto* b = qobject_cast<QCheckBox*>(f.editor)) b->setChecked(v == "true");
    f.editor->blockSignals(false);
  }
}

std::vector<std::string> MainWindow::overrides() const {
  // Edits of fields not on the panel now (another pool's), then the fields as they stand, as
  // --set overrides on the loaded YAML.
  std::vector<std::string> o;
  const YAML::Node root = YAML::Load(scenario_.resolved_yaml);
  for (const auto& [key, value] : edits_)
    if (std::none_of(fields_.begin(), fields_.end(), [&](const Field& f) { return f.key == key; }))
      o.push_back(key + "=" + value);
  for (const auto& f : fields_) o.push_back(f.key + "=" + lookup(root, f.key));
  return o;
}

bool MainWindow::setField(const std::string& key, const QString& value) {
  const auto it =
      std::find_if(fields_.begin(), fields_.end(), [&](const Field& f) { return f.key == key; });
  if (it == fields_.end()) return false;
  // Leaving a field without changing it is not an edit (no rerun, nothing to save).
  if (fieldValue(key) == value) return true;
  // A new implementation brings its own parameters: variant_overrides drops the old one's.
  const bool impl = is_impl_key(key);
  if (!reload(variant_overrides(overrides(), key, value.toStdString()))) return false;
  if (impl)
    std::erase_if(edits_, [&](const auto& e) {
      return e.first.rfind(key.substr(0, key.size() - 4), 0) == 0;
    });
  edits_[key] = value.toStdString();
  changed(setting_label(key, value.toStdString()), impl);
  return true;
}

bool MainWindow::calibratePool(const QString& file) {
  // The calibration corrects the fitted cost model: the pool's model becomes `fitted` (its old
  // model's parameters dropped), the file's settings go under the pool's own.
  const std::string pool = "pools[" + std::to_string(pool_) + "]";
  const std::string impl = pool + ".cost_model.impl";
  std::vector<std::string> o = variant_overrides(overrides(), impl, "fitted");
  o.push_back(pool + ".calibration=" + file.toStdString());
  if (!reload(o)) return false;
  std::erase_if(edits_, [&](const auto& e) { return e.first.starts_with(pool + ".cost_model."); });
  edits_[impl] = "fitted";
  edits_[pool + ".calibration"] = file.toStdString();
  changed(lookup(YAML::Load(scenario_.resolved_yaml), pool + ".name") + ": calibrated by " +
              file.toStdString(),
          false);
  return true;
}

bool MainWindow::reload(const std::vector<std::string>& o) {
  try {
    scenario_ = sim::load_scenario_text(yaml_, file_.toStdString(), base_dir_, o);
  } catch (const sim::InputError& e) {
    showError(QString::fromStdString(panelWords(e)));
    refreshFields();  // back to the last valid values
    return false;
  } catch (const std::exception& e) {
    showError(QString::fromStdString(e.what()));
    refreshFields();
    return false;
  }
  last_error_.clear();
  return true;
}

void MainWindow::changed(const std::string& status, bool rebuild_panel) {
  if (!sweep_.points().empty() || !compare_.variants().empty()) {
    stale_ = true;  // the curves on screen no longer describe the panel: the title says so
  }
  // Pins are named by what differs from the panel: the list and the legend change together.
  refreshPinList();
  if (stale_ || !pins_.empty()) redrawLatency();
  if (auto_rerun_->isChecked() && (!sweep_.points().empty() || !compare_.variants().empty())) {
    rerun_timer_->start();  // restarts the pause on every change
  }
  setWindowModified(true);
  status_->setText(QString::fromStdString(status));
  if (rebuild_panel) {
    // The panel shows the new implementation's parameters. Rebuilt after this signal returns:
    // the editor that emitted it is among the widgets replaced.
    QMetaObject::invokeMethod(
        this, [this] { buildPanel(); }, Qt::QueuedConnection);
  } else {
    refreshFields();
  }
  redrawMemory();
}

QString MainWindow::fieldValue(const std::string& key) const {
  return QString::fromStdString(lookup(YAML::Load(scenario_.resolved_yaml), key));
}

}  // namespace kvfleet::gui

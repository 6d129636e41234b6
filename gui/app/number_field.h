#pragma once
// A number field that refuses out loud what it cannot hold. QDoubleSpinBox drops a keystroke that
// would take its text out of range, so "-3" typed into an SLO became "3 s" without a word; here
// such text can be typed, and on Enter or on leaving the field it is refused through
// `on_refused` (in words naming the field, what was typed and the range) and the field keeps its
// previous value.
#include <QtWidgets/QDoubleSpinBox>

#include <functional>

namespace kvfleet::gui {

class NumberField : public QDoubleSpinBox {
 public:
  // `label` names the field in refusals ("SLO line").
  NumberField(const QString& label, double lo, double hi, double value, int decimals,
              const QString& suffix, const QString& tip, QWidget* parent = nullptr);
  std::function<void(const QString& message)> on_refused;

  QValidator::State validate(QString& text, int& pos) const override;
  void fixup(QString& text) const override;

 private:
  QString label_;
};

}  // namespace kvfleet::gui

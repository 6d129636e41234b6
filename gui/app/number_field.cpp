#include "gui/app/number_field.h"

#include <QtCore/QLocale>

namespace kvfleet::gui {

NumberField::NumberField(const QString& label, double lo, double hi, double value, int decimals,
                         const QString& suffix, const QString& tip, QWidget* parent)
    : QDoubleSpinBox(parent), label_(label) {
  setRange(lo, hi);
  setDecimals(decimals);
  setValue(value);
  setSuffix(suffix);
  setToolTip(tip);
}

namespace {

// The number typed, without the suffix; "-" and "+" alone are a number being typed.
QString bare(const QString& text, const QString& suffix) {
  QString t = text;
  if (!suffix.isEmpty() && t.endsWith(suffix.trimmed())) t.chop(suffix.trimmed().size());
  return t.trimmed();
}

}  // namespace

QValidator::State NumberField::validate(QString& text, int& pos) const {
  const QValidator::State s = QDoubleSpinBox::validate(text, pos);
  if (s != QValidator::Invalid) return s;
  // A number the range does not hold (a sign, too many digits, too large) may be typed: it is
  // refused by name when the edit ends, instead of the keystroke vanishing.
  const QString t = bare(text, suffix());
  bool ok = false;
  locale().toDouble(t, &ok);
  if (ok || t == "-" || t == "+") return QValidator::Intermediate;
  return QValidator::Invalid;
}

void NumberField::fixup(QString& text) const {
  QDoubleSpinBox::fixup(text);
  int pos = 0;
  QString probe = text;
  if (QDoubleSpinBox::validate(probe, pos) == QValidator::Acceptable) return;
  if (!on_refused) return;
  const QString typed = bare(text, suffix());
  on_refused(label_ + ": " + (typed.isEmpty() ? QString("an empty field") : typed) +
             " refused: it must be from " + textFromValue(minimum()) + " to " +
             textFromValue(maximum()) + suffix() + "; kept " + textFromValue(value()) + suffix());
}

}  // namespace kvfleet::gui

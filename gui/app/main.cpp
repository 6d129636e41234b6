// kvfleet-gui: explore how context policy and concurrency limits shift latency curves.
//   kvfleet-gui [SCENARIO.yaml]
#include <QtWidgets/QApplication>

#include "gui/app/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  kvfleet::gui::MainWindow w;
  if (argc > 1) w.openScenario(QString::fromLocal8Bit(argv[1]));
  w.show();
  w.runSweep();  // the default scenario's curves appear without opening anything
  return app.exec();
}

// SPDX-License-Identifier: Apache-2.0
#include "dialog.hpp"

#include <obs-frontend-api.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QPushButton>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <chrono>
#include <future>

#include "dialog_model.hpp"
#include "rdmavideo/log.hpp"

namespace rdmavideo::obs {
namespace {

class OutputDialog : public QDialog {
 public:
  explicit OutputDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle("rdmavideo Output");
    setAttribute(Qt::WA_DeleteOnClose);
    auto* form = new QFormLayout();
    destinations_ = new QLineEdit();
    destinations_->setPlaceholderText("recorder:5000, monitor:5000");
    destinations_->setToolTip(
        "Receivers, host:port or the names they advertise, comma-separated: each gets every "
        "frame");
    form->addRow("Receivers", destinations_);
    // The receivers DNS-SD finds: choosing one adds its name to the field.
    found_ = new QComboBox();
    found_->setToolTip("Receivers advertised on the network (DNS-SD): choose one to add it");
    auto* rescan = new QPushButton("Refresh");
    auto* found_row = new QHBoxLayout();
    found_row->addWidget(found_, 1);
    found_row->addWidget(rescan);
    form->addRow("On the network", found_row);
    transport_ = new QComboBox();
    for (const auto& [label, value] : transport_choices())
      transport_->addItem(QString::fromStdString(label), QString::fromStdString(value));
    form->addRow("Transport", transport_);
    key_file_ = new QLineEdit();
    key_file_->setPlaceholderText("none: no authentication");
    auto* browse = new QPushButton("Browse...");
    auto* key_row = new QHBoxLayout();
    key_row->addWidget(key_file_);
    key_row->addWidget(browse);
    form->addRow("Shared key file", key_row);
    name_ = new QLineEdit();
    name_->setMaxLength(63);
    form->addRow("Stream name", name_);
    auto* tracks_row = new QHBoxLayout();
    for (size_t i = 0; i < tracks_.size(); ++i) {
      tracks_[i] = new QCheckBox(QString::number(i + 1));
      tracks_row->addWidget(tracks_[i]);
    }
    tracks_row->addStretch();
    form->addRow("Audio tracks", tracks_row);
    reconnect_ = new QCheckBox("Reconnect a lost receiver");
    form->addRow("", reconnect_);
    start_with_obs_ = new QCheckBox("Start with OBS");
    form->addRow("", start_with_obs_);

    status_ = new QLabel();
    status_->setWordWrap(true);
    table_ = new QTableWidget(0, 6);
    table_->setHorizontalHeaderLabels(
        {"Receiver", "Transport", "State", "Frames", "Drops", "GB/s"});
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    start_ = new QPushButton("Start");
    auto* close = new QPushButton("Close");
    auto* buttons = new QHBoxLayout();
    buttons->addWidget(start_);
    buttons->addStretch();
    buttons->addWidget(close);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(status_);
    layout->addWidget(table_);
    layout->addLayout(buttons);
    resize(640, 460);

    load();
    for (QLineEdit* edit : {destinations_, key_file_, name_})
      connect(edit, &QLineEdit::editingFinished, this, [this] { save(); });
    connect(transport_, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { save(); });
    for (QCheckBox* box : tracks_) connect(box, &QCheckBox::toggled, this, [this] { save(); });
    connect(reconnect_, &QCheckBox::toggled, this, [this] { save(); });
    connect(start_with_obs_, &QCheckBox::toggled, this, [this] { save(); });
    connect(browse, &QPushButton::clicked, this, [this] {
      const QString path = QFileDialog::getOpenFileName(this, "Shared key file", key_file_->text());
      if (!path.isEmpty()) {
        key_file_->setText(path);
        save();
      }
    });
    connect(start_, &QPushButton::clicked, this, [this] {
      save();
      if (const std::string why = toggle_output(); !why.empty())
        status_->setText(QString::fromStdString(why));
    });
    connect(close, &QPushButton::clicked, this, &QDialog::close);
    connect(rescan, &QPushButton::clicked, this, [this] { look_for_receivers(); });
    connect(found_, qOverload<int>(&QComboBox::activated), this, [this](int index) {
      const std::string entry = found_->itemData(index).toString().toStdString();
      if (entry.empty()) return;
      destinations_->setText(
          QString::fromStdString(with_receiver(destinations_->text().toStdString(), entry)));
      save();
    });
    browse_timer_ = new QTimer(this);
    connect(browse_timer_, &QTimer::timeout, this, [this] { show_found(); });
    look_for_receivers();
    auto* timer = new QTimer(this);
    connect(timer, &QTimer::timeout, this, [this] { refresh(); });
    timer->start(1000);
    refresh();
  }

 private:
  void load() {
    const DialogFields f = load_fields();
    destinations_->setText(QString::fromStdString(f.destinations));
    const int t = transport_->findData(QString::fromStdString(f.transport));
    transport_->setCurrentIndex(t < 0 ? 0 : t);
    key_file_->setText(QString::fromStdString(f.key_file));
    name_->setText(QString::fromStdString(f.name));
    for (size_t i = 0; i < f.tracks.size(); ++i) tracks_[i]->setChecked(f.tracks[i]);
    reconnect_->setChecked(f.reconnect);
    start_with_obs_->setChecked(f.start_with_obs);
  }

  void save() {
    DialogFields f;
    f.destinations = destinations_->text().toStdString();
    f.transport = transport_->currentData().toString().toStdString();
    f.key_file = key_file_->text().toStdString();
    f.name = name_->text().toStdString();
    for (size_t i = 0; i < f.tracks.size(); ++i) f.tracks[i] = tracks_[i]->isChecked();
    f.reconnect = reconnect_->isChecked();
    f.start_with_obs = start_with_obs_->isChecked();
    save_fields(f);
  }

  // A browse takes about a second: on a thread of its own, its result taken up by a timer.
  void look_for_receivers() {
    if (browsing_.valid()) return;
    found_->clear();
    found_->addItem("Looking for receivers...");
    found_->setEnabled(false);
    browsing_ = std::async(std::launch::async, [] { return found_receivers(browse_receivers()); });
    browse_timer_->start(100);
  }

  void show_found() {
    if (browsing_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    browse_timer_->stop();
    const auto rows = browsing_.get();
    found_->clear();
    found_->addItem(rows.size() == 1 && rows[0].entry.empty()
                        ? QString::fromStdString(rows[0].label)
                        : QString("%1 receiver%2 found: choose one to add it")
                              .arg(rows.size())
                              .arg(rows.size() == 1 ? "" : "s"));
    std::string listed;
    for (const auto& row : rows) {
      if (!row.entry.empty()) {
        found_->addItem(QString::fromStdString(row.label), QString::fromStdString(row.entry));
      }
      listed += (listed.empty() ? "" : "; ") + row.label;
    }
    found_->setEnabled(true);
    log().info("rdmavideo dialog: on the network: {}", listed);
  }

  void refresh() {
    const DialogStatus st = dialog_status();
    start_->setText(st.active ? "Stop" : "Start");
    status_->setText(QString::fromStdString(st.text));
    table_->setRowCount(static_cast<int>(st.rows.size()));
    for (int row = 0; row < static_cast<int>(st.rows.size()); ++row) {
      for (int c = 0; c < 6; ++c) {
        table_->setItem(row, c, new QTableWidgetItem(QString::fromStdString(st.rows[row][c])));
      }
    }
  }

  QLineEdit* destinations_;
  QComboBox* found_;
  QTimer* browse_timer_;
  std::future<std::vector<FoundReceiver>> browsing_;  // waited for when the dialog goes
  QComboBox* transport_;
  QLineEdit* key_file_;
  QLineEdit* name_;
  std::array<QCheckBox*, 6> tracks_;
  QCheckBox* reconnect_;
  QCheckBox* start_with_obs_;
  QLabel* status_;
  QTableWidget* table_;
  QPushButton* start_;
};

QPointer<OutputDialog> g_dialog;

}  // namespace

void open_dialog() {
  if (!g_dialog) g_dialog = new OutputDialog(static_cast<QWidget*>(obs_frontend_get_main_window()));
  g_dialog->show();
  g_dialog->raise();
  g_dialog->activateWindow();
}

void close_dialog() {
  if (g_dialog) g_dialog->close();
}

}  // namespace rdmavideo::obs

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

#include <fmt/format.h>

#include "output.hpp"
#include "profile.hpp"

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
    destinations_->setToolTip("Receivers, host:port, comma-separated: each gets every frame");
    form->addRow("Receivers", destinations_);
    transport_ = new QComboBox();
    transport_->addItem("Automatic (RDMA where there is a route, else TCP)", "auto");
    transport_->addItem("TCP", "tcp");
    transport_->addItem("RDMA (verbs)", "verbs");
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
    for (int i = 0; i < 6; ++i) {
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
    connect(start_with_obs_, &QCheckBox::toggled, this, [](bool on) { set_start_with_obs(on); });
    connect(browse, &QPushButton::clicked, this, [this] {
      const QString path = QFileDialog::getOpenFileName(this, "Shared key file", key_file_->text());
      if (!path.isEmpty()) {
        key_file_->setText(path);
        save();
      }
    });
    connect(start_, &QPushButton::clicked, this, [this] {
      save();
      obs_output_t* output = main_output();
      if (!output) return;
      if (obs_output_active(output)) {
        obs_output_stop(output);
      } else if (!obs_output_start(output)) {
        const char* why = obs_output_get_last_error(output);
        status_->setText(QString("Not started: ") + (why ? why : "see OBS's log"));
      }
    });
    connect(close, &QPushButton::clicked, this, &QDialog::close);
    auto* timer = new QTimer(this);
    connect(timer, &QTimer::timeout, this, [this] { refresh(); });
    timer->start(1000);
    refresh();
  }

 private:
  void load() {
    obs_data_t* s = load_settings();
    obs_output_t* output = main_output();
    obs_data_t* defaults = output ? obs_output_get_settings(output) : nullptr;  // with the defaults
    obs_data_t* from = defaults ? defaults : s;
    destinations_->setText(obs_data_get_string(from, "destinations"));
    const int t = transport_->findData(QString(obs_data_get_string(from, "transport")));
    transport_->setCurrentIndex(t < 0 ? 0 : t);
    key_file_->setText(obs_data_get_string(from, "key_file"));
    name_->setText(obs_data_get_string(from, "name"));
    const auto mask = obs_data_get_int(from, "tracks");
    for (int i = 0; i < 6; ++i) tracks_[i]->setChecked(mask & (1 << i));
    reconnect_->setChecked(obs_data_get_bool(from, "reconnect"));
    start_with_obs_->setChecked(start_with_obs());
    if (defaults) obs_data_release(defaults);
    obs_data_release(s);
  }

  void save() {
    obs_data_t* s = obs_data_create();
    obs_data_set_string(s, "destinations", destinations_->text().toUtf8().constData());
    obs_data_set_string(s, "transport", transport_->currentData().toString().toUtf8().constData());
    obs_data_set_string(s, "key_file", key_file_->text().toUtf8().constData());
    obs_data_set_string(s, "name", name_->text().toUtf8().constData());
    int mask = 0;
    for (int i = 0; i < 6; ++i) mask |= tracks_[i]->isChecked() ? 1 << i : 0;
    obs_data_set_int(s, "tracks", mask);
    obs_data_set_bool(s, "reconnect", reconnect_->isChecked());
    save_settings(s);
    obs_data_release(s);
  }

  void refresh() {
    obs_output_t* output = main_output();
    const OutputStatus st = status_of(output);
    start_->setText(st.active ? "Stop" : "Start");
    QString text = st.active ? "Sending: " : "Stopped. ";
    if (!st.summary.empty()) text += QString::fromStdString(st.summary);
    if (st.frames > 0) {
      text += QString::fromStdString(
          fmt::format("\n{} frames, {} dropped, {:.2f} GB sent, {:.2f} ms a frame in "
                      "OBS's video callback",
                      st.frames, st.dropped, st.bytes / 1e9,
                      st.callback_ns / 1e6 / static_cast<double>(st.frames)));
    }
    status_->setText(text);
    table_->setRowCount(static_cast<int>(st.destinations.size()));
    int row = 0;
    for (const auto& d : st.destinations) {
      const QString cells[] = {
          QString::fromStdString(d.endpoint), QString::fromStdString(d.transport),
          QString::fromStdString(d.state),    QString::number(d.frames),
          QString::number(d.dropped),         QString::number(d.gbps, 'f', 3)};
      for (int c = 0; c < 6; ++c) table_->setItem(row, c, new QTableWidgetItem(cells[c]));
      ++row;
    }
  }

  QLineEdit* destinations_;
  QComboBox* transport_;
  QLineEdit* key_file_;
  QLineEdit* name_;
  QCheckBox* tracks_[6];
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

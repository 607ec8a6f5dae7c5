// SPDX-License-Identifier: Apache-2.0
// The OBS plugin for Windows (rdmavideo-obs.dll, cross-built with MinGW-w64) under wine, into
// the Linux rdmavideo-recv over 127.0.0.1. What it links and exports is read from the DLL
// (objdump); it is loaded and driven by the project's own libobs host over stand-ins for
// obs.dll and obs-frontend-api.dll (tests/windows/obs): frames in NV12 and in P010 with PQ
// colour, two mix tracks, start and stop, a receiver that is not there, "start with OBS" and
// the Tools menu's dialog. The stand-ins implement the libobs calls the plugin makes: this
// checks the plugin's logic and its use of the libobs ABI, not OBS for Windows itself.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "output_checks.hpp"
#include "process.hpp"
#include "windows_build.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const fs::path kPlugin = RDMAVIDEO_WINDOWS_BUILD_DIR "/obs-plugin/rdmavideo-obs.dll";
const fs::path kHost = RDMAVIDEO_WINDOWS_BUILD_DIR "/tests/windows/obs/obs_host_windows.exe";

class WindowsObsPlugin : public ::testing::Test {
 protected:
  void SetUp() override { use_windows_build({kPlugin, kHost}); }

  // The host under wine with `args`; its JSON, or a failure and an empty object.
  nlohmann::json host(const std::string& destinations, std::vector<std::string> args) {
    std::vector<std::string> a{RDMAVIDEO_WINE_RUN, kHost.string(),   "--plugin",
                               kPlugin.string(),   "--destinations", destinations};
    a.insert(a.end(), args.begin(), args.end());
    const auto out = dir_ / "host.stdout";
    Process p(a, dir_ / "host.stderr", Redirect{"", out.string()});
    const auto code = p.wait(120s);
    EXPECT_EQ(code, 0) << p.stderr_text();
    std::string text = read_file(out);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    try {
      return nlohmann::json::parse(text.substr(text.rfind('\n') + 1));  // the last line
    } catch (const std::exception&) {
      ADD_FAILURE() << "no JSON from the host: " << text << p.stderr_text();
      return nlohmann::json::object();
    }
  }

  TempDir dir_;
};

std::vector<std::string> objdump_lines(const std::string& pattern) {
  const std::string text = capture("x86_64-w64-mingw32-objdump -p '" + kPlugin.string() + "'");
  std::vector<std::string> lines;
  const std::regex re(pattern);
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, re)) lines.push_back(m[1]);
  }
  return lines;
}

TEST_F(WindowsObsPlugin, ImportsOnlyObsAndWindowsAndExportsOnlyTheModuleEntryPoints) {
  // Windows's own DLLs, and OBS's two: no MinGW runtime (libstdc++, libwinpthread) to ship.
  const std::set<std::string> allowed{
      "obs.dll",      "obs-frontend-api.dll", "kernel32.dll", "user32.dll",   "gdi32.dll",
      "advapi32.dll", "bcrypt.dll",           "ws2_32.dll",   "comdlg32.dll", "msvcrt.dll"};
  std::set<std::string> imports;
  for (auto name : objdump_lines(R"(DLL Name: (\S+))")) {
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    imports.insert(name);
  }
  EXPECT_TRUE(imports.count("obs.dll") && imports.count("obs-frontend-api.dll"));
  for (const auto& name : imports) EXPECT_TRUE(allowed.count(name)) << "imports " << name;
  const auto exports = objdump_lines(R"(^\s+\[\s*\d+\] (\S+)$)");
  const std::vector<std::string> want{
      "obs_current_module",     "obs_module_description", "obs_module_load", "obs_module_name",
      "obs_module_set_pointer", "obs_module_unload",      "obs_module_ver"};
  EXPECT_EQ(exports, want);
}

TEST_F(WindowsObsPlugin, P010WithPqColourAndTwoTracksIsRecordedInSync) {
  const auto out = dir_ / "program.mov";
  Receiver recv(
      dir_, {"--output", out.string(), "--quiet", "--stats-json", (dir_ / "recv.json").string()});
  const auto r =
      host(recv.address(), {"--format", "p010", "--colorspace", "2100pq", "--size", "640x360",
                            "--fps", "60", "--tracks", "3", "--seconds", "3.5"});
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  EXPECT_EQ(r["started"], true) << r.dump();
  EXPECT_EQ(r["capturing"], true) << r.dump();
  EXPECT_EQ(r["stop_code"], -1) << r.dump();  // stopped by the host, not by itself
  // 3.5 s: the last flash (at 3 s) has its beep whole after it, never cut off by the end.
  EXPECT_GE(r["frames_fed"].get<int>(), 200) << r.dump();
  // Under wine on a loaded machine a frame's send can take longer than a frame (1280x720 P010
  // lost up to 30 of 180, 640x360 up to 7 of 211): the frames are small, and a dropped frame is
  // counted, never waited for. A stream that blocked or leaked buffers would drop most of them.
  const int dropped = r["stats"]["dropped"].get<int>();
  EXPECT_LE(dropped, r["frames_fed"].get<int>() / 10) << r.dump();
  const auto got = read_json(dir_ / "recv.json");
  // Non-blocking: a frame OBS gives while the link is busy is dropped, never waited for.
  EXPECT_EQ(got["frames"].get<int>() + dropped, r["frames_fed"]) << r.dump() << got.dump();
  EXPECT_EQ(got["pix_fmt"], "p010le");
  EXPECT_EQ(stream_codecs(out), "prores,video\npcm_s24le,audio\npcm_s24le,audio\nunknown,data\n");
  EXPECT_EQ(capture("ffprobe -v error -select_streams v:0 -show_entries "
                    "stream=color_primaries,color_transfer,color_space -of csv=p=0 '" +
                    out.string() + "'"),
            "bt2020nc,smpte2084,bt2020\n");
  // Mix 1 beeps at 1 kHz and mix 2 at 500 Hz, each on the flashes' instants. A beep whose
  // flash frame was dropped has no flash near it: it is one of the dropped, not out of sync.
  for (int track = 0; track < 2; ++track) {
    const auto m = av_sync(out, track);
    ASSERT_TRUE(m.contains("beeps")) << m.dump();
    const int beeps = m["beeps"], unmatched = m["unmatched_beeps"];
    EXPECT_GE(beeps, 4) << m.dump();
    EXPECT_LE(unmatched, dropped) << m.dump();
    EXPECT_GE(beeps - unmatched, 2) << m.dump();  // flashes enough to measure the sync on
    EXPECT_EQ(beeps - unmatched, m["flashes"]) << m.dump();
    EXPECT_LE(m["max_abs_matched_ms"].get<double>(), m["frame_ms"].get<double>() + 0.5) << m.dump();
    EXPECT_NEAR(m["tone_hz"].get<double>(), 1000.0 / (track + 1), 10) << m.dump();
  }
  EXPECT_EQ(got["streams"][0]["audio"][0]["name"], "Track 1");
  EXPECT_EQ(got["streams"][0]["audio"][1]["name"], "Track 2");
}

TEST_F(WindowsObsPlugin, AReceiverThatIsNotThereStopsTheOutputSayingWhy) {
  Receiver gone(dir_, {"--quiet"});
  const std::string address = gone.address();
  gone.process().signal(SIGTERM);
  ASSERT_TRUE(gone.process().wait(30s));
  const auto r = host(address, {"--seconds", "1"});
  EXPECT_EQ(r["started"], true) << r.dump();  // start() returns at once: connecting is a thread's
  EXPECT_EQ(r["capturing"], false) << r.dump();
  EXPECT_EQ(r["stop_code"], -2) << r.dump();  // OBS_OUTPUT_CONNECT_FAILED
  EXPECT_NE(r["last_error"].get<std::string>().find(address), std::string::npos) << r.dump();
  EXPECT_EQ(r["frames_fed"], 0);
}

TEST_F(WindowsObsPlugin, InsideObsItStartsWithObsFromTheProfileAndStopsAtExit) {
  Receiver recv(dir_, {"--quiet", "--stats-json", (dir_ / "recv.json").string()});
  const auto r = host(recv.address(), {"--mode", "obs", "--format", "nv12", "--tracks", "1",
                                       "--seconds", "2", "--name", "studio"});
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  EXPECT_EQ(r["capturing"], true) << r.dump();
  EXPECT_EQ(r["tools_items"], nlohmann::json::array({"&rdmavideo Output"})) << r.dump();
  const auto got = read_json(dir_ / "recv.json");
  EXPECT_EQ(got["streams"][0]["name"], "studio") << got.dump();
  EXPECT_EQ(got["pix_fmt"], "nv12");
  EXPECT_GE(got["frames"].get<int>(), 100) << got.dump();
  EXPECT_NE(recv.process().stderr_text().find("the sender ended it"), std::string::npos);
}

TEST_F(WindowsObsPlugin, TheDialogSavesItsSettingsStartsShowsTheStreamAndStops) {
  Receiver recv(dir_, {"--quiet", "--stats-json", (dir_ / "recv.json").string()});
  // Wine runs no DNS-SD: the dialog's drop-down is given a stand-in browse result, in
  // rdmavideo-doctor --discover --json's form.
  const auto stand_in = dir_ / "found.json";
  {
    std::ofstream f(stand_in);
    f << R"({"receivers": [{"name": "studio recorder", "address": "10.0.0.2", "port": 7800,
             "txt": {"proto": "3", "key": "required", "key_id": "0123456789abcdef",
                     "streams_free": "3", "max_streams": "4"}}]})";
  }
  ::setenv("RDMAVIDEO_OBS_BROWSE_STAND_IN", stand_in.c_str(), 1);
  const auto r = host(recv.address(), {"--mode", "dialog", "--tracks", "2", "--seconds", "2",
                                       "--name", "from the dialog"});
  ::unsetenv("RDMAVIDEO_OBS_BROWSE_STAND_IN");
  ASSERT_EQ(recv.process().wait(60s), 0) << recv.process().stderr_text();
  EXPECT_EQ(r["dialog_parent_is_main_window"], true) << r.dump();
  EXPECT_EQ(r["found"],
            nlohmann::json::array(
                {"1 receiver found: choose one to add it",
                 "studio recorder (10.0.0.2:7800, 3 of 4 streams free, key 0123456789abcdef)"}))
      << r.dump();
  EXPECT_TRUE(r["destinations_after_choice"].get<std::string>().ends_with("studio recorder"))
      << r.dump();
  EXPECT_EQ(r["capturing"], true) << r.dump();
  // What the user typed and ticked, in the profile.
  const nlohmann::json want{
      {"destinations", recv.address()}, {"transport", "tcp"}, {"key_file", ""},
      {"name", "from the dialog"},      {"tracks", 2},        {"reconnect", false}};
  EXPECT_EQ(r["saved_settings"], want) << r.dump();
  // While it sent: the button, the status and the receiver's row.
  EXPECT_EQ(r["dialog_button"], "Stop");
  EXPECT_TRUE(r["dialog_status"].get<std::string>().starts_with("Sending: 1280x720 nv12"))
      << r.dump();
  EXPECT_NE(r["dialog_table"].get<std::string>().find(recv.address() + "\ttcp\tstreaming"),
            std::string::npos)
      << r.dump();
  EXPECT_TRUE(r["dialog_status_after"].get<std::string>().starts_with("Stopped."));
  EXPECT_EQ(r["dialog_closed"], true);
  const auto got = read_json(dir_ / "recv.json");
  EXPECT_EQ(got["streams"][0]["name"], "from the dialog");
  ASSERT_EQ(got["streams"][0]["audio"].size(), 1u) << got.dump();
  EXPECT_EQ(got["streams"][0]["audio"][0]["name"], "Track 2");
  EXPECT_EQ(got["frames"].get<int>() + r["stats"]["dropped"].get<int>(), r["frames_fed"]);
}

}  // namespace
}  // namespace rdmavideo::testing

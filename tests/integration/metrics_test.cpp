// SPDX-License-Identifier: Apache-2.0
// rdmavideo-recv --metrics, scraped over HTTP while four authenticated streams run and an
// impostor is refused, and parsed as Prometheus text: every family has its HELP and TYPE,
// the gauges and counters describe what the streams did, histograms are cumulative, and
// the refusal is counted by its reason.
#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <regex>
#include <set>

#include "process.hpp"
#include "rdmavideo/auth.hpp"

namespace rdmavideo::testing {
namespace {

using namespace std::chrono_literals;

// "name{labels}" -> value, and the families HELP and TYPE declared.
struct Scrape {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
  double at(const std::string& key) const {
    auto it = samples.find(key);
    if (it == samples.end()) throw std::runtime_error("no sample " + key);
    return it->second;
  }
};

Scrape parse(const std::string& text) {
  Scrape s;
  std::istringstream in(text);
  std::set<std::string> helped;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# HELP ", 0) == 0) {
      helped.insert(line.substr(7, line.find(' ', 7) - 7));
    } else if (line.rfind("# TYPE ", 0) == 0) {
      const auto name = line.substr(7, line.find(' ', 7) - 7);
      s.types[name] = line.substr(line.find(' ', 7) + 1);
      EXPECT_TRUE(helped.count(name)) << "TYPE without HELP: " << name;
    } else if (!line.empty()) {
      const auto space = line.rfind(' ');
      EXPECT_NE(space, std::string::npos) << line;
      s.samples[line.substr(0, space)] = std::stod(line.substr(space + 1));
      const auto name = line.substr(0, line.find_first_of("{ "));
      const std::regex family("(.*)_(bucket|sum|count)$");
      std::smatch m;
      const bool known = s.types.count(name) ||
                         (std::regex_match(name, m, family) && s.types.count(m[1].str()));
      EXPECT_TRUE(known) << "sample of an undeclared family: " << line;
    }
  }
  return s;
}

std::string stream_labels(const std::string& text, const std::string& name) {
  std::smatch m;
  const std::regex r("rdmavideo_stream_up\\{(stream=\"\\d+\",name=\"" + name + "\"[^}]*)\\}");
  if (!std::regex_search(text, m, r)) throw std::runtime_error("no stream " + name);
  return m[1].str();
}

TEST(Metrics, ScrapedDuringAFourStreamRunAndParsed) {
  TempDir dir;
  const auto key = dir / "shared.key";
  ASSERT_TRUE(auth::create_key_file(key));
  Receiver recv(dir, {"--max-streams", "4", "--serve", "--verify", "--quiet", "--key-file",
                      key.string(), "--metrics", "127.0.0.1:0"});
  auto port = recv.process().wait_for_stderr(R"(metrics at http://127\.0\.0\.1:(\d+)/metrics)", 10s);
  ASSERT_TRUE(port) << recv.process().stderr_text();
  httplib::Client http("127.0.0.1", std::stoi(*port));

  Process impostor({RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--testsrc", "--quiet"},
                   dir / "impostor.stderr");
  ASSERT_EQ(impostor.wait(10s), 1) << impostor.stderr_text();

  std::vector<std::unique_ptr<Process>> senders;
  for (int i = 1; i <= 4; ++i) {
    senders.push_back(std::make_unique<Process>(
        std::vector<std::string>{RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--testsrc",
                                 "-s", "320x240", "--frames", "180", "--realtime", "--checksum",
                                 "--quiet", "--key-file", key.string(), "--name",
                                 "cam" + std::to_string(i), "--stats-json",
                                 (dir / ("cam" + std::to_string(i) + ".json")).string()},
        dir / ("cam" + std::to_string(i) + ".stderr")));
  }
  // While all four run: scrape until the receiver reports them.
  std::string text;
  Scrape during;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto response = http.Get("/metrics");
    ASSERT_TRUE(response) << "no answer from --metrics";
    ASSERT_EQ(response->status, 200);
    EXPECT_NE(response->get_header_value("Content-Type").find("version=0.0.4"), std::string::npos);
    text = response->body;
    during = parse(text);
    if (during.samples.count("rdmavideo_receiver_streams") &&
        during.at("rdmavideo_receiver_streams") == 4)
      break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(during.at("rdmavideo_receiver_streams"), 4) << text;
  EXPECT_EQ(during.types["rdmavideo_stream_frames_total"], "counter");
  EXPECT_EQ(during.types["rdmavideo_stream_latency_seconds"], "histogram");
  EXPECT_EQ(during.at("rdmavideo_receiver_connections_refused_total{reason=\"auth_failed\"}"), 1);
  EXPECT_EQ(during.at("rdmavideo_receiver_connections_in_handshake"), 0);
  const double used = during.at("rdmavideo_receiver_memory_used_bytes");
  EXPECT_GE(used, 4 * 8 * 155648.0) << "four rings of 8 slots of 152 KiB";
  EXPECT_LE(used, during.at("rdmavideo_receiver_memory_budget_bytes"));
  for (int i = 1; i <= 4; ++i) {
    const auto labels = stream_labels(text, "cam" + std::to_string(i));
    EXPECT_EQ(during.at("rdmavideo_stream_up{" + labels + "}"), 1);
    EXPECT_EQ(during.at("rdmavideo_stream_ring_slots{" + labels + "}"), 8);
    EXPECT_LE(during.at("rdmavideo_stream_ring_slots_filled{" + labels + "}"), 8);
  }

  for (auto& s : senders) ASSERT_EQ(s->wait(60s), 0) << s->stderr_text();
  ASSERT_TRUE(recv.process().wait_for_stderr("\"cam4\"\\] stream [0-9]+ the sender ended it", 10s));
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(recv.process().wait_for_stderr(
        "\"cam" + std::to_string(i) + "\"\\] stream [0-9]+ the sender ended it", 10s));
  }
  auto response = http.Get("/metrics");
  ASSERT_TRUE(response);
  const Scrape after = parse(response->body);
  EXPECT_EQ(after.at("rdmavideo_receiver_streams"), 0);
  EXPECT_EQ(after.at("rdmavideo_receiver_streams_admitted_total"), 4);
  EXPECT_EQ(after.at("rdmavideo_receiver_memory_used_bytes"), 0) << "every ring given back";
  for (int i = 1; i <= 4; ++i) {
    const auto labels = stream_labels(response->body, "cam" + std::to_string(i));
    // What the sender sent (a live sender on a busy machine may drop a late frame).
    const auto sent = read_json(dir / ("cam" + std::to_string(i) + ".json"));
    const double frames = sent["frames"].get<double>();
    EXPECT_GT(frames, 150);
    EXPECT_EQ(after.at("rdmavideo_stream_up{" + labels + "}"), 0);
    EXPECT_EQ(after.at("rdmavideo_stream_frames_total{" + labels + "}"), frames);
    EXPECT_EQ(after.at("rdmavideo_stream_bytes_total{" + labels + "}"), frames * 320 * 240 * 2);
    EXPECT_EQ(after.at("rdmavideo_stream_dropped_frames_total{" + labels + ",cause=\"sender\"}"),
              sent["dropped"].get<double>());
    EXPECT_EQ(after.at("rdmavideo_stream_checksum_failures_total{" + labels + "}"), 0);
    // Cumulative buckets, ending at the count.
    double previous = 0;
    for (const char* le : {"0.0001", "0.001", "0.01", "0.1", "1", "+Inf"}) {
      const double v =
          after.at("rdmavideo_stream_latency_seconds_bucket{" + labels + ",le=\"" + le + "\"}");
      EXPECT_GE(v, previous) << le;
      previous = v;
    }
    EXPECT_EQ(previous, frames);
    EXPECT_EQ(after.at("rdmavideo_stream_latency_seconds_count{" + labels + "}"), frames);
    EXPECT_GT(after.at("rdmavideo_stream_latency_seconds_sum{" + labels + "}"), 0);
  }
  recv.process().signal(SIGTERM);
  EXPECT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
}

}  // namespace
}  // namespace rdmavideo::testing

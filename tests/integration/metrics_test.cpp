// SPDX-License-Identifier: Apache-2.0
// rdmavideo-recv --metrics, scraped over HTTP while four authenticated streams run and an
// impostor is refused, and parsed as Prometheus text: every family has its HELP and TYPE,
// the gauges and counters describe what the streams did, histograms are cumulative, and
// the refusal is counted by its reason. Then the endpoint against hostile clients: a slow
// request that must not hold a stop, an oversized body and header that must not be read into
// memory, and 200 idle connections beside which a scrape is still answered.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <map>
#include <regex>
#include <set>

#include "proc_watch.hpp"
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
      const bool known =
          s.types.count(name) || (std::regex_match(name, m, family) && s.types.count(m[1].str()));
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
  auto port =
      recv.process().wait_for_stderr(R"(metrics at http://127\.0\.0\.1:(\d+)/metrics)", 10s);
  ASSERT_TRUE(port) << recv.process().stderr_text();
  httplib::Client http("127.0.0.1", std::stoi(*port));

  Process impostor({RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--testsrc", "--quiet"},
                   dir / "impostor.stderr");
  ASSERT_EQ(impostor.wait(10s), 1) << impostor.stderr_text();

  std::vector<std::unique_ptr<Process>> senders;
  for (int i = 1; i <= 4; ++i) {
    senders.push_back(std::make_unique<Process>(
        std::vector<std::string>{
            RDMAVIDEO_SEND_BIN, "--connect", recv.address(), "--testsrc", "-s", "320x240",
            "--frames", "180", "--realtime", "--checksum", "--quiet", "--key-file", key.string(),
            "--name", "cam" + std::to_string(i), "--tone", std::to_string(400 + 100 * i),
            "--stats-json", (dir / ("cam" + std::to_string(i) + ".json")).string()},
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
    // Each camera's tone, a track of its stream (four streams, not eight): 180 frames' worth
    // at 48 kHz, every sample counted as dropped since nothing here records audio.
    const std::string track =
        labels + ",track=\"0\",track_name=\"tone " + std::to_string(400 + 100 * i) + " Hz\"";
    EXPECT_EQ(after.at("rdmavideo_stream_audio_samples_total{" + track + "}"), 180 * 48000 / 60);
    EXPECT_EQ(after.at("rdmavideo_stream_audio_dropped_samples_total{" + track + "}"),
              180 * 48000 / 60);
  }
  EXPECT_EQ(after.types.at("rdmavideo_stream_audio_offset_seconds"), "gauge");
  recv.process().signal(SIGTERM);
  EXPECT_EQ(recv.process().wait(30s), 0) << recv.process().stderr_text();
}

// A receiver with --metrics on a free port, and that port.
struct WithMetrics {
  explicit WithMetrics(const TempDir& dir)
      : recv(dir, {"--serve", "--quiet", "--metrics", "127.0.0.1:0"}) {
    auto found =
        recv.process().wait_for_stderr(R"(metrics at http://127\.0\.0\.1:(\d+)/metrics)", 10s);
    if (!found) throw std::runtime_error("no metrics port: " + recv.process().stderr_text());
    port = std::stoi(*found);
  }
  int connect_raw() const {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(fd);
      return -1;
    }
    return fd;
  }
  Receiver recv;
  int port = 0;
};

// rdmavideo-send --metrics, scraped while it sends live into a receiver whose ring is full (its
// output is a pipe nobody reads): the source's and the receiver's drops are there by cause,
// only the causes a full ring gives, and they add up to what the summary says.
TEST(SenderMetrics, DropsByCauseWhileTheReceiverHasNoSlot) {
  TempDir dir;
  Receiver recv(dir, {"--output", "-", "--ring", "2", "--quiet"}, Redirect{"", "", true, false});
  Process send({RDMAVIDEO_SEND_BIN,
                "--connect",
                recv.address(),
                "--transport",
                "tcp",
                "--testsrc",
                "-s",
                "320x180",
                "-r",
                "60",
                "--realtime",
                "--duration",
                "4",
                "--name",
                "cam \"1\"",
                "--metrics",
                "127.0.0.1:0",
                "--quiet",
                "--stats-json",
                (dir / "send.json").string()},
               dir / "send.stderr");
  auto port = send.wait_for_stderr(R"(metrics at http://127\.0\.0\.1:(\d+)/metrics)", 10s);
  ASSERT_TRUE(port) << send.stderr_text();
  std::this_thread::sleep_for(2s);
  httplib::Client http("127.0.0.1", std::stoi(*port));
  auto res = http.Get("/metrics");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const Scrape scrape = parse(res->body);
  const std::string source = R"(name="cam \"1\"")";
  const std::string dest = source + ",destination=\"" + recv.address() + "\",transport=\"tcp\"";
  auto dropped = [&](const std::string& family, const std::string& labels,
                     const std::string& cause) {
    return scrape.at(family + "{" + labels + ",cause=\"" + cause + "\"}");
  };
  EXPECT_EQ(scrape.types.at("rdmavideo_sender_dropped_frames_total"), "counter");
  EXPECT_EQ(scrape.types.at("rdmavideo_destination_latency_seconds"), "histogram");
  EXPECT_EQ(scrape.at("rdmavideo_destination_up{" + dest + "}"), 1);
  const double frames = scrape.at("rdmavideo_destination_frames_total{" + dest + "}");
  EXPECT_GE(frames, 1);  // the ring's two slots, and what the pipe took before it filled
  EXPECT_EQ(scrape.at("rdmavideo_destination_latency_seconds_count{" + dest + "}"), frames);
  // Two seconds at 60 fps with the ring full: most frames are dropped, for want of a slot
  // (no credit) or because waiting for one made the next ones late; nothing else.
  const double no_credit = dropped("rdmavideo_sender_dropped_frames_total", source, "no_credit");
  const double late = dropped("rdmavideo_sender_dropped_frames_total", source, "late");
  EXPECT_GT(no_credit, 0);
  EXPECT_GT(no_credit + late, 60);
  for (const char* other : {"behind", "not_up", "no_buffer"}) {
    EXPECT_EQ(dropped("rdmavideo_sender_dropped_frames_total", source, other), 0) << other;
    EXPECT_EQ(dropped("rdmavideo_destination_dropped_frames_total", dest, other), 0) << other;
  }
  // A frame the destination drops is counted there first, then (dropped by every destination)
  // in the source's total: a scrape between the two sees the destination one ahead.
  const double dest_no_credit =
      dropped("rdmavideo_destination_dropped_frames_total", dest, "no_credit");
  EXPECT_GE(dest_no_credit, no_credit);
  EXPECT_LE(dest_no_credit, no_credit + 1);
  // The run ends by itself; its summary agrees with what the scrape saw, and grew since.
  ASSERT_EQ(send.wait(30s), 0) << send.stderr_text();
  const auto summary = read_json(dir / "send.json");
  EXPECT_GE(summary["drops"]["no_credit"].get<double>(), no_credit);
  EXPECT_EQ(summary["drops"]["no_credit"].get<int>() + summary["drops"]["late"].get<int>(),
            summary["dropped"].get<int>());
  recv.process().signal(SIGKILL);
}

// A client sending its request a byte at a time (slowloris) holds no stop: the receiver exits
// within 2 s of SIGTERM, its summary written.
TEST(MetricsEndpoint, SlowClientDoesNotHoldAStop) {
  TempDir dir;
  WithMetrics m(dir);
  const int fd = m.connect_raw();
  ASSERT_GE(fd, 0);
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    for (size_t i = 0; !done; ++i) {
      const char c = i < request.size() ? request[i] : 'a';
      if (::send(fd, &c, 1, MSG_NOSIGNAL) != 1) break;
      std::this_thread::sleep_for(50ms);
    }
  });
  std::this_thread::sleep_for(1s);
  m.recv.process().signal(SIGTERM);
  const auto code = m.recv.process().wait(2s);
  done = true;
  trickle.join();
  close(fd);
  ASSERT_TRUE(code) << "still running 2 s after SIGTERM with a slow metrics client";
  EXPECT_EQ(*code, 0) << m.recv.process().stderr_text();
  EXPECT_NE(m.recv.process().stderr_text().find("[recv] received"), std::string::npos);
}

// A 128 MiB body is refused (413) before it is read, and a 32 MiB header line (431) is not
// read into memory either: the receiver's resident memory stays within a few MiB, and the
// next scrape is answered.
TEST(MetricsEndpoint, OversizedBodyAndHeaderAreNotReadIntoMemory) {
  TempDir dir;
  WithMetrics m(dir);
  const pid_t pid = m.recv.process().pid();
  const long rss_before = rss_kib_of(pid);
  auto send_big = [&](const std::string& head, size_t bytes, const std::string& tail) {
    const int fd = m.connect_raw();
    EXPECT_GE(fd, 0);
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    const std::string chunk(1 << 20, 'a');
    size_t sent = 0;
    while (sent < bytes) {
      const ssize_t n =
          ::send(fd, chunk.data(), std::min(chunk.size(), bytes - sent), MSG_NOSIGNAL);
      if (n <= 0) break;  // refused and closed, or it stopped reading
      sent += static_cast<size_t>(n);
    }
    if (sent == bytes) (void)::send(fd, tail.data(), tail.size(), MSG_NOSIGNAL);
    char answer[64] = {};
    const ssize_t got = recv(fd, answer, sizeof answer - 1, 0);
    close(fd);
    return std::pair<std::string, size_t>(
        got > 0 ? std::string(answer, static_cast<size_t>(got)) : "", sent);
  };
  const size_t body = 128u << 20;
  auto [posted, body_sent] = send_big(
      "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body) + "\r\n\r\n",
      body, "");
  EXPECT_EQ(posted.rfind("HTTP/1.1 413", 0), 0u) << posted;
  EXPECT_LT(body_sent, body) << "the whole body was taken";
  auto [headed, header_sent] = send_big("GET /metrics HTTP/1.1\r\nX-Big: ", 32u << 20, "\r\n\r\n");
  EXPECT_EQ(headed.rfind("HTTP/1.1 431", 0), 0u) << headed;
  const long growth = rss_kib_of(pid) - rss_before;
  EXPECT_LT(growth, 8 * 1024) << "resident memory grew " << growth << " KiB";
  httplib::Client http("127.0.0.1", m.port);
  auto response = http.Get("/metrics");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  m.recv.process().signal(SIGTERM);
  EXPECT_EQ(m.recv.process().wait(10s), 0);
}

// 200 connections that say nothing: the endpoint holds a bounded number, sheds the oldest,
// and a scrape is answered at once.
TEST(MetricsEndpoint, ScrapeAnsweredBesideTwoHundredIdleConnections) {
  TempDir dir;
  WithMetrics m(dir);
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) {
    const int fd = m.connect_raw();
    if (fd >= 0) idle.push_back(fd);
  }
  EXPECT_EQ(idle.size(), 200u);
  std::this_thread::sleep_for(200ms);
  httplib::Client http("127.0.0.1", m.port);
  http.set_connection_timeout(2, 0);
  http.set_read_timeout(2, 0);
  const auto began = std::chrono::steady_clock::now();
  auto response = http.Get("/metrics");
  ASSERT_TRUE(response) << "no answer within 2 s beside 200 idle connections";
  EXPECT_EQ(response->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - began, 2s);
  EXPECT_NE(response->body.find("rdmavideo_receiver_streams 0"), std::string::npos);
  // The receiver holds at most its limit of them (32), not 200.
  EXPECT_LT(descriptors_of(m.recv.process().pid()), 80);
  for (int fd : idle) close(fd);
  m.recv.process().signal(SIGTERM);
  EXPECT_EQ(m.recv.process().wait(10s), 0);
}

}  // namespace
}  // namespace rdmavideo::testing

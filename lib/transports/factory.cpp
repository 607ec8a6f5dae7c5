// SPDX-License-Identifier: Apache-2.0
// The one place that knows every transport: a listener or connection of the kind asked for,
// and `auto`, which listens on both (receiver) or picks verbs where a device reaches the peer
// (sender). Everything above it sees only the channel interfaces.
#include "channel/receiver_channel.hpp"
#include "channel/sender_channel.hpp"
#include "rdmavideo/log.hpp"
#include "tcp/tcp_transport.hpp"
#ifdef RDMAVIDEO_HAVE_VERBS
#include <poll.h>
#include <sys/epoll.h>

#include "rdmavideo/unique_handle.hpp"
#include "verbs/verbs_transport.hpp"
#endif

namespace rdmavideo {
namespace {

#ifdef _WIN32
[[maybe_unused]] constexpr const char* kNoVerbs = "the Windows build has no RDMA verbs transport";
#else
[[maybe_unused]] constexpr const char* kNoVerbs =
    "this build has no RDMA verbs transport: rdma-core was not found when it was configured";
#endif

[[maybe_unused]] Unexpected no_verbs_in_build() {
  return make_error(ErrorCode::unsupported, "transport verbs: {}; use the TCP transport", kNoVerbs);
}

}  // namespace

std::optional<std::string> why_not_verbs() {
#ifdef RDMAVIDEO_HAVE_VERBS
  if (verbs::have_devices()) return std::nullopt;
  return "this machine has no RDMA device";
#else
  return kNoVerbs;
#endif
}

}  // namespace rdmavideo

namespace rdmavideo::receiver {
namespace {

#ifdef RDMAVIDEO_HAVE_VERBS
// `auto` on the receiving side: TCP and verbs on one port, whichever sender comes.
class EitherListener final : public ChannelListener {
 public:
  EitherListener(std::unique_ptr<ChannelListener> tcp, std::unique_ptr<ChannelListener> verbs,
                 UniqueFd epoll)
      : tcp_(std::move(tcp)), verbs_(std::move(verbs)), epoll_(std::move(epoll)) {}

  // An epoll set of both listeners' fds is itself readable when either is, so a caller
  // waits on one fd for both.
  static Result<std::unique_ptr<ChannelListener>> make(std::unique_ptr<ChannelListener> tcp,
                                                       std::unique_ptr<ChannelListener> verbs) {
    UniqueFd epoll(epoll_create1(EPOLL_CLOEXEC));
    if (!epoll) return Unexpected(system_error("epoll_create1", errno));
    for (int fd : {tcp->readiness_fd(), verbs->readiness_fd()}) {
      epoll_event event{};
      event.events = EPOLLIN;
      event.data.fd = fd;
      if (epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
        return Unexpected(system_error("epoll_ctl(ADD) of a listener", errno));
      }
    }
    return std::unique_ptr<ChannelListener>(
        std::make_unique<EitherListener>(std::move(tcp), std::move(verbs), std::move(epoll)));
  }

  TransportKind kind() const override { return TransportKind::automatic; }
  Endpoint local_endpoint() const override { return tcp_->local_endpoint(); }
  int readiness_fd() const override { return epoll_.get(); }
  std::string describe() const override { return "tcp+verbs"; }

  Result<std::unique_ptr<ReceiverChannel>> accept() override {
    pollfd fds[2] = {{tcp_->readiness_fd(), POLLIN, 0}, {verbs_->readiness_fd(), POLLIN, 0}};
    if (poll(fds, 2, 0) < 0 && errno != EINTR) {
      return Unexpected(system_error("poll on the listeners", errno));
    }
    // Verbs first when both are ready: it is the faster path.
    if (fds[1].revents & POLLIN) return verbs_->accept();
    if (fds[0].revents & POLLIN) return tcp_->accept();
    return make_error(ErrorCode::timeout, "no connection waiting");
  }

 private:
  std::unique_ptr<ChannelListener> tcp_;
  std::unique_ptr<ChannelListener> verbs_;
  UniqueFd epoll_;  // holds both fds above
};
#endif  // RDMAVIDEO_HAVE_VERBS

}  // namespace

Result<std::unique_ptr<ChannelListener>> listen(TransportKind kind, const ListenOptions& options) {
  if (options.ring_size == 0 || options.ring_size > proto::kMaxRingSlots) {
    return make_error(ErrorCode::invalid_argument, "ring of {} slots out of range (1..{})",
                      options.ring_size, proto::kMaxRingSlots);
  }
  switch (kind) {
    case TransportKind::automatic: {
      auto tcp_listener = tcp::listen(options);
      if (!tcp_listener) return tcp_listener;
#ifdef RDMAVIDEO_HAVE_VERBS
      if (verbs::have_devices()) {
        ListenOptions same_port = options;
        same_port.endpoint.port = (*tcp_listener)->local_endpoint().port;
        auto verbs_listener = verbs::listen(same_port);
        if (verbs_listener) {
          return EitherListener::make(std::move(*tcp_listener), std::move(*verbs_listener));
        }
        log().warn("transport auto: TCP only: {}", verbs_listener.error().message());
      }
#endif
      return tcp_listener;
    }
    case TransportKind::tcp: return tcp::listen(options);
    case TransportKind::verbs:
#ifdef RDMAVIDEO_HAVE_VERBS
      return verbs::listen(options);
#else
      return no_verbs_in_build();
#endif
  }
  return no_verbs_in_build();
}

}  // namespace rdmavideo::receiver

namespace rdmavideo::sender {

Result<std::unique_ptr<SenderChannel>> connect_channel(TransportKind kind,
                                                       const ConnectOptions& options) {
  if (kind == TransportKind::verbs) {
#ifdef RDMAVIDEO_HAVE_VERBS
    return verbs::connect(options);
#else
    return no_verbs_in_build();
#endif
  }
  return tcp::connect(options);
}

}  // namespace rdmavideo::sender

// SPDX-License-Identifier: Apache-2.0
#include "verbs/link.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "proto/wire.hpp"
#include "rdmavideo/log.hpp"
#include "tcp/socket.hpp"

namespace rdmavideo::verbs {
namespace {

using std::chrono::milliseconds;

// Address resolution: each try's kernel timeout, and how much longer we wait for its event.
constexpr milliseconds kResolveTry(1000);
constexpr milliseconds kResolveMargin(500);

// wr_id: the kind of work request in the top byte (a completion in error has no valid
// opcode, so this is how an error names what failed), the buffer index below it.
enum class WrKind : uint64_t { recv = 1, send = 2, write = 3 };
uint64_t make_wr_id(WrKind kind, uint32_t index) {
  return (static_cast<uint64_t>(kind) << 56) | index;
}
WrKind kind_of(uint64_t wr_id) { return static_cast<WrKind>(wr_id >> 56); }
uint32_t index_of(uint64_t wr_id) { return static_cast<uint32_t>(wr_id & 0xffffffff); }
const char* to_string(WrKind kind) {
  switch (kind) {
    case WrKind::recv: return "RECV";
    case WrKind::send: return "SEND";
    case WrKind::write: return "RDMA_WRITE";
  }
  return "unknown";
}

// rdma_* calls return -1 and set errno.
Error cm_error(std::string_view what, int err) { return system_error(what, err); }

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

Link::Link(UniqueEventChannel channel, UniqueCmId id, const Timeouts& timeouts)
    : channel_(std::move(channel)), id_(std::move(id)), timeouts_(timeouts) {}

Link::~Link() {
  disconnect();
  if (id_ && id_->qp) rdma_destroy_qp(id_.get());  // before the CQ it uses
}

std::string Link::device_name() const {
  return id_ && id_->verbs ? ibv_get_device_name(id_->verbs->device) : "?";
}

uint32_t Link::qp_num() const { return id_ && id_->qp ? id_->qp->qp_num : 0; }

Result<void> Link::make_wake_fd() {
  wake_fd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_fd_) return Unexpected(system_error("eventfd", errno));
  return {};
}

Result<void> Link::build_qp(PdScope scope) {
  ibv_context* ctx = id_->verbs;
  const std::string who = fmt::format("verbs {} port {}", device_name(), id_->port_num);
  ibv_port_attr port{};
  if (int rc = ibv_query_port(ctx, id_->port_num, &port); rc != 0) {
    return Unexpected(system_error(fmt::format("{}: ibv_query_port", who), rc));
  }
  max_message_bytes_ = std::max<uint64_t>(port.max_msg_sz, 4096);
  ibv_device_attr dev{};
  if (int rc = ibv_query_device(ctx, &dev); rc != 0) {
    return Unexpected(system_error(fmt::format("{}: ibv_query_device", who), rc));
  }
  if (scope == PdScope::device) {
    auto pd = device_pd(ctx);
    if (!pd) return Unexpected(pd.error().context(who));
    pd_ = std::move(*pd);
  } else {
    ibv_pd* pd = ibv_alloc_pd(ctx);
    if (!pd) return Unexpected(system_error(fmt::format("{}: ibv_alloc_pd", who), errno));
    pd_ = make_shared_pd(pd);
  }
  comp_channel_.reset(ibv_create_comp_channel(ctx));
  if (!comp_channel_) {
    return Unexpected(system_error(fmt::format("{}: ibv_create_comp_channel", who), errno));
  }
  set_nonblocking(comp_channel_->fd);
  // Every signaled SEND and every receive can complete at once, and errors flush the rest:
  // size the CQ for both queues so it can never overflow (an overflow kills the QP).
  const uint32_t send_depth = std::min<uint32_t>(256, static_cast<uint32_t>(dev.max_qp_wr));
  const uint32_t recv_depth = std::min<uint32_t>(kRecvDepth, static_cast<uint32_t>(dev.max_qp_wr));
  const int cqe = std::min<int>(static_cast<int>(send_depth + recv_depth), dev.max_cqe);
  cq_.reset(ibv_create_cq(ctx, cqe, nullptr, comp_channel_.get(), 0));
  if (!cq_) return Unexpected(system_error(fmt::format("{}: ibv_create_cq({})", who, cqe), errno));
  if (int rc = ibv_req_notify_cq(cq_.get(), 0); rc != 0) {
    return Unexpected(system_error(fmt::format("{}: ibv_req_notify_cq", who), rc));
  }
  ibv_qp_init_attr attr{};
  attr.send_cq = cq_.get();
  attr.recv_cq = cq_.get();
  attr.qp_type = IBV_QPT_RC;
  attr.sq_sig_all = 0;  // selective signalling: only SENDs ask for a completion
  attr.cap.max_send_wr = send_depth;
  attr.cap.max_recv_wr = recv_depth;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  if (rdma_create_qp(id_.get(), pd_.get(), &attr) != 0) {
    return Unexpected(cm_error(fmt::format("{}: rdma_create_qp", who), errno));
  }
  send_memory_.resize(size_t{kSendBuffers} * kControlBytes);
  recv_memory_.resize(size_t{recv_depth} * kControlBytes);
  send_mr_.reset(ibv_reg_mr(pd_.get(), send_memory_.data(), send_memory_.size(),
                            static_cast<int>(IBV_ACCESS_LOCAL_WRITE)));
  recv_mr_.reset(ibv_reg_mr(pd_.get(), recv_memory_.data(), recv_memory_.size(),
                            static_cast<int>(IBV_ACCESS_LOCAL_WRITE)));
  if (!send_mr_ || !recv_mr_) {
    return Unexpected(system_error(fmt::format("{}: ibv_reg_mr of control buffers", who), errno));
  }
  send_buffers_.assign(kSendBuffers, {});
  for (uint32_t i = kSendBuffers; i-- > 0;) free_send_.push_back(i);
  for (uint32_t i = 0; i < recv_depth; ++i) {
    if (auto ok = post_recv(i); !ok) return ok;
  }
  set_nonblocking(channel_->fd);
  set_nonblocking(ctx->async_fd);  // QP, port and device events: handle_async_event()
  log().debug("[{}] qp 0x{:x}: {} send / {} recv, CQ {}, max message {} bytes, MTU {}", who,
              qp_num(), send_depth, recv_depth, cqe, max_message_bytes_, 128 << port.active_mtu);
  return {};
}

Result<void> Link::post_recv(uint32_t index) {
  ibv_sge sge{reinterpret_cast<uint64_t>(recv_memory_.data() + size_t{index} * kControlBytes),
              static_cast<uint32_t>(kControlBytes), recv_mr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = make_wr_id(WrKind::recv, index);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(id_->qp, &wr, &bad); rc != 0) {
    return Unexpected(system_error(fmt::format("ibv_post_recv on qp 0x{:x}", qp_num()), rc));
  }
  return {};
}

Result<std::unique_ptr<Link>> Link::connect(const Endpoint& endpoint, const std::string& device,
                                            const ConnectRequest& request,
                                            const Timeouts& timeouts) {
  const std::string where = fmt::format("verbs connect to {}", endpoint.to_string());
  UniqueEventChannel channel(rdma_create_event_channel());
  if (!channel) return Unexpected(cm_error(where + ": rdma_create_event_channel", errno));
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(channel.get(), &raw, nullptr, RDMA_PS_TCP) != 0) {
    return Unexpected(cm_error(where + ": rdma_create_id", errno));
  }
  std::unique_ptr<Link> link(new Link(std::move(channel), UniqueCmId(raw), timeouts));
  link->peer_role_ = "receiver";
  link->peer_ = endpoint.to_string();
  if (auto ok = link->make_wake_fd(); !ok) return Unexpected(ok.error().context(where));

  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* ai = nullptr;
  const std::string port = std::to_string(endpoint.port);
  if (int rc = getaddrinfo(endpoint.host.c_str(), port.c_str(), &hints, &ai); rc != 0) {
    return make_error(ErrorCode::invalid_argument, "{}: cannot resolve: {}", where,
                      gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(ai, freeaddrinfo);
  const auto resolve_ms = static_cast<int>(timeouts.connect.count());
  auto expect = [&](rdma_cm_event_type want, const char* step,
                    milliseconds wait) -> Result<CmEvent> {
    auto event = next_cm_event(link->channel_.get(), wait);
    if (!event) return Unexpected(event.error().context(fmt::format("{}: {}", where, step)));
    if (event->type == want) return event;
    if (event->type == RDMA_CM_EVENT_REJECTED) {
      const std::string reason = reject_reason(*event);
      return make_error(ErrorCode::peer_closed, "{}: rejected by the receiver{}{}", where,
                        reason.empty() ? " (no rdmavideo receiver on that port?)" : ": ", reason);
    }
    return make_error(ErrorCode::peer_closed, "{}: {}: {} (status {}: {})", where, step,
                      rdma_event_str(event->type), event->status,
                      std::strerror(std::abs(event->status)));
  };
  // Address resolution in tries of kResolveTry: with a cold neighbour table the kernel
  // sends an ARP (or neighbour solicitation) and waits for the neighbour to become valid, but
  // a reply that comes back before the request is queued (a fast link: a veth pair, a switch
  // next door) wakes nothing, and the request then sits out its whole timeout. The next try
  // finds the neighbour resolved. (perftest's rdma_cm client retries the same way.)
  const auto deadline = Clock::now() + timeouts.connect;
  for (int attempt = 1;; ++attempt) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    const auto try_ms = std::clamp(left, milliseconds(1), kResolveTry);
    if (rdma_resolve_addr(link->id_.get(), nullptr, ai->ai_addr,
                          static_cast<int>(try_ms.count())) != 0) {
      return Unexpected(cm_error(where + ": rdma_resolve_addr", errno));
    }
    // The kernel reports the try's end itself; the margin covers a slow machine.
    auto event = next_cm_event(link->channel_.get(), try_ms + kResolveMargin);
    if (event && event->type == RDMA_CM_EVENT_ADDR_RESOLVED) break;
    const bool retry =
        (!event || event->type == RDMA_CM_EVENT_ADDR_ERROR) && Clock::now() < deadline;
    if (!retry) {
      if (!event) {
        return make_error(ErrorCode::timeout,
                          "{}: resolving the address: not resolved within "
                          "{} ms ({} tries): is {} reachable, and its neighbour entry (ARP) "
                          "answered?",
                          where, resolve_ms, attempt, endpoint.host);
      }
      return make_error(ErrorCode::peer_closed, "{}: resolving the address: {} (status {}: {})",
                        where, rdma_event_str(event->type), event->status,
                        std::strerror(std::abs(event->status)));
    }
    log().debug("[{}] address not resolved in try {} ({}); trying again", where, attempt,
                event ? rdma_event_str(event->type) : "no event");
  }
  if (!device.empty() && link->device_name() != device) {
    return make_error(ErrorCode::invalid_argument,
                      "{}: RDMA device {}: the route goes through {} (port {})", where, device,
                      link->device_name(), link->id_->port_num);
  }
  if (rdma_resolve_route(link->id_.get(), resolve_ms) != 0) {
    return Unexpected(cm_error(where + ": rdma_resolve_route", errno));
  }
  if (auto e = expect(RDMA_CM_EVENT_ROUTE_RESOLVED, "resolving the route", timeouts.connect); !e) {
    return Unexpected(e.error());
  }
  // Every connection this process makes through one device shares a protection domain, so
  // the memory frames are sent from is registered once per device (docs/architecture.md).
  if (auto ok = link->build_qp(PdScope::device); !ok) return Unexpected(ok.error().context(where));
  const auto private_data = encode(request);
  rdma_conn_param param = connection_params(private_data);
  if (rdma_connect(link->id_.get(), &param) != 0) {
    return Unexpected(cm_error(where + ": rdma_connect", errno));
  }
  if (auto e = expect(RDMA_CM_EVENT_ESTABLISHED, "connecting", timeouts.connect); !e) {
    return Unexpected(e.error());
  }
  link->peer_ = fmt::format("{} ({})", endpoint.to_string(), link->device_name());
  link->last_heard_ = link->last_sent_ = Clock::now();
  return link;
}

Result<std::unique_ptr<Link>> Link::adopt(UniqueCmId id, const Timeouts& timeouts) {
  const std::string peer = peer_of(id.get());
  const std::string where = fmt::format("verbs accept from {}", peer);
  UniqueEventChannel channel(rdma_create_event_channel());
  if (!channel) return Unexpected(cm_error(where + ": rdma_create_event_channel", errno));
  // The connection's events go to its own channel, not the listener's.
  if (rdma_migrate_id(id.get(), channel.get()) != 0) {
    return Unexpected(cm_error(where + ": rdma_migrate_id", errno));
  }
  std::unique_ptr<Link> link(new Link(std::move(channel), std::move(id), timeouts));
  link->peer_role_ = "sender";
  link->peer_ = peer;
  if (auto ok = link->make_wake_fd(); !ok) return Unexpected(ok.error().context(where));
  return link;
}

Result<void> Link::accept(Clock::time_point deadline) {
  const std::string where = fmt::format("verbs accept from {}", peer_);
  // A protection domain of its own: no sender reaches another connection's ring.
  if (auto ok = build_qp(PdScope::connection); !ok) return Unexpected(ok.error().context(where));
  rdma_conn_param param = connection_params();
  if (rdma_accept(id_.get(), &param) != 0) {
    return Unexpected(cm_error(where + ": rdma_accept", errno));
  }
  const auto left =
      std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
  auto event = next_cm_event(channel_.get(), left);
  if (!event) return Unexpected(event.error().context(where));
  if (event->type != RDMA_CM_EVENT_ESTABLISHED) {
    return make_error(ErrorCode::peer_closed, "{}: {} (status {})", where,
                      rdma_event_str(event->type), event->status);
  }
  peer_ = fmt::format("{} ({})", peer_, device_name());
  last_heard_ = last_sent_ = Clock::now();
  return {};
}

Result<uint32_t> Link::acquire_send_buffer() {
  while (free_send_.empty()) {
    if (disconnected_) return make_error(ErrorCode::peer_closed, "{} disconnected", peer_role_);
    const auto before = Clock::now();
    if (auto ok = progress(timeouts_.keepalive); !ok) return Unexpected(ok.error());
    if (free_send_.empty() && Clock::now() - before >= timeouts_.peer) {
      return make_error(ErrorCode::timeout, "no SEND completed for {} ms on qp 0x{:x}",
                        timeouts_.peer.count(), qp_num());
    }
  }
  const uint32_t index = free_send_.back();
  free_send_.pop_back();
  return index;
}

Result<uint64_t> Link::write_and_send(std::span<const std::byte> local, uint32_t lkey,
                                      uint64_t remote_addr, uint32_t rkey,
                                      const proto::Message& message) {
  if (disconnected_) return make_error(ErrorCode::peer_closed, "{} disconnected", peer_role_);
  std::vector<std::byte> bytes;
  auth::encode_sealed(message, bytes, mac_.get(), version_);
  // The peer posts receives of one control buffer: a larger SEND would fail its receive
  // (and the connection) over there. The caller sizes what it sends (AudioChunks are split).
  if (bytes.size() > kControlBytes) {
    return make_error(ErrorCode::invalid_argument,
                      "{} of {} bytes does not fit a control buffer of {} bytes",
                      proto::to_string(proto::type_of(message)), bytes.size(), kControlBytes);
  }
  auto index = acquire_send_buffer();
  if (!index) return Unexpected(index.error());
  std::byte* buffer = send_memory_.data() + size_t{*index} * kControlBytes;
  std::memcpy(buffer, bytes.data(), bytes.size());

  const uint64_t chunk = max_message_bytes_;
  const size_t chunks = local.empty() ? 0 : (local.size() + chunk - 1) / chunk;
  std::vector<ibv_sge> sges(chunks + 1);
  std::vector<ibv_send_wr> wrs(chunks + 1);
  for (size_t i = 0; i < chunks; ++i) {
    const uint64_t offset = i * chunk;
    const uint64_t length = std::min<uint64_t>(chunk, local.size() - offset);
    sges[i] = {reinterpret_cast<uint64_t>(local.data() + offset), static_cast<uint32_t>(length),
               lkey};
    ibv_send_wr& wr = wrs[i];
    wr.wr_id = make_wr_id(WrKind::write, static_cast<uint32_t>(i));
    wr.sg_list = &sges[i];
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = 0;  // unsignaled: the SEND's completion retires them
    wr.wr.rdma.remote_addr = remote_addr + offset;
    wr.wr.rdma.rkey = rkey;
    wr.next = &wrs[i + 1];
  }
  sges[chunks] = {reinterpret_cast<uint64_t>(buffer), static_cast<uint32_t>(bytes.size()),
                  send_mr_->lkey};
  ibv_send_wr& send = wrs[chunks];
  send.wr_id = make_wr_id(WrKind::send, *index);
  send.sg_list = &sges[chunks];
  send.num_sge = 1;
  send.opcode = IBV_WR_SEND;
  send.send_flags = IBV_SEND_SIGNALED;
  send.next = nullptr;
  const uint64_t ticket = next_ticket_++;
  send_buffers_[*index] = {ticket, true};
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(id_->qp, wrs.data(), &bad); rc != 0) {
    send_buffers_[*index].busy = false;
    free_send_.push_back(*index);
    return Unexpected(system_error(fmt::format("ibv_post_send ({}) on qp 0x{:x}",
                                               proto::to_string(proto::type_of(message)), qp_num()),
                                   rc));
  }
  last_sent_ = Clock::now();
  return ticket;
}

Result<void> Link::send(const proto::Message& message) {
  auto ticket = write_and_send({}, 0, 0, 0, message);
  if (!ticket) return Unexpected(ticket.error());
  return {};
}

Result<void> Link::handle_completion(const ibv_wc& wc) {
  const WrKind kind = kind_of(wc.wr_id);
  if (wc.status != IBV_WC_SUCCESS) {
    if (wc.status == IBV_WC_WR_FLUSH_ERR) {
      disconnected_ = true;  // the QP went to error: everything outstanding is flushed
      return make_error(ErrorCode::peer_closed, "connection lost ({} flushed on qp 0x{:x})",
                        to_string(kind), qp_num());
    }
    disconnected_ = true;
    return make_error(ErrorCode::peer_closed,
                      "{} completion error on qp 0x{:x}: {} (wr_id {}, vendor error 0x{:x})",
                      to_string(kind), qp_num(), ibv_wc_status_str(wc.status), index_of(wc.wr_id),
                      wc.vendor_err);
  }
  if (kind == WrKind::send) {
    SendBuffer& buffer = send_buffers_.at(index_of(wc.wr_id));
    completed_ticket_ = std::max(completed_ticket_, buffer.ticket);
    buffer.busy = false;
    free_send_.push_back(index_of(wc.wr_id));
    return {};
  }
  if (kind != WrKind::recv) return {};
  const uint32_t index = index_of(wc.wr_id);
  last_heard_ = Clock::now();
  std::span<const std::byte> bytes(recv_memory_.data() + size_t{index} * kControlBytes,
                                   wc.byte_len);
  // Decoded when taken: authentication may be turned on between two messages of one batch.
  inbox_.emplace_back(bytes.begin(), bytes.end());
  return post_recv(index);  // the buffer is free again
}

Result<size_t> Link::drain_cq() {
  ibv_wc wcs[16];
  size_t total = 0;
  for (;;) {
    const int n = ibv_poll_cq(cq_.get(), 16, wcs);
    if (n < 0)
      return make_error(ErrorCode::system, "ibv_poll_cq on qp 0x{:x} failed ({})", qp_num(), n);
    for (int i = 0; i < n; ++i) {
      if (auto ok = handle_completion(wcs[i]); !ok) return Unexpected(ok.error());
    }
    total += static_cast<size_t>(n);
    if (n < 16) return total;
  }
}

Result<void> Link::handle_cm_event() {
  auto event = next_cm_event(channel_.get(), milliseconds(0));
  if (!event) {
    if (event.error().code() == ErrorCode::timeout) return {};
    return Unexpected(event.error());
  }
  switch (event->type) {
    case RDMA_CM_EVENT_DISCONNECTED: disconnected_ = true; return {};
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
      disconnected_ = true;
      return make_error(ErrorCode::resource, "RDMA device {} removed", device_name());
    case RDMA_CM_EVENT_TIMEWAIT_EXIT:
    case RDMA_CM_EVENT_ESTABLISHED: return {};
    default:
      log().debug("[verbs {}] rdma_cm event {} (status {})", peer_, rdma_event_str(event->type),
                  event->status);
      return {};
  }
}

Result<void> Link::handle_async_event() {
  ibv_async_event event{};
  if (ibv_get_async_event(id_->verbs, &event) != 0) return {};  // none (non-blocking fd)
  const ibv_event_type type = event.event_type;
  const bool ours = (type == IBV_EVENT_QP_FATAL || type == IBV_EVENT_QP_REQ_ERR ||
                     type == IBV_EVENT_QP_ACCESS_ERR || type == IBV_EVENT_COMM_EST ||
                     type == IBV_EVENT_SQ_DRAINED || type == IBV_EVENT_PATH_MIG ||
                     type == IBV_EVENT_PATH_MIG_ERR || type == IBV_EVENT_QP_LAST_WQE_REACHED)
                        ? event.element.qp == id_->qp
                    : type == IBV_EVENT_CQ_ERR ? event.element.cq == cq_.get()
                                               : true;
  ibv_ack_async_event(&event);
  if (!ours) {  // another connection's QP in this process
    log().debug("[verbs {}] async event {} for another queue pair", peer_,
                ibv_event_type_str(type));
    return {};
  }
  switch (type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_CQ_ERR:
    case IBV_EVENT_DEVICE_FATAL:
    case IBV_EVENT_PORT_ERR:
      disconnected_ = true;
      return make_error(ErrorCode::peer_closed, "verbs {}: async event {} on qp 0x{:x}",
                        device_name(), ibv_event_type_str(type), qp_num());
    default: log().debug("[verbs {}] async event {}", peer_, ibv_event_type_str(type)); return {};
  }
}

Result<void> Link::progress(milliseconds wait) {
  auto drained = drain_cq();
  if (!drained) return Unexpected(drained.error());
  if (*drained > 0 || wait.count() == 0) {
    if (wait.count() == 0) return handle_cm_event();
    return {};
  }
  // Nothing yet: arm the notification, look once more (a completion may have slipped in
  // before arming), then sleep on the fds.
  if (int rc = ibv_req_notify_cq(cq_.get(), 0); rc != 0) {
    return Unexpected(system_error("ibv_req_notify_cq", rc));
  }
  drained = drain_cq();
  if (!drained) return Unexpected(drained.error());
  if (*drained > 0) return {};
  pollfd fds[4] = {{comp_channel_->fd, POLLIN, 0},
                   {channel_->fd, POLLIN, 0},
                   {wake_fd_.get(), POLLIN, 0},
                   {id_->verbs->async_fd, POLLIN, 0}};
  const int rc = poll(fds, 4, static_cast<int>(wait.count()));
  if (rc < 0) {
    // A handled signal: a stop where the owner gave no stop flag or it is set, else nothing.
    if (errno == EINTR && stop_ && !stop_->load()) return {};
    if (errno == EINTR) return Unexpected(Error(ErrorCode::system, "interrupted", EINTR));
    return Unexpected(system_error("poll", errno));
  }
  if (fds[0].revents & POLLIN) {
    ibv_cq* cq = nullptr;
    void* context = nullptr;
    if (ibv_get_cq_event(comp_channel_.get(), &cq, &context) == 0) ibv_ack_cq_events(cq, 1);
    drained = drain_cq();
    if (!drained) return Unexpected(drained.error());
  }
  if (fds[1].revents & POLLIN) {
    if (auto ok = handle_cm_event(); !ok) return ok;
  }
  if (fds[2].revents & POLLIN) {
    uint64_t count = 0;
    (void)!read(wake_fd_.get(), &count, sizeof count);
  }
  if (fds[3].revents & POLLIN) return handle_async_event();
  return {};
}

Result<std::optional<proto::Message>> Link::take_message() {
  if (inbox_.empty()) return std::optional<proto::Message>{};
  const std::vector<std::byte> bytes = std::move(inbox_.front());
  inbox_.pop_front();
  auto message = auth::decode_sealed(bytes, mac_.get());
  if (!message) return Unexpected(message.error());
  return std::optional<proto::Message>(std::move(*message));
}

void Link::disconnect() {
  if (disconnect_sent_ || !id_ || !id_->qp) return;
  disconnect_sent_ = true;
  if (rdma_disconnect(id_.get()) != 0 && errno != EINVAL) {
    log().debug("[verbs {}] rdma_disconnect: {}", peer_, std::strerror(errno));
  }
}

void Link::wake() {
  const uint64_t one = 1;
  (void)!write(wake_fd_.get(), &one, sizeof one);
}

}  // namespace rdmavideo::verbs

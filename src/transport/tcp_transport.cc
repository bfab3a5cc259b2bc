// The TCP transport's data path: a poll-driven progress engine on one
// authenticated socket per peer (set up by tcp_rendezvous.cc), or for a peer
// on this machine a shared-memory link (shm_link.h) that carries the same
// byte stream while its socket only tells whether the peer lives. Each
// blocking call drives all peers: an expected message is read straight into
// the caller's buffer, early ones are queued in reused buffers, and a send
// that waits for space drains incoming data meanwhile.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <thread>

#include "core/check.h"
#include "core/cpus.h"
#include "mtf/errors.h"
#include "transport/frames.h"
#include "transport/shm_link.h"
#include "transport/socket_io.h"
#include "transport/tcp_connection.h"

namespace mtf::transport {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using detail::str_cat;

class TcpTransport : public Transport {
 public:
  TcpTransport(const TcpOptions& o, std::vector<tcp::socket> sockets,
               std::unique_ptr<asio::io_context> io)
      : opts_(o), io_(std::move(io)), sockets_(std::move(sockets)), peers_(o.world_size) {
    set_timeout(o.timeout);
    for (int p = 0; p < size(); ++p) {
      if (p == rank()) continue;
      boost::system::error_code ec;
      sockets_[p].non_blocking(true, ec);
      sockets_[p].set_option(tcp::no_delay(true), ec);
      peers_[p].fd = sockets_[p].native_handle();
    }
    std::vector<int> fds(size(), -1);
    for (int p = 0; p < size(); ++p) fds[p] = peers_[p].fd;
    try {
      shm_ = link_local_peers(rank(), size(), fds, o.shared_memory, o.shm_ring_bytes,
                              Clock::now() + o.connect_timeout);
    } catch (const Refused& e) {
      throw IoError(str_cat("rank ", rank(), ": agreeing on shared memory with the ranks on its ",
                            "machine failed: ", e.what()));
    }
    for (int p = 0; p < size(); ++p) peers_[p].link = shm_->link(p);
    const std::vector<int>& machines = shm_->machines();
    const auto here = std::count(machines.begin(), machines.end(), machines[rank()]);
    spin_freely_ = shm_->count() > 0 && here <= available_cpus();
  }

  ~TcpTransport() override {
    // Goodbye to every peer still there, so our exit is not taken for a crash.
    FrameHeader bye;
    bye.flags = kFlagBye;
    char h[kHeader];
    const size_t n = bye.encode(h, false);
    for (int p = 0; p < size(); ++p) {
      if (p == rank() || peers_[p].lost) continue;
      try {
        const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(500);
        if (ShmLink* link = peers_[p].link) {
          iovec v{h, n};
          for (size_t done = 0; done < n && Clock::now() < deadline;) {
            v = {h + done, n - done};
            done += link->write(&v, 1);
            if (done < n) std::this_thread::yield();
          }
        } else {
          write_all(peers_[p].fd, h, n, deadline);
        }
      } catch (const Refused&) {
      }
    }
  }

  int rank() const override { return opts_.rank; }
  int size() const override { return opts_.world_size; }
  int local_size() const override {
    // Ranks linked by shared memory share this machine for sure.
    return std::max(opts_.local_size, 1 + (shm_ ? shm_->count() : 0));
  }

  std::vector<int> machines() const override {
    return shm_ ? shm_->machines() : std::vector<int>{};
  }

  std::string describe_links() const override {
    const int shm = shm_ ? shm_->count() : 0;
    if (shm == 0) return {};
    const int tcp = size() - 1 - shm;
    std::vector<int> machines = shm_->machines();
    std::sort(machines.begin(), machines.end());
    const auto count = std::unique(machines.begin(), machines.end()) - machines.begin();
    return str_cat("shared memory with ", shm, shm == 1 ? " rank" : " ranks", " on this machine",
                   tcp ? str_cat(", TCP with ", tcp, tcp == 1 ? " other" : " others") : "",
                   count > 1 ? str_cat("; ", count, " machines, collectives hierarchical") : "");
  }

  void send(int peer, uint64_t tag, const void* data, size_t bytes) override {
    check_peer(peer, "send");
    send_one(peer, tag, data, bytes);
  }

  void recv(int peer, uint64_t tag, void* data, size_t bytes) override {
    exchange({}, {RecvSpec{peer, tag, data, bytes}});
  }

  // The receives are posted first: while the sends wait for socket space,
  // arriving payloads go straight into the receivers' buffers.
  void exchange(const std::vector<SendSpec>& sends, const std::vector<RecvSpec>& recvs) override {
    for (const RecvSpec& r : recvs) check_peer(r.peer, "recv");
    for (const SendSpec& x : sends) check_peer(x.peer, "send");
    MTF_CHECK(posted_.empty());
    for (const RecvSpec& r : recvs)
      posted_.push_back({r.peer, r.tag, static_cast<char*>(r.data), r.bytes, false, false});
    try {
      take_all_queued();
      for (const SendSpec& x : sends) send_one(x.peer, x.tag, x.data, x.bytes);
      wait_posted();
    } catch (...) {
      unpost();
      throw;
    }
    posted_.clear();
  }

 private:
  void send_one(int peer, uint64_t tag, const void* data, size_t bytes) {
    throw_if_lost();
    Peer& p = peers_[peer];
    if (p.finished) throw_finished(peer);
    FrameHeader h = FrameHeader::for_call(current_collective(), tag, bytes);
    char head[kHeader];
    // The call's names only when they changed on this stream (the reader
    // keeps the last ones it got).
    const bool names = h.kind != p.sent_kind || h.op != p.sent_op;
    const size_t head_bytes = h.encode(head, names);
    if (names) {
      p.sent_kind = h.kind;
      p.sent_op = h.op;
    }
    const Clock::time_point deadline = Clock::now() + timeout();
    size_t done = 0;
    const size_t total = head_bytes + bytes;
    while (done < total) {
      iovec iov[2];
      int n = 0;
      if (done < head_bytes) iov[n++] = {head + done, head_bytes - done};
      const size_t data_done = done > head_bytes ? done - head_bytes : 0;
      if (bytes > data_done)
        iov[n++] = {const_cast<char*>(static_cast<const char*>(data)) + data_done,
                    bytes - data_done};
      const ssize_t r = write_stream(p, iov, n);
      if (r > 0) {
        done += static_cast<size_t>(r);
        continue;
      }
      if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        mark_lost(peer, std::string("sending failed: ") + std::strerror(errno));
        throw_if_lost();
      }
      // The socket is full: keep draining what peers send us meanwhile.
      if (Clock::now() >= deadline) {
        throw TimeoutError(str_cat("rank ", rank(), " could not send ", bytes, " bytes to rank ",
                                   peer, " within ", timeout().count(), " ms in ",
                                   current_collective().describe(), ": rank ", peer,
                                   " is not reading (stopped or stuck?)"));
      }
      progress(deadline, peer);
      throw_if_lost();
    }
  }

  // Posted receives not yet done take the oldest queued message they match,
  // in posting order.
  void take_all_queued() {
    for (Posted& x : posted_)
      if (!x.done && !x.filling && take_queued(x.peer, x.tag, x.data, x.bytes)) x.done = true;
  }

  // Index of the first posted receive not yet done, or -1.
  int first_waiting() const {
    for (size_t i = 0; i < posted_.size(); ++i)
      if (!posted_[i].done) return static_cast<int>(i);
    return -1;
  }

  // Blocks until every posted receive is done (or an error, or the deadline).
  void wait_posted() {
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline = start + timeout();
    const Clock::time_point spin_until = start + std::chrono::microseconds(50);
    Clock::time_point now = start;
    unsigned polls = 0;
    for (int w; (w = first_waiting()) >= 0;) {
      // The clock costs as much as a look at the rings (~30 ns on a VM's
      // kvm-clock): read it every 16th poll while spinning.
      if (++polls % 16 == 0 || now >= spin_until) now = Clock::now();
      throw_if_lost();
      const Posted& x = posted_[w];
      const Peer& p = peers_[x.peer];
      for (const Posted& y : posted_)
        if (!y.done) check_order(y.peer);
      if (!x.filling && p.finished && p.state == Peer::kReadingHeader) throw_finished(x.peer);
      if (now >= deadline) {
        throw TimeoutError(str_cat("rank ", rank(), " waited ", timeout().count(), " ms for rank ",
                                   x.peer, " (tag ", x.tag, ") in ",
                                   current_collective().describe(), "; rank ", x.peer,
                                   " is alive but did not send (stuck, or it "
                                   "is in another collective)"));
      }
      if (now < spin_until) {
        for (const Posted& y : posted_)
          if (!y.done) read_available(y.peer);
        if (first_waiting() >= 0) {
          // With a CPU for every rank of this machine, poll the rings without
          // a system call (sched_yield costs a microsecond and more on a VM,
          // several times a small message's trip through shared memory);
          // with more ranks than CPUs, give the CPU to the others.
          if (spin_freely_) {
            spin_pause();
          } else {
            std::this_thread::yield();
          }
        }
      } else {
        progress(deadline, -1);
      }
      take_all_queued();
    }
  }
  struct Peer {
    int fd = -1;
    enum State { kReadingHeader, kReadingPayload } state = kReadingHeader;
    char head[kHeader];
    size_t got = 0;
    FrameHeader cur;
    ShmLink* link = nullptr;  // the stream goes through shared memory
    char* dest = nullptr;
    Frame pending;        // cur, with our own buffer when not direct
    bool direct = false;  // dest is posted_[posted]'s buffer
    int posted = -1;
    EarlyFrames queue;
    std::string sent_kind, sent_op;  // the call's names last sent to this peer
    bool finished = false, lost = false, closed = false;
    std::string why;
  };
  // A receive of the current exchange. filling: a payload is being read
  // straight into its buffer.
  struct Posted {
    int peer = -1;
    uint64_t tag = 0;
    char* data = nullptr;
    size_t bytes = 0;
    bool done = false;
    bool filling = false;
  };

  std::string my_call() const { return transport::describe_call(current_collective()); }

  // The peer's byte stream, with the sockets' conventions: bytes moved, or
  // -1 with errno EAGAIN when nothing can move now.
  ssize_t write_stream(Peer& p, const iovec* iov, int n) {
    if (p.link) {
      const size_t w = p.link->write(iov, n);
      if (w) return static_cast<ssize_t>(w);
      errno = EAGAIN;
      return -1;
    }
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(iov);
    msg.msg_iovlen = static_cast<size_t>(n);
    return ::sendmsg(p.fd, &msg, MSG_NOSIGNAL);
  }
  ssize_t read_stream(Peer& p, void* dst, size_t want) {
    if (p.link) {
      const size_t r = p.link->read(dst, want);
      if (r) return static_cast<ssize_t>(r);
      errno = EAGAIN;
      return -1;
    }
    return ::recv(p.fd, dst, want, 0);
  }

  // A linked peer's socket carries nothing after set-up: readable means it
  // closed (the peer ended or died). What it wrote to its ring before is
  // read first, so a goodbye sent just before exiting counts.
  void check_linked_socket(int peer) {
    Peer& p = peers_[peer];
    char c;
    const ssize_t r = ::recv(p.fd, &c, 1, MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    read_available(peer);
    if (p.lost) return;
    p.closed = true;
    if (!p.finished || p.state != Peer::kReadingHeader || p.got != 0) {
      mark_lost(peer, r == 0 ? (p.finished ? "it closed the connection inside a message"
                                           : "its connection closed without a goodbye: crashed "
                                             "or killed")
                             : "it sent data on its connection beside shared memory (protocol "
                               "error)");
    }
  }

  void check_frame(int peer, const FrameHeader& h) const {
    transport::check_same_call(rank(), current_collective(), peer, h);
  }

  void check_order(int peer) const {
    peers_[peer].queue.check_all(rank(), current_collective(), peer);
  }

  bool take_queued(int peer, uint64_t tag, void* data, size_t bytes) {
    return peers_[peer].queue.take(rank(), current_collective(), peer, tag, data, bytes);
  }

  [[noreturn]] void size_mismatch(int peer, uint64_t tag, size_t want, size_t got) const {
    transport::throw_size_mismatch(rank(), current_collective(), peer, tag, want, got);
  }

  [[noreturn]] void throw_finished(int peer) const {
    throw ValueError(str_cat("rank ", peer, " finished its program while rank ", rank(),
                             " waits for it in ", my_call(),
                             "; the ranks ran different numbers of collectives"));
  }

  void throw_if_lost() const {
    for (int p = 0; p < size(); ++p) {
      if (p != rank() && peers_[p].lost) {
        throw PeerLostError(str_cat("rank ", p, " is lost (", peers_[p].why, ") while rank ",
                                    rank(), " is in ", my_call()));
      }
    }
  }

  void mark_lost(int peer, const std::string& why) {
    Peer& p = peers_[peer];
    if (p.lost) return;
    p.lost = true;
    p.why = why;
  }

  // A failed or abandoned recv: a payload being read into the caller's
  // buffer continues into a buffer of our own, so the stream stays whole.
  void unpost() {
    for (Peer& p : peers_) {
      if (p.state == Peer::kReadingPayload && p.direct) {
        const Posted& x = posted_[p.posted];
        p.pending = Frame::for_header(p.cur);
        if (p.got) std::memcpy(p.pending.data(), x.data, p.got);
        p.dest = p.pending.data();
        p.direct = false;
        p.posted = -1;
      }
    }
    posted_.clear();
  }

  // One round: waits (until the deadline) for any peer to be readable, or
  // `writer` to be writable, and reads what has arrived.
  void progress(Clock::time_point deadline, int writer) {
    if (shm_->count() && shm_ready(writer)) return;
    std::vector<pollfd> fds;
    std::vector<int> who;
    for (int p = 0; p < size(); ++p) {
      if (p == rank() || peers_[p].lost || peers_[p].closed) continue;
      short ev = POLLIN;
      if (p == writer && !peers_[p].link) ev |= POLLOUT;
      fds.push_back({peers_[p].fd, ev, 0});
      who.push_back(p);
    }
    int ms = std::min(remaining_ms(deadline), 100);
    if (shm_->count()) {
      // Say we sleep, then look once more: data written before the flag was
      // seen is found now, data written after rings the doorbell.
      shm_->arm();
      if (writer >= 0 && peers_[writer].link) peers_[writer].link->want_space();
      if (shm_ready(writer)) ms = 0;
      fds.push_back({shm_->doorbell(), POLLIN, 0});
      who.push_back(-1);
    }
    const int r = ::poll(fds.data(), fds.size(), ms);
    if (shm_->count()) {
      shm_->disarm();
      shm_ready(writer);
    }
    if (r <= 0) return;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (who[i] < 0 || !(fds[i].revents & (POLLIN | POLLERR | POLLHUP))) continue;
      if (peers_[who[i]].link) {
        check_linked_socket(who[i]);
      } else {
        read_available(who[i]);
      }
    }
  }

  // Reads every linked peer with data waiting; true when something was read
  // or `writer`'s ring has space.
  bool shm_ready(int writer) {
    bool any = writer >= 0 && peers_[writer].link && peers_[writer].link->writable();
    for (int p = 0; p < size(); ++p) {
      Peer& q = peers_[p];
      if (q.link && !q.lost && !q.closed && q.link->readable()) {
        read_available(p);
        any = true;
      }
    }
    return any;
  }

  // The posted receive (its index) that waits for the next message with
  // `tag` from `peer`, or -1: none, or an older one with that tag is queued.
  int wanted_by(int peer, uint64_t tag) const {
    if (peers_[peer].queue.has_tag(tag)) return -1;
    for (size_t i = 0; i < posted_.size(); ++i) {
      const Posted& x = posted_[i];
      if (x.peer == peer && x.tag == tag && !x.done && !x.filling) return static_cast<int>(i);
    }
    return -1;
  }

  // The header being read: its fixed part, then the names if it says they
  // follow.
  static size_t header_bytes(const Peer& p) {
    return p.got >= kHeaderFixed && FrameHeader::has_names(p.head) ? kHeader : kHeaderFixed;
  }

  // Reads whatever peer p has sent, frame by frame, without blocking.
  void read_available(int peer) {
    Peer& p = peers_[peer];
    while (!p.lost && !p.closed) {
      char* dst;
      size_t want;
      if (p.state == Peer::kReadingHeader) {
        dst = p.head + p.got;
        want = header_bytes(p) - p.got;
      } else {
        dst = p.dest + p.got;
        want = p.cur.length - p.got;
      }
      ssize_t r = want ? read_stream(p, dst, want) : 0;
      if (want && r == 0) {
        p.closed = true;  // no more polling it
        if (!p.finished || p.state != Peer::kReadingHeader || p.got != 0) {
          mark_lost(peer, p.finished ? "it closed the connection inside a message"
                                     : "its connection closed without a goodbye: crashed or "
                                       "killed");
        }
        return;
      }
      if (want && r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        if (errno == EINTR) continue;
        mark_lost(peer, std::string("its connection failed: ") + std::strerror(errno));
        return;
      }
      p.got += static_cast<size_t>(std::max<ssize_t>(r, 0));
      if (p.state == Peer::kReadingHeader && p.got == header_bytes(p)) {
        // p.cur keeps the previous frame's names unless new ones came.
        const std::string bad = p.cur.decode(p.head);
        if (!bad.empty()) {
          mark_lost(peer, "it sent " + bad + " (protocol error)");
          return;
        }
        if (p.cur.flags & kFlagBye) {
          p.finished = true;
          p.got = 0;
          continue;
        }
        if (p.cur.length > opts_.max_frame_bytes) {
          mark_lost(peer,
                    str_cat("it announced a frame of ", p.cur.length, " bytes, over the limit of ",
                            opts_.max_frame_bytes, " (protocol error)"));
          return;
        }
        // Straight into the caller's buffer only when it is the oldest
        // message with that tag (a ring sends several with one tag).
        if (const int w = wanted_by(peer, p.cur.tag); w >= 0) {
          check_frame(peer, p.cur);
          Posted& x = posted_[w];
          if (p.cur.length != x.bytes) size_mismatch(peer, p.cur.tag, x.bytes, p.cur.length);
          p.dest = x.data;
          p.direct = true;
          p.posted = w;
          x.filling = true;
        } else {
          p.pending = Frame::for_header(p.cur);
          p.dest = p.pending.data();
          p.direct = false;
        }
        p.state = Peer::kReadingPayload;
        p.got = 0;
      }
      if (p.state == Peer::kReadingPayload && p.got == p.cur.length) {
        bool completed = false;
        if (p.direct) {
          posted_[p.posted].done = true;
          completed = true;
        } else if (const int w = wanted_by(peer, p.cur.tag); w >= 0) {
          // Started before the receive was posted: hand it over now.
          check_frame(peer, p.cur);
          Posted& x = posted_[w];
          if (p.cur.length != x.bytes) size_mismatch(peer, p.cur.tag, x.bytes, p.cur.length);
          if (p.cur.length) std::memcpy(x.data, p.pending.data(), p.cur.length);
          p.pending = {};
          x.done = true;
          completed = true;
        } else {
          p.queue.push(std::move(p.pending));
          p.pending = {};
        }
        p.state = Peer::kReadingHeader;
        p.got = 0;
        p.direct = false;
        p.posted = -1;
        if (completed && first_waiting() < 0) return;
      }
    }
  }

  TcpOptions opts_;
  std::unique_ptr<asio::io_context> io_;
  std::vector<tcp::socket> sockets_;
  std::vector<Peer> peers_;
  std::vector<Posted> posted_;  // the receives of the exchange in progress
  std::unique_ptr<ShmLinks> shm_;
  bool spin_freely_ = false;  // linked, and no more ranks here than CPUs
};

}  // namespace

std::unique_ptr<Transport> make_tcp_transport(const TcpOptions& options,
                                              std::vector<tcp::socket> sockets,
                                              std::unique_ptr<asio::io_context> io) {
  return std::make_unique<TcpTransport>(options, std::move(sockets), std::move(io));
}

}  // namespace mtf::transport

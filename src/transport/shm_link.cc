#include "transport/shm_link.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/check.h"
#include "mtf/errors.h"

namespace mtf::transport {

// The head of a segment: whether its owner sleeps waiting for data.
struct alignas(64) ShmSegmentHeader {
  std::atomic<uint32_t> reader_waiting{0};
};

// One single-producer single-consumer ring of records; its bytes follow the
// header. A record starts on a cache line: an 8-byte stamp (its position in
// the stream of ring bytes, plus 1), a 4-byte length, the data, padding to
// the next line. The writer publishes a record by storing its stamp last,
// so a reader polls the line that carries the data itself: a small message
// reaches it in one cache-line transfer, where a separate head counter
// costs a second. Stale bytes never pass for a stamp: before publishing a
// record, the writer zeroes the word where the next one will start. tail
// is the position up to which the reader has freed space.
struct alignas(64) ShmRing {
  alignas(64) std::atomic<uint64_t> tail{0};
  alignas(64) std::atomic<uint32_t> writer_waiting{0};
  uint64_t capacity = 0;
  char* bytes() { return reinterpret_cast<char*>(this + 1); }
};

static_assert(std::atomic<uint64_t>::is_always_lock_free, "rings need lock-free atomics");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "rings need lock-free atomics");

namespace {

void ring_doorbell(int fd) {
  const char one = 1;
  // A full pipe already holds a wake-up; a closed one belongs to a dead
  // peer, which the TCP connection reports.
  [[maybe_unused]] const ssize_t r = ::write(fd, &one, 1);
}

}  // namespace

ShmLink::ShmLink(ShmRing* in, ShmRing* out, ShmSegmentHeader* theirs, void* their_map,
                 size_t their_map_bytes, int their_doorbell)
    : in_(in),
      out_(out),
      theirs_(theirs),
      their_map_(their_map),
      their_map_bytes_(their_map_bytes),
      their_doorbell_(their_doorbell) {}

ShmLink::~ShmLink() {
  if (their_map_) ::munmap(their_map_, their_map_bytes_);
  if (their_doorbell_ >= 0) ::close(their_doorbell_);
}

void ShmLink::ring_peer() { ring_doorbell(their_doorbell_); }

namespace {

constexpr uint64_t kLine = 64;
constexpr uint64_t kRecordHeader = 12;  // stamp, length

uint64_t record_bytes(uint64_t len) { return (kRecordHeader + len + kLine - 1) / kLine * kLine; }

uint64_t* stamp_at(char* ring, uint64_t cap, uint64_t pos) {
  return reinterpret_cast<uint64_t*>(ring + pos % cap);
}

// The largest record's data, and how often the reader frees space: a
// quarter of the ring at most, so a writer always has a record's room
// while the reader works through the rest, and the reader frees space
// while the writer fills the next record.
uint64_t chunk_bytes(uint64_t cap) { return std::min<uint64_t>(64 << 10, cap / 4); }

}  // namespace

size_t ShmLink::write(const iovec* iov, int n) {
  const uint64_t cap = out_->capacity;
  char* ring = out_->bytes();
  uint64_t want = 0;
  for (int i = 0; i < n; ++i) want += iov[i].iov_len;
  // Room for the record and for zeroing the line after it.
  const auto room = [&] { return cap - (head_ - seen_tail_); };
  if (room() < std::min(record_bytes(want), record_bytes(chunk_bytes(cap))) + kLine)
    seen_tail_ = out_->tail.load(std::memory_order_acquire);
  uint64_t done = 0;
  int vi = 0;
  size_t voff = 0;
  while (done < want && room() >= 2 * kLine) {
    const uint64_t at = head_ % cap;
    const uint64_t fits = std::min(room() - kLine, cap - at) - kRecordHeader;
    const uint64_t len = std::min({want - done, fits, chunk_bytes(cap)});
    char* data = ring + at + kRecordHeader;
    for (uint64_t copied = 0; copied < len;) {
      const size_t piece = std::min<size_t>(iov[vi].iov_len - voff, len - copied);
      std::memcpy(data + copied, static_cast<const char*>(iov[vi].iov_base) + voff, piece);
      copied += piece;
      voff += piece;
      if (voff == iov[vi].iov_len) ++vi, voff = 0;
    }
    const uint64_t next = head_ + record_bytes(len);
    __atomic_store_n(stamp_at(ring, cap, next), uint64_t{0}, __ATOMIC_RELAXED);
    const auto len32 = static_cast<uint32_t>(len);
    std::memcpy(ring + at + 8, &len32, 4);
    // seq_cst: the stamp is seen before we read the flag, as the reader
    // sets the flag before it looks for a record for the last time (no
    // lost wake-up).
    __atomic_store_n(stamp_at(ring, cap, head_), head_ + 1, __ATOMIC_SEQ_CST);
    head_ = next;
    done += len;
  }
  if (done && theirs_->reader_waiting.load(std::memory_order_seq_cst)) ring_peer();
  return done;
}

size_t ShmLink::read(void* buf, size_t n) {
  const uint64_t cap = in_->capacity;
  char* ring = in_->bytes();
  char* dst = static_cast<char*>(buf);
  size_t done = 0;
  while (done < n && __atomic_load_n(stamp_at(ring, cap, read_), __ATOMIC_ACQUIRE) == read_ + 1) {
    uint32_t len;
    std::memcpy(&len, ring + read_ % cap + 8, 4);
    if (len == 0 || len > cap - read_ % cap - kRecordHeader) {
      throw IoError("a shared-memory ring holds a record of " + std::to_string(len) +
                    " bytes at offset " + std::to_string(read_ % cap) + " of " +
                    std::to_string(cap) + ": the peer's process wrote over it (protocol error)");
    }
    const size_t take = std::min<size_t>(len - in_record_, n - done);
    std::memcpy(dst + done, ring + read_ % cap + kRecordHeader + in_record_, take);
    done += take;
    in_record_ += take;
    if (in_record_ < len) break;
    read_ += record_bytes(len);
    in_record_ = 0;
    if (read_ - published_ >= chunk_bytes(cap) ||
        in_->writer_waiting.load(std::memory_order_relaxed))
      publish(read_);
  }
  return done;
}

void ShmLink::publish(uint64_t read_pos) {
  published_ = read_pos;
  // seq_cst, paired with want_space(): a writer that found the ring full and
  // said so is either seen here or sees this tail.
  in_->tail.store(read_pos, std::memory_order_seq_cst);
  if (in_->writer_waiting.load(std::memory_order_seq_cst)) ring_peer();
}

void ShmLink::publish_read() {
  if (read_ != published_) publish(read_);
}

bool ShmLink::readable() const {
  return __atomic_load_n(stamp_at(in_->bytes(), in_->capacity, read_), __ATOMIC_SEQ_CST) ==
         read_ + 1;
}

bool ShmLink::writable() const {
  return out_->capacity - (head_ - out_->tail.load(std::memory_order_seq_cst)) >= 2 * kLine;
}

void ShmLink::want_space() { out_->writer_waiting.store(1, std::memory_order_seq_cst); }
void ShmLink::clear_want_space() { out_->writer_waiting.store(0, std::memory_order_relaxed); }

ShmLinks::~ShmLinks() {
  links_.clear();
  if (map_) ::munmap(map_, map_bytes_);
  for (int fd : doorbell_)
    if (fd >= 0) ::close(fd);
}

int ShmLinks::count() const {
  int n = 0;
  for (const auto& l : links_) n += l != nullptr;
  return n;
}

void ShmLinks::arm() {
  if (!map_) return;
  // Before sleeping, free what we read: a writer must not wait for space
  // held back by a reader that sleeps.
  for (const auto& l : links_)
    if (l) l->publish_read();
  static_cast<ShmSegmentHeader*>(map_)->reader_waiting.store(1, std::memory_order_seq_cst);
}

void ShmLinks::disarm() {
  if (!map_) return;
  static_cast<ShmSegmentHeader*>(map_)->reader_waiting.store(0, std::memory_order_relaxed);
  for (const auto& l : links_)
    if (l) l->clear_want_space();
  char sink[64];
  while (::read(doorbell_[0], sink, sizeof(sink)) > 0) {
  }
}

namespace {

std::string read_line(const char* path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return s;
}

std::string link_of(const char* path) {
  char buf[256];
  const ssize_t n = ::readlink(path, buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

constexpr size_t kIdentityBytes = 496;

struct Hello {  // round 1, with every peer
  char magic[8];
  uint8_t enabled;
  char identity[kIdentityBytes];
};

struct Offer {  // round 2, with local peers: where our ring for you is
  char magic[8];
  int64_t pid;
  int32_t segment_fd, doorbell_fd;
  uint64_t ring_offset, segment_bytes;
};

struct Ack {  // round 3: whether the peer mapped our segment
  char magic[8];
  uint8_t ok;
};

template <typename T>
void exchange_with(const std::vector<int>& peers, const std::vector<int>& fds, const T& mine,
                   std::vector<T>* theirs, const std::vector<T>* per_peer,
                   Clock::time_point deadline) {
  // Every message is small: write to all, then read from all.
  for (size_t i = 0; i < peers.size(); ++i)
    write_all(fds[peers[i]], per_peer ? &(*per_peer)[i] : &mine, sizeof(T), deadline);
  theirs->resize(peers.size());
  for (size_t i = 0; i < peers.size(); ++i)
    read_exact(fds[peers[i]], &(*theirs)[i], sizeof(T), deadline);
}

size_t ring_stride(size_t ring_bytes) { return sizeof(ShmRing) + ring_bytes; }

}  // namespace

std::string host_identity() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return std::string(host) + "|" + read_line("/proc/sys/kernel/random/boot_id") + "|" +
         link_of("/proc/self/ns/net") + "|" + link_of("/proc/self/ns/pid") + "|" +
         link_of("/proc/self/ns/ipc") + "|" + link_of("/proc/self/ns/mnt") + "|uid " +
         std::to_string(::getuid());
}

namespace {

// Round 1's answer: the machine of every rank (numbered by the lowest rank
// with that host identity, so all ranks agree) and the ranks that share
// ours and want shared memory.
struct Neighbours {
  std::vector<int> machines;
  std::vector<int> local;
};

Neighbours meet_peers(int rank, int world, const std::vector<int>& everyone,
                      const std::vector<int>& fds, bool enabled, Clock::time_point deadline) {
  Hello hello{};
  std::memcpy(hello.magic, "MTFSHM1", 8);
  hello.enabled = enabled ? 1 : 0;
  const std::string id = host_identity();
  std::memcpy(hello.identity, id.data(), std::min(id.size(), kIdentityBytes - 1));
  std::vector<Hello> hellos;
  exchange_with<Hello>(everyone, fds, hello, &hellos, nullptr, deadline);
  for (size_t i = 0; i < everyone.size(); ++i) {
    if (std::memcmp(hellos[i].magic, "MTFSHM1", 8) != 0)
      throw Refused("rank " + std::to_string(everyone[i]) +
                    " sent no shared-memory hello (another mtf version?)");
  }
  auto identity_of = [&](int p) {
    if (p == rank) return static_cast<const char*>(hello.identity);
    const size_t i = static_cast<size_t>(p < rank ? p : p - 1);
    return static_cast<const char*>(hellos[i].identity);
  };
  Neighbours n;
  n.machines.assign(static_cast<size_t>(world), 0);
  for (int p = 0; p < world; ++p) {
    int m = p;
    for (int q = 0; q < p && m == p; ++q)
      if (std::memcmp(identity_of(q), identity_of(p), kIdentityBytes) == 0) m = q;
    n.machines[static_cast<size_t>(p)] = m;
  }
  for (size_t i = 0; i < everyone.size(); ++i) {
    if (enabled && hellos[i].enabled &&
        std::memcmp(hellos[i].identity, hello.identity, kIdentityBytes) == 0)
      n.local.push_back(everyone[i]);
  }
  return n;
}

// Our segment: a header, then one ring per local peer (in rank order).
// On failure `failure` says why and nothing is mapped.
struct Segment {
  int fd = -1;
  void* map = nullptr;
  size_t bytes = 0;
  std::string failure;
};

Segment make_segment(size_t peers, size_t ring_bytes) {
  Segment seg;
  const size_t stride = ring_stride(ring_bytes);
  seg.bytes = sizeof(ShmSegmentHeader) + stride * peers;
  seg.fd = ::memfd_create("mtf-shm", MFD_CLOEXEC);
  if (seg.fd < 0 || ::ftruncate(seg.fd, static_cast<off_t>(seg.bytes)) != 0) {
    seg.failure = std::string("memfd_create/ftruncate: ") + std::strerror(errno);
    return seg;
  }
  void* m = ::mmap(nullptr, seg.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, seg.fd, 0);
  if (m == MAP_FAILED) {
    seg.failure = std::string("mmap: ") + std::strerror(errno);
    return seg;
  }
  seg.map = m;
  new (m) ShmSegmentHeader();
  for (size_t i = 0; i < peers; ++i) {
    auto* ring = new (static_cast<char*>(m) + sizeof(ShmSegmentHeader) + i * stride) ShmRing();
    ring->capacity = ring_bytes;
  }
  return seg;
}

// Maps the segment a peer offered (through /proc) and makes the link whose
// incoming ring is ours at `my_ring_offset`; null with `why` on failure.
std::unique_ptr<ShmLink> map_peer(const Offer& o, void* my_map, size_t my_ring_offset,
                                  size_t ring_bytes, std::string* why) {
  if (o.pid == 0) {
    *why = "it could not make its segment";
    return nullptr;
  }
  const std::string proc = "/proc/" + std::to_string(o.pid) + "/fd/";
  const int fd = ::open((proc + std::to_string(o.segment_fd)).c_str(), O_RDWR | O_CLOEXEC);
  const int bell =
      ::open((proc + std::to_string(o.doorbell_fd)).c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st {};
  void* m = MAP_FAILED;
  if (fd >= 0 && bell >= 0 && ::fstat(fd, &st) == 0 &&
      static_cast<uint64_t>(st.st_size) == o.segment_bytes &&
      o.ring_offset + ring_stride(ring_bytes) <= o.segment_bytes)
    m = ::mmap(nullptr, o.segment_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  std::unique_ptr<ShmLink> link;
  if (m == MAP_FAILED) {
    *why = "opening its segment through " + proc + " failed: " + std::strerror(errno);
    if (bell >= 0) ::close(bell);
  } else {
    auto* in = reinterpret_cast<ShmRing*>(static_cast<char*>(my_map) + my_ring_offset);
    auto* remote = reinterpret_cast<ShmRing*>(static_cast<char*>(m) + o.ring_offset);
    link = std::make_unique<ShmLink>(in, remote, static_cast<ShmSegmentHeader*>(m), m,
                                     o.segment_bytes, bell);
  }
  if (fd >= 0) ::close(fd);
  return link;
}

}  // namespace

std::unique_ptr<ShmLinks> link_local_peers(int rank, int world, const std::vector<int>& fds,
                                           bool enabled, size_t ring_bytes,
                                           Clock::time_point deadline) {
  ring_bytes = (ring_bytes + kLine - 1) / kLine * kLine;
  auto out = std::make_unique<ShmLinks>();
  out->links_.resize(world);
  out->machines_.assign(static_cast<size_t>(world), 0);
  std::vector<int> everyone;
  for (int p = 0; p < world; ++p)
    if (p != rank) everyone.push_back(p);
  if (everyone.empty()) return out;

  // Round 1: who shares this machine (and wants shared memory)?
  const Neighbours n = meet_peers(rank, world, everyone, fds, enabled, deadline);
  out->machines_ = n.machines;
  const std::vector<int>& local = n.local;
  if (local.empty()) return out;

  Segment seg = make_segment(local.size(), ring_bytes);
  std::string failure = seg.failure;
  if (seg.map) {
    out->map_ = seg.map;
    out->map_bytes_ = seg.bytes;
  }
  if (failure.empty() && ::pipe2(out->doorbell_, O_NONBLOCK | O_CLOEXEC) != 0)
    failure = std::string("pipe2: ") + std::strerror(errno);

  // Round 2: where each peer's ring is (pid and fds, opened by the peer
  // through /proc). A failed side offers nothing (pid 0).
  std::vector<Offer> offers(local.size());
  for (size_t i = 0; i < local.size(); ++i) {
    std::memcpy(offers[i].magic, "MTFSHM2", 8);
    offers[i].pid = failure.empty() ? ::getpid() : 0;
    offers[i].segment_fd = seg.fd;
    offers[i].doorbell_fd = out->doorbell_[1];
    offers[i].ring_offset = sizeof(ShmSegmentHeader) + i * ring_stride(ring_bytes);
    offers[i].segment_bytes = seg.bytes;
  }
  std::vector<Offer> theirs;
  exchange_with(local, fds, offers[0], &theirs, &offers, deadline);

  // Map each peer's segment; the link stands only if both sides did.
  std::vector<std::unique_ptr<ShmLink>> made(local.size());
  std::vector<std::string> why(local.size(), failure);
  std::vector<Ack> acks(local.size());
  for (size_t i = 0; i < local.size(); ++i) {
    std::memcpy(acks[i].magic, "MTFSHM3", 8);
    acks[i].ok = 0;
    if (!failure.empty()) continue;
    made[i] = map_peer(theirs[i], out->map_, offers[i].ring_offset, ring_bytes, &why[i]);
    acks[i].ok = made[i] ? 1 : 0;
  }

  // Round 3: both sides mapped, or both fall back to TCP.
  std::vector<Ack> got;
  exchange_with(local, fds, acks[0], &got, &acks, deadline);
  if (seg.fd >= 0) ::close(seg.fd);  // every peer that mapped it has said so
  for (size_t i = 0; i < local.size(); ++i) {
    if (acks[i].ok && got[i].ok) {
      out->links_[local[i]] = std::move(made[i]);
      continue;
    }
    if (why[i].empty()) why[i] = "it could not map this rank's segment";
    std::fprintf(stderr, "mtf: rank %d: shared memory with rank %d unavailable (%s); using TCP\n",
                 rank, local[i], why[i].c_str());
  }
  return out;
}

}  // namespace mtf::transport

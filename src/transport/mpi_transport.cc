// MPI transport: the transport interface on MPI point-to-point messages.
// Each message is two MPI messages to the same peer: the 88-byte header
// (MPI tag 1) and the payload (MPI tag 2); MPI keeps each tag's order, so the
// k-th payload follows the k-th header. An expected payload is received
// straight into the caller's buffer; others are queued. Sends are MPI_Isend,
// completed while draining incoming messages, so two ranks sending large
// messages to each other cannot deadlock.
#include "mtf/mpi_transport.h"

#include <cstdlib>

#include "mtf/errors.h"

#ifdef MTF_HAVE_MPI
// The C API only (OpenMPI's and MPICH's C++ bindings need their own library).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "core/check.h"
#include "transport/frames.h"

namespace mtf {
namespace {

using Clock = std::chrono::steady_clock;
using transport::EarlyFrames;
using transport::Frame;
using transport::FrameHeader;
using transport::kHeader;
constexpr int kHeaderTag = 1, kPayloadTag = 2;

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw IoError(std::string("MPI ") + what + " failed: " + std::string(msg, len));
}

class MpiTransport : public Transport {
 public:
  MpiTransport(bool owns_init, std::chrono::milliseconds timeout) : owns_init_(owns_init) {
    set_timeout(timeout);
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm shared;
    if (MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared) ==
        MPI_SUCCESS) {
      MPI_Comm_size(shared, &local_size_);
      // Each rank's machine: the lowest rank sharing its memory.
      int lowest = rank_;
      machines_.assign(static_cast<size_t>(size_), 0);
      if (MPI_Allreduce(&rank_, &lowest, 1, MPI_INT, MPI_MIN, shared) != MPI_SUCCESS ||
          MPI_Allgather(&lowest, 1, MPI_INT, machines_.data(), 1, MPI_INT, comm_) != MPI_SUCCESS)
        machines_.clear();
      MPI_Comm_free(&shared);
    }
    queues_.resize(size_);
  }
  ~MpiTransport() override {
    MPI_Comm_free(&comm_);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_init_ && !finalized) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_size() const override { return local_size_; }
  std::vector<int> machines() const override { return machines_; }

  void send(int peer, uint64_t tag, const void* data, size_t bytes) override {
    check_peer(peer, "send");
    if (bytes > static_cast<size_t>(INT32_MAX)) {
      throw ValueError("MPI transport: a message of " + std::to_string(bytes) +
                       " bytes exceeds MPI's int count; split it");
    }
    char head[kHeader];
    FrameHeader::for_call(current_collective(), tag, bytes).encode(head);
    MPI_Request req[2];
    check_mpi(MPI_Isend(head, kHeader, MPI_BYTE, peer, kHeaderTag, comm_, &req[0]), "MPI_Isend");
    check_mpi(MPI_Isend(const_cast<void*>(data), static_cast<int>(bytes), MPI_BYTE, peer,
                        kPayloadTag, comm_, &req[1]),
              "MPI_Isend");
    const Clock::time_point deadline = Clock::now() + timeout();
    for (;;) {
      int done = 0;
      check_mpi(MPI_Testall(2, req, &done, MPI_STATUSES_IGNORE), "MPI_Testall");
      if (done) return;
      if (!drain_one()) {
        if (Clock::now() >= deadline) {
          throw TimeoutError("rank " + std::to_string(rank_) + " could not send " +
                             std::to_string(bytes) + " bytes to rank " + std::to_string(peer) +
                             " within " + std::to_string(timeout().count()) + " ms in " +
                             transport::describe_call(current_collective()));
        }
        std::this_thread::yield();
      }
    }
  }

  void recv(int peer, uint64_t tag, void* data, size_t bytes) override {
    check_peer(peer, "recv");
    const Clock::time_point deadline = Clock::now() + timeout();
    for (;;) {
      if (take_queued(peer, tag, data, bytes)) return;
      queues_[peer].check_all(rank_, current_collective(), peer);
      int flag = 0;
      MPI_Status st;
      check_mpi(MPI_Iprobe(peer, kHeaderTag, comm_, &flag, &st), "MPI_Iprobe");
      if (flag) {
        FrameHeader h = receive_header(peer);
        if (h.tag == tag) {
          transport::check_same_call(rank_, current_collective(), peer, h);
          if (h.length != bytes) {
            const Frame sink = Frame::for_header(h);
            receive_payload(peer, sink.data(), h.length);
            size_mismatch(peer, tag, bytes, h.length);
          }
          receive_payload(peer, data, bytes);
          return;
        }
        Frame f = Frame::for_header(h);
        receive_payload(peer, f.data(), h.length);
        queues_[peer].push(std::move(f));
        continue;
      }
      if (drain_one()) continue;
      if (Clock::now() >= deadline) {
        throw TimeoutError("rank " + std::to_string(rank_) + " waited " +
                           std::to_string(timeout().count()) + " ms for rank " +
                           std::to_string(peer) + " (tag " + std::to_string(tag) + ") in " +
                           transport::describe_call(current_collective()));
      }
      std::this_thread::yield();
    }
  }

 private:
  FrameHeader receive_header(int peer) {
    char head[kHeader];
    check_mpi(MPI_Recv(head, kHeader, MPI_BYTE, peer, kHeaderTag, comm_, MPI_STATUS_IGNORE),
              "MPI_Recv");
    FrameHeader h;
    const std::string bad = h.decode(head);
    if (!bad.empty()) throw IoError("rank " + std::to_string(peer) + " sent " + bad);
    return h;
  }
  void receive_payload(int peer, void* data, size_t bytes) {
    check_mpi(MPI_Recv(data, static_cast<int>(bytes), MPI_BYTE, peer, kPayloadTag, comm_,
                       MPI_STATUS_IGNORE),
              "MPI_Recv");
  }
  // Queues one waiting message from any peer; false when there is none.
  bool drain_one() {
    int flag = 0;
    MPI_Status st;
    check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kHeaderTag, comm_, &flag, &st), "MPI_Iprobe");
    if (!flag) return false;
    const int peer = st.MPI_SOURCE;
    FrameHeader h = receive_header(peer);
    Frame f = Frame::for_header(h);
    receive_payload(peer, f.data(), h.length);
    queues_[peer].push(std::move(f));
    return true;
  }
  bool take_queued(int peer, uint64_t tag, void* data, size_t bytes) {
    return queues_[peer].take(rank_, current_collective(), peer, tag, data, bytes);
  }
  [[noreturn]] void size_mismatch(int peer, uint64_t tag, size_t want, size_t got) const {
    transport::throw_size_mismatch(rank_, current_collective(), peer, tag, want, got);
  }

  bool owns_init_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_size_ = 1;
  std::vector<int> machines_;
  std::vector<EarlyFrames> queues_;
};

}  // namespace

bool mpi_available() { return true; }

std::unique_ptr<Transport> connect_mpi(std::chrono::milliseconds timeout) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  }
  return std::make_unique<MpiTransport>(!initialized, timeout);
}

}  // namespace mtf

#else  // no MPI in this build

namespace mtf {
bool mpi_available() { return false; }
std::unique_ptr<Transport> connect_mpi(std::chrono::milliseconds) {
  throw ValueError(
      "this mtf was built without MPI (install libopenmpi-dev and rebuild with "
      "-DMTF_WITH_MPI=ON)");
}
}  // namespace mtf

#endif

namespace mtf {
bool in_mpi_environment() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}
}  // namespace mtf

// The TCP transport beyond the contract every transport keeps
// (transport_contract_test.cc), with ranks as threads of this process over
// loopback: early exits and diverging collectives are clear errors; garbage, wrong tokens,
// duplicate ranks and absurd lengths are refused while the job goes on. Payloads that TCP and MPI
// receive before their receive is posted reuse pooled memory.
#include "mtf/tcp_transport.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <thread>

#include "expect_error.h"
#include "mtf/collectives.h"
#include "tcp_world.h"
#include "test_util.h"
#include "transport/frames.h"

namespace mtf {
namespace {

using testing::run_tcp;
using testing::tcp_options;

// Ordering, sizes, exchange() and collectives: the transport contract
// (transport_contract_test.cc), which runs on TCP as on every transport.

TEST(TcpTransport, ASilentPeerIsATimeoutAndAnEarlyExitIsNamed) {
  const auto errors = run_tcp(
      2,
      [](Transport& t) {
        if (t.rank() == 0) {
          int32_t v;
          t.recv(1, 3, &v, sizeof(v));  // rank 1 never sends tag 3
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(600));
        }
      },
      std::chrono::milliseconds(300));
  // Rank 1 said goodbye before the deadline or after: either way rank 0
  // fails with a message naming rank 1.
  EXPECT_NE(errors[0].find("rank 1"), std::string::npos) << errors[0];
  EXPECT_EQ(errors[1], "");
}

TEST(TcpTransport, DivergingCollectivesAreNamed) {
  const auto errors = run_tcp(2, [](Transport& t) {
    const Group g = Group::all(2, t.rank());
    std::vector<float> x(8, 1.f);
    if (t.rank() == 0) {
      t.begin_collective({0, "allreduce", "einsum_7", 32});
      allreduce(t, g, x.data(), 8, float32, ReduceOp::kSum, 11);
    } else {
      t.begin_collective({0, "allgather", "relu_2", 32});
      std::vector<float> all(16);
      allgather(t, g, x.data(), all.data(), 8, float32, 11);
    }
  });
  const std::string both = errors[0] + " | " + errors[1];
  EXPECT_NE(both.find("diverged"), std::string::npos) << both;
  EXPECT_NE(both.find("einsum_7"), std::string::npos) << both;
  EXPECT_NE(both.find("relu_2"), std::string::npos) << both;
}

TEST(TcpTransport, ARankThatSkipsACollectiveIsNamed) {
  const auto errors = run_tcp(2, [](Transport& t) {
    const Group g = Group::all(2, t.rank());
    std::vector<float> x(8, 1.f);
    if (t.rank() == 0) {
      t.begin_collective({0, "allreduce", "first", 32});
      allreduce(t, g, x.data(), 8, float32, ReduceOp::kSum, 1);
    } else {
      t.begin_collective({0, "allreduce", "first", 32});
      t.begin_collective({0, "allreduce", "second", 32});  // skipped "first"
      allreduce(t, g, x.data(), 8, float32, ReduceOp::kSum, 2);
    }
  });
  const std::string both = errors[0] + " | " + errors[1];
  EXPECT_NE(both.find("diverged"), std::string::npos) << both;
}

// Connects to 127.0.0.1:port (retrying until it listens), writes `bytes`,
// waits a little and closes.
void intruder(int port, const std::string& bytes) {
  for (int i = 0; i < 200; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
      if (!bytes.empty()) (void)!::write(fd, bytes.data(), bytes.size());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ::close(fd);
      return;
    }
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST(TcpTransport, IntrudersAreRefusedAndTheJobGoesOn) {
  const int port = testing::free_port();
  std::string rank0_error;
  float result = 0;
  std::thread rank0([&] {
    try {
      auto t = connect_tcp(tcp_options(0, 2, port));
      float x = 1.f;
      allreduce(*t, Group::all(2, 0), &x, 1, float32, ReduceOp::kSum, 1);
      result = x;
    } catch (const std::exception& e) {
      rank0_error = e.what();
    }
  });
  // Random bytes; a truncated hello; a hello with an absurd address length.
  intruder(port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  intruder(port, "MTFH\x01");
  std::string absurd = "MTFH";
  absurd += std::string("\x02\x00\xff\xff", 4);  // version 2, address length 65535
  absurd += std::string(8 + 16, '\0');
  intruder(port, absurd);
  // A rank with the wrong token, and one of another job size that does not
  // know the token either.
  TcpOptions wrong = tcp_options(1, 2, port);
  wrong.token = "not-the-job-token";
  EXPECT_THROW(connect_tcp(wrong), IoError);
  TcpOptions other = tcp_options(1, 3, port);
  other.token = "not-the-job-token";
  EXPECT_THROW(connect_tcp(other), IoError);
  // The real rank 1.
  std::string rank1_error;
  try {
    auto t = connect_tcp(tcp_options(1, 2, port));
    float x = 2.f;
    allreduce(*t, Group::all(2, 1), &x, 1, float32, ReduceOp::kSum, 1);
    EXPECT_EQ(x, 3.f);
  } catch (const std::exception& e) {
    rank1_error = e.what();
  }
  rank0.join();
  EXPECT_EQ(rank0_error, "");
  EXPECT_EQ(rank1_error, "");
  EXPECT_EQ(result, 3.f);
}

// Ranks that know the token but disagree about the job (another world size,
// two processes claiming one rank) fail the set-up on both sides at once,
// naming the disagreement, instead of waiting for the deadline.
TEST(TcpTransport, RanksThatDisagreeAboutTheJobFailAtOnce) {
  using Clock = std::chrono::steady_clock;
  for (const char* kind : {"world size", "duplicate rank"}) {
    SCOPED_TRACE(kind);
    const int port = testing::free_port();
    const bool dup = std::string(kind) == "duplicate rank";
    const int world = dup ? 3 : 2;
    std::vector<std::string> errors(3);
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> ranks;
    ranks.emplace_back([&] {
      try {
        connect_tcp(tcp_options(0, world, port));
      } catch (const std::exception& e) {
        errors[0] = e.what();
      }
    });
    // Rank 1 of another world size; or rank 1 twice, the second a moment later.
    for (int k = 0; k < (dup ? 2 : 1); ++k) {
      ranks.emplace_back([&, k] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200 * k));
        try {
          connect_tcp(tcp_options(1, dup ? world : 3, port));
        } catch (const std::exception& e) {
          errors[1 + k] = e.what();
        }
      });
    }
    for (auto& t : ranks) t.join();
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));  // the deadline is 20 s
    const std::string want = dup ? "two processes claim rank 1" : "in a job of 3 processes";
    EXPECT_NE(errors[0].find(want), std::string::npos) << errors[0];
    EXPECT_NE(errors[dup ? 2 : 1].find(want), std::string::npos) << errors[dup ? 2 : 1];
  }
}

// MTF_LISTEN_HOST may be a name (it is resolved) or a wildcard (the rank then
// tells its peers the address of the interface that reaches the coordinator).
TEST(TcpTransport, ListenHostsAreNamesOrWildcards) {
  for (const char* host : {"localhost", "0.0.0.0", ""}) {
    SCOPED_TRACE(host);
    const int port = testing::free_port();
    std::vector<std::string> errors(3);
    std::vector<float> sums(3);
    std::vector<std::thread> ranks;
    for (int r = 0; r < 3; ++r) {
      ranks.emplace_back([&, r] {
        try {
          TcpOptions o = tcp_options(r, 3, port);
          o.listen_host = host;
          auto t = connect_tcp(o);
          float x = static_cast<float>(r + 1);
          allreduce(*t, Group::all(3, r), &x, 1, float32, ReduceOp::kSum, 1);
          sums[r] = x;
        } catch (const std::exception& e) {
          errors[r] = e.what();
        }
      });
    }
    for (auto& t : ranks) t.join();
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(errors[r], "");
      EXPECT_EQ(sums[r], 6.f);
    }
  }
  TcpOptions o = tcp_options(1, 2, testing::free_port());
  o.listen_host = "no-such-host.invalid";
  o.connect_timeout = std::chrono::seconds(2);
  testing::expect_error<IoError>([&] { connect_tcp(o); }, {"MTF_LISTEN_HOST"});
}

TEST(TcpTransport, BadOptionsAreClearErrors) {
  TcpOptions o = tcp_options(0, 2, 1);
  o.token = "short";
  EXPECT_THROW(connect_tcp(o), ValueError);
  o = tcp_options(2, 2, 1);
  EXPECT_THROW(connect_tcp(o), ValueError);
  o = tcp_options(0, 2, 1);
  o.coordinator = "no-port";
  EXPECT_THROW(connect_tcp(o), ValueError);
  o = tcp_options(0, 2, 1);
  o.shm_ring_bytes = 100;
  EXPECT_THROW(connect_tcp(o), ValueError);
}

TEST(Frames, PayloadsThatArriveEarlyReuseMemoryAlreadyFaultedIn) {
  transport::FrameHeader h;
  h.length = 1 << 20;
  const char* memory = nullptr;
  {
    const transport::Frame early = transport::Frame::for_header(h);
    early.data()[h.length - 1] = 1;
    memory = early.data();
  }
  EXPECT_EQ(transport::Frame::for_header(h).data(), memory);
}

// A header without the call's names is the fixed part alone, and decoding
// it keeps the names the reader had (the previous frame's on the stream).
TEST(Frames, NamesTravelOnlyWhenAsked) {
  CollectiveCall call;
  call.seq = 7;
  call.kind = "allreduce";
  call.op = "a rather long op name, over 15 characters";
  call.bytes = 64;
  const transport::FrameHeader sent = transport::FrameHeader::for_call(call, 3, 64);
  char with[transport::kHeader], without[transport::kHeader];
  ASSERT_EQ(sent.encode(with, true), transport::kHeader);
  ASSERT_EQ(sent.encode(without, false), transport::kHeaderFixed);
  EXPECT_TRUE(transport::FrameHeader::has_names(with));
  EXPECT_FALSE(transport::FrameHeader::has_names(without));

  transport::FrameHeader got;
  ASSERT_EQ(got.decode(with), "");
  EXPECT_EQ(got.kind, "allreduce");
  EXPECT_EQ(got.op, call.op.substr(0, transport::kOpBytes));
  transport::FrameHeader next = sent;
  next.seq = 8;
  next.tag = 4;
  next.encode(without, false);
  ASSERT_EQ(got.decode(without), "");
  EXPECT_EQ(got.seq, 8u);
  EXPECT_EQ(got.tag, 4u);
  EXPECT_EQ(got.kind, "allreduce");
  EXPECT_EQ(got.op, call.op.substr(0, transport::kOpBytes));
  EXPECT_NO_THROW(
      transport::check_same_call(0, CollectiveCall{8, "allreduce", call.op, 64}, 1, got));
}

}  // namespace
}  // namespace mtf

// The TCP transport, with ranks as threads of this process over loopback:
// messages and collectives give exact answers; two ranks sending 64 MiB to
// each other at once do not deadlock; timeouts, early exits and diverging
// collectives are clear errors; garbage, wrong tokens, duplicate ranks and
// absurd lengths are refused while the job goes on. Payloads that TCP and MPI
// receive before their receive is posted reuse pooled memory.
#include "mtf/tcp_transport.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <thread>

#include "exchange_scenario.h"
#include "mtf/collectives.h"
#include "test_util.h"
#include "transport/frames.h"

namespace mtf {
namespace {

TcpOptions options(int rank, int n, int port,
                   std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  TcpOptions o;
  o.rank = rank;
  o.world_size = n;
  o.coordinator = "127.0.0.1:" + std::to_string(port);
  o.token = "a-test-token-of-this-job";
  o.timeout = timeout;
  o.connect_timeout = std::chrono::seconds(20);
  return o;
}

// Runs body(transport) on n ranks (threads); returns each rank's error text
// ("" when it succeeded).
std::vector<std::string> run_tcp(int n, const std::function<void(Transport&)>& body,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(20),
                                 int port = 0) {
  if (port == 0) port = testing::free_port();
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto t = connect_tcp(options(r, n, port, timeout));
        body(*t);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

void expect_no_errors(const std::vector<std::string>& errors) {
  for (size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

TEST(TcpTransport, MessagesKeepOrderPerPeerAndTag) {
  expect_no_errors(run_tcp(3, [](Transport& t) {
    const int next = (t.rank() + 1) % 3, prev = (t.rank() + 2) % 3;
    for (int i = 0; i < 50; ++i) {
      const int32_t v = t.rank() * 1000 + i;
      t.send(next, i % 2, &v, sizeof(v));
    }
    for (int tag : {1, 0}) {  // tag 1 first: out of arrival order
      for (int i = tag; i < 50; i += 2) {
        int32_t v = -1;
        t.recv(prev, tag, &v, sizeof(v));
        ASSERT_EQ(v, prev * 1000 + i);
      }
    }
    t.send(next, 9, nullptr, 0);  // empty messages too
    t.recv(prev, 9, nullptr, 0);
  }));
}

TEST(TcpTransport, CollectivesGiveExactAnswers) {
  for (int n : {2, 3, 4, 8}) {
    expect_no_errors(run_tcp(n, [n](Transport& t) {
      const Group g = Group::all(n, t.rank());
      for (int64_t count : {0, 1, 17, 100003}) {
        std::vector<float> x(count);
        for (int64_t i = 0; i < count; ++i) x[i] = static_cast<float>(t.rank() + 1 + i % 7);
        allreduce(t, g, x.data(), count, float32, ReduceOp::kSum, 1 + count);
        for (int64_t i = 0; i < count; ++i)
          ASSERT_EQ(x[i], static_cast<float>(n * (n + 1) / 2 + n * (i % 7))) << "n " << n;
        std::vector<int32_t> mine(count, t.rank()), all(count * n);
        allgather(t, g, mine.data(), all.data(), count, int32, 2 + count);
        for (int r = 0; r < n; ++r)
          for (int64_t i = 0; i < count; ++i) ASSERT_EQ(all[r * count + i], r);
      }
    }));
  }
}

TEST(TcpTransport, LargeMessagesBothWaysAtOnceDoNotDeadlock) {
  const size_t bytes = size_t{64} << 20;
  expect_no_errors(run_tcp(2, [bytes](Transport& t) {
    std::vector<char> out(bytes, static_cast<char>(t.rank() + 1)), in(bytes);
    const int other = 1 - t.rank();
    t.send(other, 5, out.data(), bytes);  // both send first: the engine drains meanwhile
    t.recv(other, 5, in.data(), bytes);
    for (size_t i = 0; i < bytes; i += 4099) ASSERT_EQ(in[i], static_cast<char>(other + 1));
  }));
}

// exchange() posts its receives before sending: payloads land in place
// (tests/exchange_scenario.h), including megabytes that arrive while the
// rank is still sending.
TEST(TcpTransport, ExchangeMatchesMessagesInOrderWhereverTheyArrive) {
  expect_no_errors(run_tcp(3, [](Transport& t) { testing::exchange_scenario(t, 3, 3 << 20); }));
}

TEST(TcpTransport, ExchangeNamesASizeMismatch) {
  const auto errors = run_tcp(2, [](Transport& t) {
    const int other = 1 - t.rank();
    std::vector<char> out(4096, 'x'), in(4096);
    if (t.rank() == 0) {
      t.exchange({{other, 2, out.data(), out.size()}}, {});
    } else {
      t.exchange({}, {{other, 2, in.data(), in.size() / 2}});
    }
  });
  EXPECT_EQ(errors[0], "");
  EXPECT_NE(errors[1].find("expected 2048 bytes from rank 0 (tag 2)"), std::string::npos)
      << errors[1];
}

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
      auto t = connect_tcp(options(0, 2, port));
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
  absurd += std::string("\x01\x00\xff\xff", 4);  // version 1, address length 65535
  absurd += std::string(8 + 16, '\0');
  intruder(port, absurd);
  // A rank with the wrong token, and one of another job size.
  TcpOptions wrong = options(1, 2, port);
  wrong.token = "not-the-job-token";
  EXPECT_THROW(connect_tcp(wrong), IoError);
  TcpOptions other = options(1, 3, port);
  EXPECT_THROW(connect_tcp(other), IoError);
  // The real rank 1.
  std::string rank1_error;
  try {
    auto t = connect_tcp(options(1, 2, port));
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

TEST(TcpTransport, BadOptionsAreClearErrors) {
  TcpOptions o = options(0, 2, 1);
  o.token = "short";
  EXPECT_THROW(connect_tcp(o), ValueError);
  o = options(2, 2, 1);
  EXPECT_THROW(connect_tcp(o), ValueError);
  o = options(0, 2, 1);
  o.coordinator = "no-port";
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

}  // namespace
}  // namespace mtf

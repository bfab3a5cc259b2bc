// The Transport base class: peer checks and collective-call bookkeeping.
#include "mtf/transport.h"

#include "core/check.h"
#include "mtf/errors.h"

namespace mtf {

std::string CollectiveCall::describe() const {
  return detail::str_cat(kind.empty() ? std::string("a direct call") : kind, " #", seq,
                         op.empty() ? std::string() : " (op \"" + op + "\")", ", ", bytes,
                         " bytes");
}

void Transport::record_collective(CollectiveCall call) {
  call.seq = ++calls_;
  call_ = std::move(call);
}

void Transport::begin_collective(CollectiveCall call) { record_collective(std::move(call)); }

void Transport::exchange(const std::vector<SendSpec>& sends, const std::vector<RecvSpec>& recvs) {
  for (const SendSpec& s : sends) send(s.peer, s.tag, s.data, s.bytes);
  for (const RecvSpec& r : recvs) recv(r.peer, r.tag, r.data, r.bytes);
}

bool Transport::time_ring_passes(const std::vector<RingPassTiming>&) { return false; }
bool Transport::time_exchange_rounds(const ExchangeRoundsTiming&) { return false; }

void Transport::check_peer(int peer, const char* what) const {
  if (peer < 0 || peer >= size() || peer == rank()) {
    throw ValueError(detail::str_cat(what, " on rank ", rank(), ": peer ", peer,
                                     " is not another rank of this job (size ", size(), ")"));
  }
}

}  // namespace mtf

#include "checkpoint/agreement.h"

#include "mtf/errors.h"

namespace mtf::checkpoint {

int agree(Transport* job, bool ok, std::string& error, const AgreementTags& tags,
          const std::function<void()>& finish) {
  const int me = job ? job->rank() : 0;
  const int n = job ? job->size() : 1;
  // 1 for success, else -1 - (the lowest failed rank).
  int32_t status = ok ? 1 : -1 - me;
  if (me != 0) {
    job->send(0, tags.status, &status, sizeof(status));
    job->recv(0, tags.verdict, &status, sizeof(status));
    return status == 1 ? -1 : -1 - status;
  }
  for (int r = 1; r < n; ++r) {
    int32_t theirs = 1;
    job->recv(r, tags.status, &theirs, sizeof(theirs));
    if (status == 1) status = theirs;
  }
  if (status == 1) {
    try {
      finish();
    } catch (const Error& e) {
      status = -1;
      error = e.what();
    }
  }
  for (int r = 1; r < n; ++r) job->send(r, tags.verdict, &status, sizeof(status));
  return status == 1 ? -1 : -1 - status;
}

}  // namespace mtf::checkpoint

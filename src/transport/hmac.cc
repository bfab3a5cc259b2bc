#include "transport/hmac.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "mtf/errors.h"

namespace mtf::transport {

Digest hmac_sha256(const std::string& key, const std::string& message) {
  Digest d{};
  unsigned int len = 0;
  const unsigned char* out =
      HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), d.data(), &len);
  if (out == nullptr || len != d.size()) throw InternalError("HMAC-SHA-256 failed in libcrypto");
  return d;
}

bool digests_equal(const Digest& a, const Digest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string random_bytes(size_t n) {
  std::string s(n, '\0');
  if (n > 0 && RAND_bytes(reinterpret_cast<unsigned char*>(s.data()), static_cast<int>(n)) != 1) {
    throw InternalError("libcrypto's RAND_bytes could not supply " + std::to_string(n) +
                        " random bytes");
  }
  return s;
}

}  // namespace mtf::transport

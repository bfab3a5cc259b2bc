// The TCP handshake's cryptography (libcrypto behind transport/hmac.h):
// HMAC-SHA-256 gives RFC 4231's known answers, digests compare equal only
// when equal, and nonces come from a secure generator (distinct draws).
#include "transport/hmac.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace mtf {
namespace {

std::string hex(const transport::Digest& d) {
  std::string s;
  char b[3];
  for (uint8_t v : d) {
    std::snprintf(b, sizeof(b), "%02x", v);
    s += b;
  }
  return s;
}

// RFC 4231, section 4 (test case 5 truncates the output; not used here).
TEST(Hmac, Rfc4231KnownAnswers) {
  struct Case {
    std::string key, data, want;
  };
  std::string key4;
  for (int i = 1; i <= 25; ++i) key4.push_back(static_cast<char>(i));
  const std::vector<Case> cases = {
      {std::string(20, '\x0b'), "Hi There",
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {"Jefe", "what do ya want for nothing?",
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {std::string(20, '\xaa'), std::string(50, '\xdd'),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
      {key4, std::string(50, '\xcd'),
       "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
      {std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First",
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
      {std::string(131, '\xaa'),
       "This is a test using a larger than block-size key and a larger than block-size data. "
       "The key needs to be hashed before being used by the HMAC algorithm.",
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
  for (size_t i = 0; i < cases.size(); ++i)
    EXPECT_EQ(hex(transport::hmac_sha256(cases[i].key, cases[i].data)), cases[i].want)
        << "case " << (i < 4 ? i + 1 : i + 2);
  // An empty key and message still make a digest.
  EXPECT_EQ(hex(transport::hmac_sha256("", "")),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(Hmac, DigestsCompareEqualOnlyWhenEqual) {
  const transport::Digest a = transport::hmac_sha256("token", "server|nonces|0,1,2");
  transport::Digest b = a;
  EXPECT_TRUE(transport::digests_equal(a, b));
  for (size_t i : {size_t{0}, size_t{17}, size_t{31}}) {
    b = a;
    b[i] ^= 1;
    EXPECT_FALSE(transport::digests_equal(a, b)) << "byte " << i;
  }
  EXPECT_NE(hex(a), hex(transport::hmac_sha256("token2", "server|nonces|0,1,2")));
}

TEST(Hmac, NoncesAreFreshRandomBytes) {
  std::set<std::string> seen;
  for (int i = 0; i < 64; ++i) {
    const std::string n = transport::random_bytes(16);
    ASSERT_EQ(n.size(), 16u);
    seen.insert(n);
  }
  EXPECT_EQ(seen.size(), 64u);
  EXPECT_EQ(transport::random_bytes(0), "");
}

}  // namespace
}  // namespace mtf

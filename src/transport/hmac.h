// hmac.h — SHA-256 and HMAC-SHA-256 (FIPS 180-4, RFC 2104), for the TCP
// transport's challenge-response: a peer proves it knows the job token
// without sending it. Internal.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace mtf::transport {

using Digest = std::array<uint8_t, 32>;

Digest sha256(const std::string& data);
Digest hmac_sha256(const std::string& key, const std::string& message);
// Compares in time independent of where they differ.
bool digests_equal(const Digest& a, const Digest& b);

}  // namespace mtf::transport

// hmac.h — HMAC-SHA-256 (RFC 2104) and random nonces, from OpenSSL's
// libcrypto, for the TCP transport's challenge-response: a peer proves it
// knows the job token without sending it. Internal.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace mtf::transport {

using Digest = std::array<uint8_t, 32>;

Digest hmac_sha256(const std::string& key, const std::string& message);
// Compares in time independent of where they differ.
bool digests_equal(const Digest& a, const Digest& b);
// `n` bytes from the operating system's cryptographically secure generator
// (InternalError if it cannot supply them).
std::string random_bytes(size_t n);

}  // namespace mtf::transport

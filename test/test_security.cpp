// The authenticated actor link's primitives: SHA-256 against FIPS 180-4, HMAC-SHA256 against
// RFC 4231, the constant-time compare, loading the shared secret, and the mutual
// challenge-response of docs/security.md including its test vector.
#include <stdlib.h>  // setenv, unsetenv (POSIX)
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/security/challenge.hpp"
#include "seedrl/security/hmac.hpp"
#include "seedrl/security/sha256.hpp"
#include "seedrl/security/shared_secret.hpp"

namespace sec = seedrl::security;
using bytes = std::vector<std::byte>;

namespace {

bytes from_hex_digits(std::string_view hex) {
  const auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    throw std::invalid_argument("bad hex digit");
  };
  bytes out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<std::byte>(nibble(hex[i]) * 16 + nibble(hex[i + 1])));
  return out;
}

std::string to_hex_digits(std::span<const std::byte> b) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  for (const std::byte x : b) {
    const auto v = std::to_integer<unsigned>(x);
    s += digits[v >> 4];
    s += digits[v & 0xFu];
  }
  return s;
}

bytes repeat(std::uint8_t value, std::size_t n) {
  return bytes(n, std::byte{value});
}

bytes text(std::string_view s) {
  const auto b = std::as_bytes(std::span<const char>(s.data(), s.size()));
  return bytes(b.begin(), b.end());
}

sec::auth_nonce nonce_counting_from(std::uint8_t first) {
  sec::auth_nonce n{};
  for (std::size_t i = 0; i < n.size(); ++i)
    n[i] = static_cast<std::byte>(first + i);
  return n;
}

sec::shared_secret secret_of(std::string_view s) {
  return sec::shared_secret::from_bytes(text(s), "test");
}

/// A private temporary directory, removed with everything in it at scope exit.
struct security_temp_dir {
  std::filesystem::path path;
  security_temp_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "seedrl-sec-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    path = pattern;
  }
  ~security_temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path write(const std::string& name, std::string_view content,
                              ::mode_t mode) const {
    const auto p = path / name;
    std::ofstream(p, std::ios::binary) << content;
    ::chmod(p.c_str(), mode);
    return p;
  }
};

/// Sets an environment variable for one scope.
struct scoped_env {
  std::string name;
  scoped_env(std::string n, const char* value) : name(std::move(n)) {
    if (value != nullptr)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }
  ~scoped_env() { ::unsetenv(name.c_str()); }
};

std::string secret_error_text(const auto& load) {
  try {
    load();
  } catch (const sec::secret_error& e) {
    return e.what();
  }
  return "(no secret_error)";
}

}  // namespace

TEST_CASE("sha256 matches the FIPS 180-4 examples", "[security]") {
  CHECK(to_hex_digits(sec::sha256::hash("")) ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(to_hex_digits(sec::sha256::hash("abc")) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 448 bits: the padding no longer fits the first block.
  CHECK(to_hex_digits(
            sec::sha256::hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(to_hex_digits(
            sec::sha256::hash("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmn"
                              "oijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")) ==
        "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST_CASE("sha256 of one million a in one piece and in uneven pieces", "[security]") {
  const std::string million(1'000'000, 'a');
  const std::string want = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  CHECK(to_hex_digits(sec::sha256::hash(million)) == want);
  sec::sha256 h;
  std::size_t done = 0;
  for (std::size_t piece = 1; done < million.size(); piece = piece * 3 % 1000 + 1) {
    const std::size_t n = std::min(piece, million.size() - done);
    h.update(std::string_view(million).substr(done, n));
    done += n;
  }
  CHECK(to_hex_digits(h.finish()) == want);
}

TEST_CASE("sha256 incremental hashing at every split point equals one-shot", "[security]") {
  // 200 bytes cover messages shorter than, equal to and longer than one and two blocks.
  bytes message(200);
  for (std::size_t i = 0; i < message.size(); ++i)
    message[i] = static_cast<std::byte>(i * 37 + 11);
  for (std::size_t len : {0, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 129, 200}) {
    const std::span<const std::byte> m = std::span(message).first(len);
    const auto once = sec::sha256::hash(m);
    for (std::size_t split = 0; split <= len; ++split) {
      sec::sha256 h;
      h.update(m.first(split)).update(m.subspan(split));
      INFO("length " << len << " split at " << split);
      REQUIRE(h.finish() == once);
    }
  }
  // finish() resets, so one object hashes a second message from scratch.
  sec::sha256 h;
  h.update("abc");
  (void)h.finish();
  h.update("abc");
  CHECK(to_hex_digits(h.finish()) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("hmac_sha256 matches RFC 4231 test cases 1 to 7", "[security]") {
  struct rfc_case {
    int number;
    bytes key;
    bytes data;
    std::string mac;
  };
  const rfc_case cases[] = {
      {1, repeat(0x0b, 20), text("Hi There"),
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {2, text("Jefe"), text("what do ya want for nothing?"),
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {3, repeat(0xaa, 20), repeat(0xdd, 50),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
      {4, from_hex_digits("0102030405060708090a0b0c0d0e0f10111213141516171819"), repeat(0xcd, 50),
       "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
      // Case 5 gives only the first 128 bits of the MAC.
      {5, repeat(0x0c, 20), text("Test With Truncation"), "a3b6167473100ee06e0c796c2955552b"},
      // Cases 6 and 7: a 131-byte key, longer than a block, is hashed first.
      {6, repeat(0xaa, 131), text("Test Using Larger Than Block-Size Key - Hash Key First"),
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
      {7, repeat(0xaa, 131),
       text("This is a test using a larger than block-size key and a larger than block-size "
            "data. The key needs to be hashed before being used by the HMAC algorithm."),
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
  for (const rfc_case& c : cases) {
    INFO("RFC 4231 test case " << c.number);
    const auto mac = sec::hmac_sha256::mac(c.key, c.data);
    const bytes want = from_hex_digits(c.mac);
    CHECK(to_hex_digits(std::span(mac).first(want.size())) == c.mac);
    CHECK(sec::constant_time_equal(std::span(mac).first(want.size()), want));
    // The same MAC, fed byte by byte, and again from the same object after finish().
    sec::hmac_sha256 h(c.key);
    for (const std::byte b : c.data)
      h.update(std::span(&b, 1));
    CHECK(h.finish() == mac);
    h.update(c.data);
    CHECK(h.finish() == mac);
  }
}

TEST_CASE("constant_time_equal compares contents and sizes", "[security]") {
  const bytes a = from_hex_digits("00112233445566778899aabbccddeeff");
  CHECK(sec::constant_time_equal(a, a));
  CHECK(sec::constant_time_equal(a, bytes(a)));
  CHECK(sec::constant_time_equal(bytes{}, bytes{}));
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (const std::uint8_t bit : {0x01, 0x80}) {
      bytes b = a;
      b[i] ^= std::byte{bit};
      INFO("byte " << i << " bit mask " << int{bit});
      CHECK_FALSE(sec::constant_time_equal(a, b));
    }
  }
  CHECK_FALSE(sec::constant_time_equal(a, std::span(a).first(15)));
  CHECK_FALSE(sec::constant_time_equal(bytes{}, a));
}

TEST_CASE("shared_secret from an environment variable", "[security]") {
  const std::string var = "SEEDRL_TEST_AUTH_SECRET";
  {
    const scoped_env env(var, "0123456789abcdef0123456789abcdef\n");
    const auto s = sec::shared_secret::from_env(var);
    CHECK(s.size() == 32);  // one trailing newline stripped
    CHECK(s.origin() == "environment variable " + var);
  }
  {
    const scoped_env env(var, "0123456789abcdef\n\n");
    CHECK(sec::shared_secret::from_env(var).size() == 17);  // only one newline
  }
  {
    const scoped_env env(var, nullptr);
    const std::string msg = secret_error_text([&] { (void)sec::shared_secret::from_env(var); });
    CHECK_THAT(msg, Catch::Contains(var) && Catch::Contains("not set"));
  }
  {
    const scoped_env env(var, "");
    const std::string msg = secret_error_text([&] { (void)sec::shared_secret::from_env(var); });
    CHECK_THAT(msg, Catch::Contains(var) && Catch::Contains("empty"));
  }
  {
    const scoped_env env(var, "\n");
    CHECK_THROWS_AS(sec::shared_secret::from_env(var), sec::secret_error);
  }
  {
    const scoped_env env(var, "short-secret");
    const std::string msg = secret_error_text([&] { (void)sec::shared_secret::from_env(var); });
    CHECK_THAT(msg, Catch::Contains("12 bytes") && Catch::Contains("at least 16"));
    CHECK_THAT(msg, !Catch::Contains("short-secret"));  // never echo the secret
  }
  {
    const scoped_env env(var, "0123456789abcde");  // 15 bytes: one short
    CHECK_THROWS_AS(sec::shared_secret::from_env(var), sec::secret_error);
  }
  {
    const scoped_env env(var, "0123456789abcdef");  // exactly min_size
    CHECK(sec::shared_secret::from_env(var).size() == sec::shared_secret::min_size);
  }
}

TEST_CASE("shared_secret from a file refuses loose modes and bad contents", "[security]") {
  const security_temp_dir dir;
  const std::string key = "0123456789abcdef0123456789abcdef";

  const auto good = dir.write("good", key + "\n", 0600);
  const auto s = sec::shared_secret::from_file(good);
  CHECK(s.size() == key.size());
  CHECK(std::equal(s.bytes().begin(), s.bytes().end(), text(key).begin()));
  CHECK(s.origin() == "secret file " + good.string());
  CHECK(sec::shared_secret::from_file(dir.write("owner-only-read", key, 0400)).size() == 32);
  // Only one trailing newline goes; other whitespace is part of the secret.
  CHECK(sec::shared_secret::from_file(dir.write("two-newlines", key + "\n\n", 0600)).size() == 33);
  CHECK(sec::shared_secret::from_file(dir.write("space", key + " ", 0600)).size() == 33);

  for (const ::mode_t loose : {0640, 0604, 0644, 0660, 0610, 0601}) {
    const auto p = dir.write("loose", key, loose);
    const std::string msg = secret_error_text([&] { (void)sec::shared_secret::from_file(p); });
    INFO("mode " << loose);
    CHECK_THAT(msg, Catch::Contains(p.string()) && Catch::Contains("chmod 600") &&
                        Catch::Contains("group or others"));
  }

  const auto empty = dir.write("empty", "", 0600);
  CHECK_THAT(secret_error_text([&] { (void)sec::shared_secret::from_file(empty); }),
             Catch::Contains("empty") && Catch::Contains(empty.string()));
  const auto newline_only = dir.write("newline-only", "\n", 0600);
  CHECK_THAT(secret_error_text([&] { (void)sec::shared_secret::from_file(newline_only); }),
             Catch::Contains("empty"));
  const auto short_one = dir.write("short", "too-short\n", 0600);
  CHECK_THAT(secret_error_text([&] { (void)sec::shared_secret::from_file(short_one); }),
             Catch::Contains("at least 16"));
  const auto huge = dir.write("huge", std::string(sec::shared_secret::max_size + 1, 'x'), 0600);
  CHECK_THAT(secret_error_text([&] { (void)sec::shared_secret::from_file(huge); }),
             Catch::Contains("longer than"));
  CHECK(sec::shared_secret::from_file(
            dir.write("largest", std::string(sec::shared_secret::max_size, 'x'), 0600))
            .size() == sec::shared_secret::max_size);

  const auto missing = dir.path / "missing";
  CHECK_THAT(secret_error_text([&] { (void)sec::shared_secret::from_file(missing); }),
             Catch::Contains("cannot open") && Catch::Contains(missing.string()));
  CHECK_THAT(secret_error_text([&] { (void)sec::shared_secret::from_file(dir.path); }),
             Catch::Contains("not a regular file"));
}

TEST_CASE("shared_secret is moved not copied and refuses short bytes", "[security]") {
  auto a = secret_of("0123456789abcdef");
  const auto b = std::move(a);
  CHECK(b.size() == 16);
  CHECK_THROWS_AS(sec::shared_secret::from_bytes(bytes{}, "test"), sec::secret_error);
  CHECK_THROWS_AS(sec::shared_secret::from_bytes(repeat(1, 15), "test"), sec::secret_error);
  static_assert(!std::is_copy_constructible_v<sec::shared_secret>);
}

TEST_CASE("secure_random_bytes gives distinct nonces", "[security]") {
  const auto a = sec::make_nonce();
  const auto b = sec::make_nonce();
  CHECK(a != b);
  CHECK(a != sec::auth_nonce{});
  bytes big(1000);  // more than one getrandom call may return
  sec::secure_random_bytes(big);
  CHECK(std::count(big.begin(), big.end(), std::byte{0}) < 30);
}

TEST_CASE("random_secret_hex gives 64 hex digits a secret accepts, fresh each time", "[security]") {
  const std::string a = sec::random_secret_hex(), b = sec::random_secret_hex();
  CHECK(a.size() == 64);
  CHECK(a.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(a != b);
  // Accepted as is: the learner and actors use the variable's 64 bytes as the secret.
  CHECK(sec::shared_secret::from_bytes(std::as_bytes(std::span(a)), "test").size() == 64);
}

TEST_CASE("auth proofs match the test vector of docs/security.md", "[security]") {
  const auto secret = secret_of("seedrl-example-secret-0123456789");
  const auto nl = nonce_counting_from(0x00);
  const auto na = nonce_counting_from(0x20);
  const auto actor_proof = sec::compute_proof(secret.bytes(), sec::auth_role::actor, nl, na);
  const auto learner_proof = sec::compute_proof(secret.bytes(), sec::auth_role::learner, nl, na);
  CHECK(to_hex_digits(actor_proof) ==
        "ce1f009546e98c123895819217e28f0ef2c248393092ce82ebfb081a84b4d3d1");
  CHECK(to_hex_digits(learner_proof) ==
        "2f4f326e1751a2041c83b662f69f587b7b02eb266531c6102c9f376916ac85c2");

  sec::learner_handshake learner(secret, nl);
  sec::actor_handshake actor(secret);
  const sec::auth_response r = actor.respond(learner.challenge(), na);
  CHECK(r.actor_nonce == na);
  CHECK(r.actor_proof == actor_proof);
  const auto confirm = learner.verify_actor(r.actor_nonce, r.actor_proof);
  REQUIRE(confirm.has_value());
  CHECK(*confirm == learner_proof);
  CHECK(actor.verify_learner(*confirm));
}

TEST_CASE("handshake with the right secret authenticates both sides", "[security]") {
  const auto learner_secret = secret_of("correct horse battery staple 42");
  const auto actor_secret = secret_of("correct horse battery staple 42");
  sec::learner_handshake learner(learner_secret);
  sec::actor_handshake actor(actor_secret);
  CHECK_FALSE(learner.authenticated());
  const auto r = actor.respond(learner.challenge());
  CHECK(r.actor_nonce != learner.challenge());
  const auto confirm = learner.verify_actor(r.actor_nonce, r.actor_proof);
  REQUIRE(confirm.has_value());
  CHECK(learner.authenticated());
  CHECK(actor.verify_learner(*confirm));
  CHECK(actor.authenticated());
}

TEST_CASE("handshake with a wrong secret fails on both sides", "[security]") {
  const auto right = secret_of("the-learner-secret-0123456789");
  const auto wrong = secret_of("the-learner-secret-0123456788");
  {
    // An actor with the wrong secret is refused by the learner.
    sec::learner_handshake learner(right);
    sec::actor_handshake actor(wrong);
    const auto r = actor.respond(learner.challenge());
    CHECK_FALSE(learner.verify_actor(r.actor_nonce, r.actor_proof).has_value());
    CHECK_FALSE(learner.authenticated());
  }
  {
    // A fake learner with the wrong secret is refused by the actor.
    sec::learner_handshake fake(wrong);
    sec::actor_handshake actor(right);
    const auto r = actor.respond(fake.challenge());
    // The fake cannot verify the actor; it answers with whatever its secret gives.
    const auto forged =
        sec::compute_proof(wrong.bytes(), sec::auth_role::learner, fake.challenge(), r.actor_nonce);
    CHECK_FALSE(actor.verify_learner(forged));
    CHECK_FALSE(actor.authenticated());
  }
  {
    // Proofs of the wrong size, empty or truncated, are refused.
    sec::learner_handshake learner(right);
    sec::actor_handshake actor(right);
    const auto r = actor.respond(learner.challenge());
    CHECK_FALSE(
        learner.verify_actor(r.actor_nonce, std::span(r.actor_proof).first(16)).has_value());
    CHECK_FALSE(actor.verify_learner(std::span<const std::byte>{}));
  }
}

TEST_CASE("replayed handshake messages are refused", "[security]") {
  const auto secret = secret_of("replay-test-secret-0123456789");
  // A recorded session between a genuine actor and learner.
  sec::learner_handshake recorded_learner(secret);
  sec::actor_handshake recorded_actor(secret);
  const auto recorded_response = recorded_actor.respond(recorded_learner.challenge());
  const auto recorded_confirm =
      recorded_learner.verify_actor(recorded_response.actor_nonce, recorded_response.actor_proof);
  REQUIRE(recorded_confirm.has_value());

  // An attacker replays the actor's response to a new learner connection: its nonce differs.
  sec::learner_handshake learner(secret);
  CHECK(learner.challenge() != recorded_learner.challenge());
  CHECK_FALSE(learner.verify_actor(recorded_response.actor_nonce, recorded_response.actor_proof)
                  .has_value());

  // An attacker posing as the learner replays the recorded confirm, even with the recorded
  // challenge: the actor's fresh nonce differs.
  sec::actor_handshake actor(secret);
  (void)actor.respond(recorded_learner.challenge());
  CHECK_FALSE(actor.verify_learner(*recorded_confirm));

  // One response per challenge: a second try on the same connection is a caller bug.
  CHECK_THROWS_AS(
      recorded_learner.verify_actor(recorded_response.actor_nonce, recorded_response.actor_proof),
      std::logic_error);
  CHECK_THROWS_AS(recorded_actor.respond(recorded_learner.challenge()), std::logic_error);
  CHECK_THROWS_AS(actor.verify_learner(*recorded_confirm), std::logic_error);
  sec::actor_handshake fresh(secret);
  CHECK_THROWS_AS(fresh.verify_learner(*recorded_confirm), std::logic_error);
}

TEST_CASE("reflected proofs are refused", "[security]") {
  const auto secret = secret_of("reflection-test-secret-01234567");
  const auto nl = nonce_counting_from(0x40);
  const auto na = nonce_counting_from(0x80);
  {
    // An attacker posing as the learner sends the actor's own proof back as auth_confirm.
    sec::actor_handshake actor(secret);
    const auto r = actor.respond(nl, na);
    CHECK_FALSE(actor.verify_learner(r.actor_proof));
  }
  {
    // An attacker posing as an actor offers a learner proof for the same nonces (obtained
    // from another connection with the same challenge) as its own proof.
    const auto learner_proof = sec::compute_proof(secret.bytes(), sec::auth_role::learner, nl, na);
    sec::learner_handshake learner(secret, nl);
    CHECK_FALSE(learner.verify_actor(na, learner_proof).has_value());
  }
  {
    // An actor that echoes the learner's nonce as its own is refused even with a proof that
    // is right for those bytes.
    const auto echoed = sec::compute_proof(secret.bytes(), sec::auth_role::actor, nl, nl);
    sec::learner_handshake learner(secret, nl);
    CHECK_FALSE(learner.verify_actor(nl, echoed).has_value());
  }
  // The two roles' proofs for the same nonces differ.
  CHECK(sec::compute_proof(secret.bytes(), sec::auth_role::actor, nl, na) !=
        sec::compute_proof(secret.bytes(), sec::auth_role::learner, nl, na));
  // Swapping the nonces' places gives a different proof too.
  CHECK(sec::compute_proof(secret.bytes(), sec::auth_role::actor, nl, na) !=
        sec::compute_proof(secret.bytes(), sec::auth_role::actor, na, nl));
}

#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "engine/store/digest.h"
#include "tests/support/temp_dir.h"

using servelab::store::Sha256;

// FIPS 180-4 / NIST CAVS example vectors.
TEST_CASE("sha256 from libcrypto matches the FIPS 180-4 example vectors", "[store][digest]") {
  CHECK(Sha256::hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(Sha256::hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(Sha256::hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST_CASE("sha256 of a file streams it in chunks and equals the one-shot digest",
          "[store][digest]") {
  servelab::testutil::TempDir dir;
  std::string data(3'000'017, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 % 251);
  std::ofstream(dir / "f", std::ios::binary) << data;
  CHECK(Sha256::hex_file((dir / "f").string()) == Sha256::hex(data));
  CHECK_THROWS_WITH(Sha256::hex_file((dir / "missing").string()),
                    Catch::Contains("cannot read"));
}

TEST_CASE("xxh3 of the empty input is the reference value", "[store][digest]") {
  // XXH3_64bits("") from the xxHash reference (seed 0).
  CHECK(servelab::store::xxh3_64("", 0) == 0x2D06800538D394C2ULL);
  CHECK(servelab::store::xxh3_64("a", 1) != servelab::store::xxh3_64("b", 1));
}

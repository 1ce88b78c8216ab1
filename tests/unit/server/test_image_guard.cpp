// The image-header guard: format and size from PNG/JPEG headers, and the limits' answers.
#include <catch2/catch.hpp>

#include "engine/server/image_guard.h"
#include "tests/integration/server/test_images.h"

using namespace servelab::server;
using servelab::testing::jpeg_header;
using servelab::testing::png_gray;

TEST_CASE("image headers give format and size without decoding", "[server][image]") {
  ImageHeader h;
  REQUIRE(read_image_header(png_gray(20000, 1), &h));
  CHECK(h.format == ImageFormat::Png);
  CHECK(h.width == 20000);
  CHECK(h.height == 1);
  REQUIRE(read_image_header(jpeg_header(640, 480), &h));
  CHECK(h.format == ImageFormat::Jpeg);
  CHECK(h.width == 640);
  CHECK(h.height == 480);
  // Fill bytes and a restart marker before the frame header are skipped.
  std::string j = jpeg_header(7, 9);
  j.insert(2, "\xff\xff\xff\xd0");
  REQUIRE(read_image_header(j, &h));
  CHECK((h.width == 7 && h.height == 9));

  for (const std::string& bad :
       {std::string(), std::string("BM") + std::string(60, '\0'), png_gray(4, 4).substr(0, 20),
        jpeg_header(0, 10), jpeg_header(10, 0), std::string("\xff\xd8\xff\xda\x00\x02", 6),
        jpeg_header(5, 5).substr(0, 24), std::string("\xff\xd8\xff\xe0\x00\x01", 6)}) {
    INFO("bytes " << bad.size());
    CHECK_FALSE(read_image_header(bad, &h));
  }
}

TEST_CASE("image limits name the limit in their message", "[server][image]") {
  ImageLimits lim;
  lim.max_bytes = 1 << 20;
  lim.max_pixels = 1000;
  lim.max_side = 100;
  lim.max_aspect = 4;
  std::string why;
  CHECK(check_image(png_gray(30, 30), lim, &why) == 0);
  CHECK(check_image(png_gray(101, 5), lim, &why) == 413);
  CHECK(why.find("100 pixels a side") != std::string::npos);
  CHECK(check_image(png_gray(40, 40), lim, &why) == 413);
  CHECK(why.find("1000 pixels") != std::string::npos);
  CHECK(check_image(png_gray(40, 9), lim, &why) == 413);
  CHECK(why.find("4:1") != std::string::npos);
  CHECK(check_image(std::string(2 << 20, 'x'), lim, &why) == 413);
  CHECK(check_image("GIF89a", lim, &why) == 400);
  CHECK(check_image(png_gray(40, 10), lim, nullptr) == 0);
}

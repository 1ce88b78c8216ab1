// OpenCV preprocessing (see preprocess.h).
#include "engine/runtime/preprocess.h"

#include <algorithm>
#include <cmath>
#include <vector>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace servelab::runtime {

void warm_image_decoders() {
  const cv::Mat pixels(8, 8, CV_8UC3, cv::Scalar(0, 128, 255));
  for (const char* format : {".jpg", ".png"}) {
    std::vector<uchar> bytes;
    if (cv::imencode(format, pixels, bytes)) (void)cv::imdecode(bytes, cv::IMREAD_COLOR);
  }
}

Input preprocess_image(const std::string& bytes, const Preprocess& pp, bool normalize) {
  if (bytes.empty()) throw ImageError("empty image");
  cv::Mat raw(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
  cv::Mat bgr;
  try {
    bgr = cv::imdecode(raw, cv::IMREAD_COLOR);  // gray and RGBA become 3-channel BGR
  } catch (const cv::Exception&) {
    bgr.release();
  }
  if (bgr.empty() || bgr.channels() != 3)
    throw ImageError("cannot decode the image (expected JPEG or PNG bytes)");

  const int out_w = pp.input_width, out_h = pp.input_height;
  cv::Mat resized;
  if (pp.resize > 0) {
    // Shorter side to `resize`, but never smaller than the crop.
    double scale = static_cast<double>(pp.resize) / std::min(bgr.rows, bgr.cols);
    scale = std::max({scale, static_cast<double>(out_h) / bgr.rows,
                      static_cast<double>(out_w) / bgr.cols});
    int w = std::max(out_w, static_cast<int>(std::lround(bgr.cols * scale)));
    int h = std::max(out_h, static_cast<int>(std::lround(bgr.rows * scale)));
    cv::resize(bgr, resized, cv::Size(w, h), 0, 0,
               scale < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
  } else {
    cv::resize(bgr, resized, cv::Size(out_w, out_h), 0, 0, cv::INTER_LINEAR);
  }
  cv::Rect crop((resized.cols - out_w) / 2, (resized.rows - out_h) / 2, out_w, out_h);
  cv::Mat rgb;
  cv::cvtColor(resized(crop), rgb, cv::COLOR_BGR2RGB);

  Input in;
  in.channels = 3;
  in.height = out_h;
  in.width = out_w;
  if (!normalize) {
    in.hwc.assign(rgb.datastart, rgb.dataend);  // cvtColor output is continuous
    return in;
  }
  cv::Mat f;
  rgb.convertTo(f, CV_32FC3, 1.0 / 255.0);
  cv::subtract(f, cv::Scalar(pp.mean[0], pp.mean[1], pp.mean[2]), f);
  cv::divide(f, cv::Scalar(pp.std[0], pp.std[1], pp.std[2]), f);
  in.chw.resize(static_cast<size_t>(3) * out_h * out_w);
  const size_t plane = static_cast<size_t>(out_h) * out_w;
  cv::Mat planes[3];
  for (int c = 0; c < 3; ++c) planes[c] = cv::Mat(out_h, out_w, CV_32FC1, in.chw.data() + c * plane);
  cv::split(f, planes);  // writes into in.chw: the planes already have the right size and type
  CV_Assert(planes[0].ptr<float>() == in.chw.data());
  return in;
}

}  // namespace servelab::runtime

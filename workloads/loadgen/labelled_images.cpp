// read_labelled_images: a folder of images with their true labels (workload.images).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "workloads/loadgen/loadgen.h"

namespace servelab::loadgen {

namespace fs = std::filesystem;

namespace {

std::string content_type_of(const std::string& file) {
  std::string ext = fs::path(file).extension().string();
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".png") return "image/png";
  if (ext == ".jpg" || ext == ".jpeg") return "image/jpeg";
  return "";
}

}  // namespace

std::vector<LabelledBody> read_labelled_images(const std::string& dir) {
  const fs::path labels = fs::path(dir) / "labels.txt";
  std::ifstream in(labels);
  if (!in)
    throw std::invalid_argument("images: cannot read " + labels.string() +
                                " (one `FILE LABEL` line per image; scripts/make-models "
                                "writes models/images/digits/)");
  std::vector<LabelledBody> out;
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const std::string where = labels.string() + ":" + std::to_string(n) + ": ";
    std::istringstream fields(line);
    LabelledBody b;
    std::string extra;
    if (!(fields >> b.file >> b.label) || (fields >> extra))
      throw std::invalid_argument(where + "expected `FILE LABEL`, got '" + line + "'");
    if (b.file.find('/') != std::string::npos || b.file == "." || b.file == "..")
      throw std::invalid_argument(where + "'" + b.file + "' must be a file name in " + dir);
    b.content_type = content_type_of(b.file);
    if (b.content_type.empty())
      throw std::invalid_argument(where + "'" + b.file + "' is not a .png or .jpg image");
    std::ifstream image(fs::path(dir) / b.file, std::ios::binary);
    if (!image) throw std::invalid_argument(where + "cannot read the image '" + b.file + "'");
    b.body.assign(std::istreambuf_iterator<char>(image), {});
    out.push_back(std::move(b));
  }
  if (out.empty()) throw std::invalid_argument("images: " + labels.string() + " lists no images");
  return out;
}

}  // namespace servelab::loadgen

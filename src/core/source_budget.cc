#include "core/source_budget.h"

#include <cctype>
#include <limits>

#include "core/dataset_key.h"
#include "core/field_error.h"

namespace corral {
namespace {

constexpr char kSourceKeyWant[] =
    "the directory that holds datasets' sources (an absolute path such as /shared, without '.' "
    "or '..' or a trailing '/') or an http(s) URL's scheme, host and port "
    "(https://store.example[:443])";

bool IsPlainAbsoluteDirectory(const std::string& path) {
  if (path.empty() || path[0] != '/') return false;
  if (path == "/") return true;
  if (path.back() == '/') return false;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

Result<std::string> ParseSourceKey(const std::string& text) {
  const size_t scheme_end = text.find("://");
  if (scheme_end == std::string::npos) {
    if (!IsPlainAbsoluteDirectory(text)) return FieldError("source", text, kSourceKeyWant);
    return text;
  }
  std::string scheme = text.substr(0, scheme_end);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string authority = text.substr(scheme_end + 3);
  if (!authority.empty() && authority.back() == '/') authority.pop_back();
  const bool good_authority = !authority.empty() &&
                              authority.find_first_of("/@?# ") == std::string::npos &&
                              authority[0] != ':';
  if ((scheme != "http" && scheme != "https") || !good_authority) {
    return FieldError("source", text, kSourceKeyWant);
  }
  // The key of any file served there: the scheme, the host and the port (its default if none).
  return DatasetSourceKey(scheme + "://" + authority + "/x.tar");
}

Result<int64_t> ParseByteRate(const std::string& what, const std::string& text) {
  auto bad = [&] {
    return InvalidArgument(what + ": got \"" + text +
                           "\", want bytes per second such as 0 (no limit), 500K, 100M or 1G");
  };
  if (text.empty()) return bad();
  std::string digits = text;
  int64_t mult = 1;
  switch (std::toupper(static_cast<unsigned char>(text.back()))) {
    case 'K':
      mult = int64_t{1} << 10;
      break;
    case 'M':
      mult = int64_t{1} << 20;
      break;
    case 'G':
      mult = int64_t{1} << 30;
      break;
    default:
      break;
  }
  if (mult > 1) digits.pop_back();
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
      digits.size() > 12) {
    return bad();
  }
  const int64_t value = std::stoll(digits);
  if (value > std::numeric_limits<int64_t>::max() / mult) return bad();
  return value * mult;
}

nlohmann::json ToJson(const SourceBudget& b) {
  return nlohmann::json{{"source", b.source},
                        {"rate", b.rate},
                        {"fetches", b.fetches},
                        {"fetching", b.fetching},
                        {"waiting", b.waiting}};
}

Result<SourceBudget> SourceBudgetFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("source budget: not a JSON object");
  SourceBudget b;
  try {
    b.source = j.at("source").get<std::string>();
    b.rate = j.at("rate").get<int64_t>();
    b.fetches = j.at("fetches").get<int32_t>();
    b.fetching = j.value("fetching", 0);
    b.waiting = j.value("waiting", 0);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("source budget: ") + e.what());
  }
  return b;
}

}  // namespace corral

#include "core/hostlist.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace corral {
namespace {

struct NameParts {
  std::string prefix;
  std::string digits;  // the numeric suffix as written ("" if none)
};

NameParts SplitName(const std::string& name) {
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  return {name.substr(0, i), name.substr(i)};
}

std::string Pad(int64_t n, size_t width) {
  std::string s = std::to_string(n);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

}  // namespace

std::string CompressHostlist(const std::vector<std::string>& hosts) {
  // Group by (prefix, width of the number); keep each group's first appearance.
  std::vector<std::pair<std::string, size_t>> order;
  std::map<std::pair<std::string, size_t>, std::vector<int64_t>> groups;
  std::vector<std::string> plain;
  std::vector<std::pair<bool, size_t>> sequence;  // (is group, index into order/plain)
  for (const std::string& h : hosts) {
    NameParts s = SplitName(h);
    if (s.digits.empty() || s.digits.size() > 18) {
      if (std::find(plain.begin(), plain.end(), h) == plain.end()) {
        plain.push_back(h);
        sequence.push_back({false, plain.size() - 1});
      }
      continue;
    }
    // Zero padding makes a width (node01 and node1 differ); unpadded numbers have none.
    size_t width = s.digits.size() > 1 && s.digits[0] == '0' ? s.digits.size() : 0;
    std::pair<std::string, size_t> key{s.prefix, width};
    if (!groups.count(key)) {
      order.push_back(key);
      sequence.push_back({true, order.size() - 1});
    }
    groups[key].push_back(std::stoll(s.digits));
  }
  std::string out;
  for (const auto& [is_group, idx] : sequence) {
    if (!out.empty()) out += ",";
    if (!is_group) {
      out += plain[idx];
      continue;
    }
    const auto& key = order[idx];
    std::vector<int64_t> nums = groups[key];
    std::sort(nums.begin(), nums.end());
    nums.erase(std::unique(nums.begin(), nums.end()), nums.end());
    if (nums.size() == 1) {
      out += key.first + Pad(nums[0], key.second);
      continue;
    }
    std::string ranges;
    for (size_t i = 0; i < nums.size();) {
      size_t j = i;
      while (j + 1 < nums.size() && nums[j + 1] == nums[j] + 1) ++j;
      if (!ranges.empty()) ranges += ",";
      ranges += Pad(nums[i], key.second);
      if (j > i) ranges += "-" + Pad(nums[j], key.second);
      i = j + 1;
    }
    out += key.first + "[" + ranges + "]";
  }
  return out;
}

Result<std::vector<std::string>> ExpandHostlist(const std::string& expr) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("hostlist \"" + expr + "\": " + why +
                           "; want names like node01 or node[01-03,07], comma-separated");
  };
  std::vector<std::string> out;
  size_t i = 0;
  while (i < expr.size()) {
    // One item: text, optionally [ranges] and more text, up to a comma outside brackets.
    size_t open = std::string::npos, close = std::string::npos, end = i;
    while (end < expr.size() &&
           (expr[end] != ',' || (open != std::string::npos && close == std::string::npos))) {
      if (expr[end] == '[') {
        if (open != std::string::npos) return bad("only one [...] per name is taken");
        open = end;
      } else if (expr[end] == ']') {
        if (open == std::string::npos || close != std::string::npos)
          return bad("a ']' without its '['");
        close = end;
      }
      ++end;
    }
    std::string item = expr.substr(i, end - i);
    if (item.empty()) return bad("an empty name");
    if (open == std::string::npos) {
      out.push_back(item);
    } else {
      if (close == std::string::npos) return bad("a '[' without its ']'");
      std::string prefix = expr.substr(i, open - i),
                  suffix = expr.substr(close + 1, end - close - 1);
      std::string body = expr.substr(open + 1, close - open - 1);
      size_t k = 0;
      while (k <= body.size()) {
        size_t comma = body.find(',', k);
        if (comma == std::string::npos) comma = body.size();
        std::string range = body.substr(k, comma - k);
        size_t dash = range.find('-');
        std::string lo_text = range.substr(0, dash);
        std::string hi_text = dash == std::string::npos ? lo_text : range.substr(dash + 1);
        int64_t lo = 0, hi = 0;
        auto r1 = std::from_chars(lo_text.data(), lo_text.data() + lo_text.size(), lo);
        auto r2 = std::from_chars(hi_text.data(), hi_text.data() + hi_text.size(), hi);
        if (lo_text.empty() || hi_text.empty() || r1.ptr != lo_text.data() + lo_text.size() ||
            r2.ptr != hi_text.data() + hi_text.size() || lo > hi) {
          return bad("'" + range + "' is not a range like 01-03");
        }
        if (hi - lo > 100000 || out.size() + (hi - lo) > 1000000) return bad("too many names");
        for (int64_t n = lo; n <= hi; ++n) out.push_back(prefix + Pad(n, lo_text.size()) + suffix);
        k = comma + 1;
      }
    }
    i = end + 1;
  }
  return out;
}

}  // namespace corral

#include "slurm/patterns.h"

#include <cctype>

namespace corral::slurm {
namespace {

std::string Pad(const std::string& v, int width) {
  bool numeric = !v.empty();
  for (char c : v) numeric &= std::isdigit(static_cast<unsigned char>(c)) != 0;
  if (!numeric || static_cast<int>(v.size()) >= width) return v;
  return std::string(width - v.size(), '0') + v;
}

// Calls emit(letter, width) for each %X and literal(text) for the rest.
template <typename Lit, typename Emit>
void Walk(const std::string& p, Lit literal, Emit emit) {
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != '%' || i + 1 >= p.size()) {
      literal(std::string(1, p[i]));
      continue;
    }
    size_t j = i + 1;
    int width = 0;
    while (j < p.size() && std::isdigit(static_cast<unsigned char>(p[j])) && width < 100) {
      width = width * 10 + (p[j] - '0');
      ++j;
    }
    if (j >= p.size()) {
      literal(p.substr(i));
      break;
    }
    if (p[j] == '%' && j == i + 1) {
      literal("%");
    } else if (!emit(p[j], width)) {
      literal(p.substr(i, j - i + 1));
    }
    i = j;
  }
}

}  // namespace

std::string ExpandPattern(const std::string& pattern, const PatternValues& v) {
  std::string out;
  Walk(
      pattern, [&](const std::string& s) { out += s; },
      [&](char c, int width) {
        const std::string* val = nullptr;
        switch (c) {
          case 'j':
            val = &v.job_id;
            break;
          case 'A':
            val = &v.array_job_id;
            break;
          case 'a':
            val = &v.array_index;
            break;
          case 'x':
            val = &v.job_name;
            break;
          case 'u':
            val = &v.user;
            break;
          case 'N':
            val = &v.node;
            break;
          case 't':
            val = &v.task;
            break;
          case 'n':
            val = &v.node_id;
            break;
          case 's':
            val = &v.step;
            break;
          default:
            return false;
        }
        out += Pad(*val, width);
        return true;
      });
  return out;
}

std::string PatternToShell(const std::string& pattern, const std::string& job_name,
                           const std::string& user) {
  auto quote = [](const std::string& s) {
    std::string q;
    for (char c : s) {
      if (c == '"' || c == '\\' || c == '$' || c == '`') q += '\\';
      q += c;
    }
    return q;
  };
  std::string out = "\"";
  Walk(
      pattern, [&](const std::string& s) { out += quote(s); },
      [&](char c, int width) {
        std::string expr;
        switch (c) {
          case 'j':
            expr = "$SLURM_JOB_ID";
            break;
          case 'A':
            expr = "${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}";
            break;
          case 'a':
            expr = "${SLURM_ARRAY_TASK_ID:-4294967294}";
            break;
          case 'x':
            out += quote(job_name);
            return true;
          case 'u':
            expr = "${SLURM_JOB_USER:-" + quote(user) + "}";
            break;
          case 'N':
            expr = "${SLURMD_NODENAME%%.*}";
            break;
          case 't':
          case 'n':
            expr = "0";
            break;
          case 's':
            expr = "batch";
            break;
          default:
            return false;
        }
        if (width > 0) {
          out += "$(printf '%0" + std::to_string(width) + "s' \"" + expr + "\" | tr ' ' 0)";
        } else {
          out += expr;
        }
        return true;
      });
  return out + "\"";
}

Status ValidatePattern(const std::string& option, const std::string& pattern) {
  if (pattern.empty()) return InvalidArgument("option --" + option + ": the file name is empty");
  if (pattern.back() == '/') {
    return InvalidArgument("option --" + option + ": \"" + pattern +
                           "\" names a directory; want a file name pattern such as "
                           "slurm-%j.out");
  }
  return Status::Ok();
}

}  // namespace corral::slurm

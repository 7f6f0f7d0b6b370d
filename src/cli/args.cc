#include "cli/args.h"

namespace corral::cli {

std::string ParsedArgs::Get(const std::string& name, const std::string& fallback) const {
  auto it = flags.find(name);
  return it == flags.end() || it->second.empty() ? fallback : it->second.back();
}

const std::vector<std::string>& ParsedArgs::All(const std::string& name) const {
  static const std::vector<std::string> kEmpty;
  auto it = flags.find(name);
  return it == flags.end() ? kEmpty : it->second;
}

Result<ParsedArgs> ParseArgs(const std::vector<std::string>& args, const std::vector<FlagDef>& defs,
                             bool stop_at_positional) {
  ParsedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.saw_dashdash = true;
      out.rest.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (a == "-h" || a == "--help") {
      out.flags["help"].push_back("true");
      continue;
    }
    if (a.size() < 2 || a[0] != '-' || (a[1] >= '0' && a[1] <= '9')) {  // "-", "-1": values
      if (stop_at_positional) {
        out.rest.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
        break;
      }
      out.positional.push_back(a);
      continue;
    }
    const FlagDef* def = nullptr;
    std::string value;
    bool has_inline_value = false;
    if (a[1] == '-') {
      std::string name = a.substr(2);
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_inline_value = true;
      }
      for (const FlagDef& d : defs) {
        if (d.name == name) def = &d;
      }
    } else if (a.size() == 2) {
      for (const FlagDef& d : defs) {
        if (d.short_name != 0 && d.short_name == a[1]) def = &d;
      }
    }
    if (def == nullptr) return InvalidArgument("unknown flag '" + a + "'");
    if (!def->takes_value) {
      if (has_inline_value) {
        if (value != "true" && value != "false") {
          return InvalidArgument("flag '--" + def->name + "' takes no value (got '" + value + "')");
        }
        if (value == "false") {
          out.flags.erase(def->name);
          continue;
        }
      }
      out.flags[def->name].push_back("true");
      continue;
    }
    if (!has_inline_value) {
      if (i + 1 >= args.size()) return InvalidArgument("flag '" + a + "' needs a value");
      value = args[++i];
    }
    out.flags[def->name].push_back(value);
  }
  return out;
}

}  // namespace corral::cli

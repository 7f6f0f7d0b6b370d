#include "slurm/options.h"

#include <sstream>

namespace corral::slurm {

const std::vector<OptionDef>& SbatchOptionDefs() {
  using A = OptionDef::Arg;
  static const std::vector<OptionDef> kDefs = {
      {"job-name", 'J', A::kRequired},
      {"nodes", 'N', A::kRequired},
      {"ntasks", 'n', A::kRequired},
      {"ntasks-per-node", 0, A::kRequired},
      {"gpus-per-node", 0, A::kRequired},
      {"gpus-per-task", 0, A::kRequired},
      {"gpus", 'G', A::kRequired},
      {"gres", 0, A::kRequired},
      {"cpus-per-task", 'c', A::kRequired},
      {"mem", 0, A::kRequired},
      {"mem-per-cpu", 0, A::kRequired},
      {"mem-per-gpu", 0, A::kRequired},
      {"time", 't', A::kRequired},
      {"partition", 'p', A::kRequired},
      {"qos", 'q', A::kRequired},
      {"reservation", 0, A::kRequired},
      {"mail-type", 0, A::kRequired},
      {"mail-user", 0, A::kRequired},
      {"dataset", 0, A::kRequired},    // Corral's: NAME[@V][:MOUNT][,...] (docs/datasets.md)
      {"stage-out", 0, A::kRequired},  // Corral's: DIR:DEST (docs/datasets.md)
      {"account", 'A', A::kRequired},
      {"output", 'o', A::kRequired},
      {"error", 'e', A::kRequired},
      {"open-mode", 0, A::kRequired},
      {"array", 'a', A::kRequired},
      {"dependency", 'd', A::kRequired},
      {"signal", 0, A::kRequired},
      {"requeue", 0, A::kNone},
      {"hold", 'H', A::kNone},
      {"no-requeue", 0, A::kNone},
      {"exclusive", 0, A::kOptional},
      {"chdir", 'D', A::kRequired},
      {"export", 0, A::kRequired},
      {"constraint", 'C', A::kRequired},
      {"exclude", 'x', A::kRequired},
      {"parsable", 0, A::kNone},
      {"wrap", 0, A::kRequired},
      {"strict", 0, A::kNone},
      {"comment", 0, A::kRequired},
      {"help", 'h', A::kNone},
      {"nodelist", 'w', A::kRequired},
      {"label", 'l', A::kNone},
      {"unbuffered", 'u', A::kNone},
      {"wait", 'W', A::kNone},
      // pyxis's (the SPANK plugin NVIDIA ships for containers in Slurm jobs)
      {"container-image", 0, A::kRequired},
      {"container-mounts", 0, A::kRequired},
      {"container-workdir", 0, A::kRequired},
      {"container-writable", 0, A::kNone},
      {"container-readonly", 0, A::kNone},
      {"container-mount-home", 0, A::kNone},
      {"no-container-mount-home", 0, A::kNone},
      {"container-name", 0, A::kRequired},
  };
  return kDefs;
}

std::string ParsedOptions::Get(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() ? fallback : it->second;
}

namespace {

const OptionDef* FindLong(const std::vector<OptionDef>& defs, const std::string& name) {
  for (const OptionDef& d : defs) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

const OptionDef* FindShort(const std::vector<OptionDef>& defs, char c) {
  for (const OptionDef& d : defs) {
    if (d.short_name == c) return &d;
  }
  return nullptr;
}

// Slurm's options that Corral does not implement but that take a value: written with a space
// ("--mail-type END"), the value is the option's, not the script or command.
bool SlurmOptionTakesValue(const std::string& long_name) {
  static const char* const kValued[] = {"begin",
                                        "deadline",
                                        "nice",
                                        "licenses",
                                        "distribution",
                                        "cpu-freq",
                                        "mem-bind",
                                        "hint",
                                        "gpu-bind",
                                        "gpu-freq",
                                        "cpus-per-gpu",
                                        "ntasks-per-gpu",
                                        "ntasks-per-core",
                                        "ntasks-per-socket",
                                        "sockets-per-node",
                                        "cores-per-socket",
                                        "threads-per-core",
                                        "mincpus",
                                        "tmp",
                                        "wckey",
                                        "profile",
                                        "acctg-freq",
                                        "network",
                                        "switches",
                                        "time-min",
                                        "input",
                                        "extra-node-info",
                                        "clusters",
                                        "core-spec",
                                        "thread-spec",
                                        "priority",
                                        "prefer",
                                        "gres-flags",
                                        "delay-boot",
                                        "mcs-label",
                                        "cluster-constraint",
                                        "tres-per-task",
                                        "export-file",
                                        "uid",
                                        "gid",
                                        "bb",
                                        "bbf",
                                        "kill-on-invalid-dep",
                                        "power",
                                        "batch",
                                        "wait-all-nodes"};
  for (const char* v : kValued) {
    if (long_name == v) return true;
  }
  return false;
}

// The short forms among them: -b (begin), -L (licenses), -m (distribution), -i (input),
// -B (extra-node-info), -M (clusters), -S (core-spec).
bool SlurmShortOptionTakesValue(char c) {
  for (char v : std::string("bLmiBMS")) {
    if (c == v) return true;
  }
  return false;
}

}  // namespace

Result<ParsedOptions> ParseOptions(const std::vector<std::string>& args,
                                   const std::vector<OptionDef>& defs, bool stop_at_positional) {
  ParsedOptions out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.positional.insert(out.positional.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      if (stop_at_positional) {
        out.positional.insert(out.positional.end(), args.begin() + i, args.end());
        break;
      }
      out.positional.push_back(a);
      continue;
    }
    if (a[1] == '-') {
      auto eq = a.find('=');
      std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      const OptionDef* d = FindLong(defs, name);
      if (d == nullptr) {
        bool takes_next =
            eq == std::string::npos && SlurmOptionTakesValue(name) && i + 1 < args.size();
        out.unknown.push_back(takes_next ? a + "=" + args[++i] : a);
        continue;
      }
      if (d->arg == OptionDef::kNone) {
        if (eq != std::string::npos) {
          return InvalidArgument("option --" + name + " takes no value (got \"" + a + "\")");
        }
        out.values[d->name] = "";
      } else if (eq != std::string::npos) {
        out.values[d->name] = a.substr(eq + 1);
      } else if (d->arg == OptionDef::kOptional) {
        out.values[d->name] = "";
      } else if (i + 1 < args.size()) {
        out.values[d->name] = args[++i];
      } else {
        return InvalidArgument("option --" + name + " needs a value");
      }
      continue;
    }
    const OptionDef* d = FindShort(defs, a[1]);
    if (d == nullptr) {
      bool takes_next = a.size() == 2 && SlurmShortOptionTakesValue(a[1]) && i + 1 < args.size();
      out.unknown.push_back(takes_next ? a + " " + args[++i] : a);
      continue;
    }
    if (d->arg == OptionDef::kNone) {
      if (a.size() > 2)
        return InvalidArgument("option -" + std::string(1, a[1]) + " takes no value (got \"" + a +
                               "\")");
      out.values[d->name] = "";
    } else if (a.size() > 2) {  // -N2, -J=name is not Slurm's: "=name" would be the value
      out.values[d->name] = a.substr(2);
    } else if (i + 1 < args.size()) {
      out.values[d->name] = args[++i];
    } else {
      return InvalidArgument("option -" + std::string(1, a[1]) + " (--" + d->name +
                             ") needs a value");
    }
  }
  return out;
}

std::vector<std::string> ScriptDirectives(const std::string& script, std::vector<int>* line_of) {
  std::vector<std::string> words;
  std::istringstream in(script);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    if (line[first] != '#') break;  // the first command ends the directives
    if (line.compare(first, 7, "#SBATCH") != 0) continue;
    std::string rest = line.substr(first + 7);
    if (!rest.empty() && rest[0] != ' ' && rest[0] != '\t') continue;  // "#SBATCHX"
    // Words: whitespace-separated, quotes group and are removed, a '#' starts a comment.
    std::string word;
    bool in_word = false;
    char quote = 0;
    for (char c : rest) {
      if (quote != 0) {
        if (c == quote) {
          quote = 0;
        } else {
          word += c;
        }
      } else if (c == '"' || c == '\'') {
        quote = c;
        in_word = true;
      } else if (c == ' ' || c == '\t') {
        if (in_word) {
          words.push_back(word);
          if (line_of) line_of->push_back(n);
        }
        word.clear();
        in_word = false;
      } else if (c == '#' && !in_word) {
        break;
      } else {
        word += c;
        in_word = true;
      }
    }
    if (in_word) {
      words.push_back(word);
      if (line_of) line_of->push_back(n);
    }
  }
  return words;
}

ParsedOptions MergeOptions(const ParsedOptions& directives, const ParsedOptions& command_line) {
  ParsedOptions out = directives;
  for (const auto& [k, v] : command_line.values) out.values[k] = v;
  out.unknown.insert(out.unknown.end(), command_line.unknown.begin(), command_line.unknown.end());
  out.positional = command_line.positional;
  return out;
}

}  // namespace corral::slurm

#include "slurm/sinfo.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>

#include "core/hostlist.h"
#include "slurm/format.h"

namespace corral::slurm {
namespace {

enum class Col {
  kPrefix,  // the text before the first field
  kAvail,
  kCpus,
  kDisk,
  kNodes,
  kNodesAi,
  kNodesAiot,
  kReason,
  kFeatures,
  kGroups,
  kGres,
  kOversubscribe,
  kTime,
  kDefaultTime,
  kMemory,
  kHostnames,
  kNodeList,
  kPartition,
  kPartitionName,
  kRoot,
  kSize,
  kStateCompact,
  kStateLong,
  kCluster,
  kWeight,
  kSockets,
  kCores,
  kThreads,
  kSct,
};

struct ColumnDef {
  char letter;       // -o's %X
  const char* name;  // -O's name
  Col col;
  const char* header;
};

// Slurm's letters and names for the columns Corral can fill.
constexpr ColumnDef kColumns[] = {
    {'a', "available", Col::kAvail, "AVAIL"},
    {'A', "nodeai", Col::kNodesAi, "NODES(A/I)"},
    {'c', "cpus", Col::kCpus, "CPUS"},
    {'d', "disk", Col::kDisk, "TMP_DISK"},
    {'D', "nodes", Col::kNodes, "NODES"},
    {'E', "reason", Col::kReason, "REASON"},
    {'f', "features", Col::kFeatures, "AVAIL_FEATURES"},
    {'F', "nodeaiot", Col::kNodesAiot, "NODES(A/I/O/T)"},
    {'g', "groups", Col::kGroups, "GROUPS"},
    {'G', "gres", Col::kGres, "GRES"},
    {'h', "oversubscribe", Col::kOversubscribe, "OVERSUBSCRIBE"},
    {'l', "time", Col::kTime, "TIMELIMIT"},
    {'L', "defaulttime", Col::kDefaultTime, "DEFAULTTIME"},
    {'m', "memory", Col::kMemory, "MEMORY"},
    {'n', "nodehost", Col::kHostnames, "HOSTNAMES"},
    {'N', "nodelist", Col::kNodeList, "NODELIST"},
    {'P', "partition", Col::kPartition, "PARTITION"},
    {'r', "root", Col::kRoot, "ROOT"},
    {'R', "partitionname", Col::kPartitionName, "PARTITION"},
    {'s', "size", Col::kSize, "JOB_SIZE"},
    {'t', "statecompact", Col::kStateCompact, "STATE"},
    {'T', "statelong", Col::kStateLong, "STATE"},
    {'V', "cluster", Col::kCluster, "CLUSTER"},
    {'w', "weight", Col::kWeight, "WEIGHT"},
    {'X', "sockets", Col::kSockets, "SOCKETS"},
    {'Y', "cores", Col::kCores, "CORES"},
    {'Z', "threads", Col::kThreads, "THREADS"},
    {'z', "socketcorethread", Col::kSct, "S:C:T"},
};

struct Field {
  const ColumnDef* def = nullptr;  // nullptr: the prefix, printed as it is
  int width = 0;                   // 0: the value as it is, no padding
  bool right = false;
  std::string suffix;            // the text after the field, up to the next
  bool width_from_data = false;  // sinfo's default layouts size PARTITION and NODELIST to fit
};

std::string KnownLetters() {
  std::string s;
  for (const ColumnDef& d : kColumns) s += std::string(s.empty() ? "" : " ") + "%" + d.letter;
  return s;
}

std::string KnownNames() {
  std::string s;
  for (const ColumnDef& d : kColumns) s += std::string(s.empty() ? "" : ",") + d.name;
  return s;
}

// -o: text before the first '%' is a prefix; each "%[.][WIDTH]X" field takes the text after
// it up to the next '%' as its suffix (empty fields, "%%", are skipped as Slurm's strtok does).
Result<std::vector<Field>> ParseShortFormat(const std::string& format) {
  std::vector<Field> out;
  size_t first = format.find('%');
  if (first != 0) out.push_back(Field{nullptr, 0, false, format.substr(0, first), false});
  for (size_t i = first; i < format.size();) {
    size_t next = format.find('%', i + 1);
    std::string token = format.substr(i + 1, next == std::string::npos ? next : next - i - 1);
    i = next == std::string::npos ? format.size() : next;
    if (token.empty()) continue;
    Field f;
    size_t k = 0;
    if (token[k] == '.') {
      f.right = true;
      ++k;
    }
    while (k < token.size() && std::isdigit(static_cast<unsigned char>(token[k]))) {
      f.width = f.width * 10 + (token[k++] - '0');
    }
    if (k >= token.size()) {
      return InvalidArgument("option --format: \"%" + token + "\" has no field letter");
    }
    for (const ColumnDef& d : kColumns) {
      if (d.letter == token[k]) f.def = &d;
    }
    if (f.def == nullptr) {
      return InvalidArgument(std::string("option --format: unknown field %") + token[k] +
                             "; known: " + KnownLetters());
    }
    f.suffix = token.substr(k + 1);
    out.push_back(std::move(f));
  }
  return out;
}

// -O: "name[:[.]WIDTH[SUFFIX]]" comma-separated; a name without a width is 20 wide.
Result<std::vector<Field>> ParseLongFormat(const std::string& format) {
  std::vector<Field> out;
  size_t start = 0;
  while (start <= format.size()) {
    size_t comma = format.find(',', start);
    std::string token = format.substr(start, comma == std::string::npos ? comma : comma - start);
    start = comma == std::string::npos ? format.size() + 1 : comma + 1;
    if (token.empty()) continue;
    Field f;
    std::string name = token;
    size_t colon = token.find(':');
    if (colon == std::string::npos) {
      f.width = 20;
    } else {
      name = token.substr(0, colon);
      size_t k = colon + 1;
      if (k < token.size() && token[k] == '.') {
        f.right = true;
        ++k;
      }
      while (k < token.size() && std::isdigit(static_cast<unsigned char>(token[k]))) {
        f.width = f.width * 10 + (token[k++] - '0');
      }
      f.suffix = token.substr(k);
    }
    for (const ColumnDef& d : kColumns) {
      if (AsciiLower(name) == d.name) f.def = &d;
    }
    if (f.def == nullptr) {
      return InvalidArgument("option --Format: unknown field \"" + name +
                             "\"; known: " + KnownNames());
    }
    out.push_back(std::move(f));
  }
  return out;
}

// The layouts sinfo prints without -o/-O (Slurm's own strings).
std::string DefaultLayout(const SinfoOptions& o) {
  if (o.summarize) return "partition:9 ,available:.5 ,time:.10 ,nodeaiot:.16 ,nodelist:0";
  if (o.per_node) {
    return o.long_output ? "nodelist:0 ,nodes:.6 ,partition:.9 ,statelong:.11 ,cpus:4 "
                           ",socketcorethread:.8 ,memory:.6 ,disk:.8 ,weight:.6 ,features:.8 "
                           ",reason:20"
                         : "nodelist:0 ,nodes:.6 ,partition:.9 ,statecompact:6";
  }
  return o.long_output ? "partition:9 ,available:.5 ,time:.10 ,size:.10 ,root:.4 "
                         ",oversubscribe:.8 ,groups:.10 ,nodes:.6 ,statelong:.11 ,nodelist:0"
                       : "partition:9 ,available:.5 ,time:.10 ,nodes:.6 ,statecompact:.6 "
                         ",nodelist:0";
}

std::string LongState(const std::string& compact) {
  static const std::map<std::string, std::string> kLong = {{"alloc", "allocated"},
                                                           {"mix", "mixed"},
                                                           {"drng", "draining"},
                                                           {"drain", "drained"},
                                                           {"resv", "reserved"}};
  auto it = kLong.find(compact);
  return it == kLong.end() ? compact : it->second;
}

struct NodeRow {
  std::string name, state, gres, reason;
  int64_t cpus = 0, memory = 0;
};

NodeRow RowOf(const NodeView& n) {
  NodeRow r;
  r.name = n.node.name;
  r.state = SinfoState(n);
  r.cpus = n.node.cpu_milli / 1000;
  r.memory = n.node.memory_mb;
  // Slurm's GRES: "gpu:8", or "gpu:TYPE:8" with a GPU type (Corral's model).
  std::string model = n.node.gpus.empty() ? "" : n.node.gpus[0].model;
  for (char& c : model) c = std::isspace(static_cast<unsigned char>(c)) ? '_' : c;
  r.gres = n.node.gpus.empty()
               ? "(null)"
               : "gpu:" + (model.empty() ? "" : model + ":") + std::to_string(n.node.gpus.size());
  r.reason = n.node.unhealthy.empty() ? "none" : n.node.unhealthy;
  return r;
}

bool StateWanted(const std::string& state, const std::vector<std::string>& wanted) {
  if (wanted.empty()) return true;
  std::string bare = state;
  if (!bare.empty() && bare.back() == '*') bare.pop_back();
  for (const std::string& w : wanted) {
    std::string l = AsciiLower(w);
    if (l == bare || l == LongState(bare) || (l == "drain" && bare == "drng")) return true;
  }
  return false;
}

// One output line: a partition and the nodes it groups.
struct Group {
  size_t partition = 0;
  std::vector<const NodeRow*> nodes;
};

bool Uses(const std::vector<Field>& fields, std::initializer_list<Col> cols) {
  for (const Field& f : fields) {
    for (Col c : cols) {
      if (f.def != nullptr && f.def->col == c) return true;
    }
  }
  return false;
}

// Nodes are grouped as Slurm's sinfo groups them: by partition when a partition column is
// shown, and by the node values shown that must match (state, GRES, reason); with -N, one node
// per line. Partitions in order; within one, groups in the order of their first node.
std::vector<Group> GroupNodes(const std::vector<NodeRow>& rows, const std::vector<size_t>& parts,
                              const std::vector<Field>& fields, const SinfoOptions& o) {
  const bool by_part = o.per_node || Uses(fields, {Col::kPartition, Col::kPartitionName});
  const bool by_state = Uses(fields, {Col::kStateCompact, Col::kStateLong});
  const bool by_gres = Uses(fields, {Col::kGres}), by_reason = Uses(fields, {Col::kReason});
  std::vector<Group> groups;
  for (size_t p : parts) {
    std::map<std::string, size_t> index;
    for (const NodeRow& r : rows) {
      std::string key = o.per_node ? r.name
                                   : (by_state ? r.state : "") + "\n" + (by_gres ? r.gres : "") +
                                         "\n" + (by_reason ? r.reason : "");
      auto [it, fresh] = index.emplace(key, groups.size());
      if (fresh) groups.push_back(Group{p, {}});
      groups[it->second].nodes.push_back(&r);
    }
    if (!by_part) break;  // every partition holds every node: one set of lines for them all
  }
  if (o.per_node) {
    std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
      return a.nodes[0]->name < b.nodes[0]->name;
    });
  }
  return groups;
}

std::string MinPlus(const std::vector<const NodeRow*>& nodes, int64_t NodeRow::*value) {
  int64_t lo = nodes[0]->*value, hi = lo;
  for (const NodeRow* n : nodes) {
    lo = std::min(lo, n->*value);
    hi = std::max(hi, n->*value);
  }
  return std::to_string(lo) + (lo == hi ? "" : "+");
}

std::string NodeCounts(const Group& g, bool with_other) {
  int alloc = 0, idle = 0, other = 0;
  for (const NodeRow* n : g.nodes) {
    const std::string& s = n->state;
    if (s == "alloc" || s == "mix") {
      ++alloc;
    } else if (s == "idle" || s == "resv" || s == "maint") {
      ++idle;
    } else {
      ++other;
    }
  }
  std::string out = std::to_string(alloc) + "/" + std::to_string(idle);
  if (with_other) out += "/" + std::to_string(other) + "/" + std::to_string(g.nodes.size());
  return out;
}

std::string Value(Col c, const Group& g, const std::vector<std::string>& partitions) {
  const NodeRow& first = *g.nodes[0];
  std::vector<std::string> names;
  for (const NodeRow* n : g.nodes) names.push_back(n->name);
  switch (c) {
    case Col::kPrefix:
      return "";
    case Col::kPartition:
    case Col::kPartitionName:
      return partitions[g.partition];
    case Col::kAvail:
      return "up";
    case Col::kTime:
      return "infinite";
    case Col::kDefaultTime:
      return "n/a";
    case Col::kNodes:
      return std::to_string(g.nodes.size());
    case Col::kNodesAi:
      return NodeCounts(g, false);
    case Col::kNodesAiot:
      return NodeCounts(g, true);
    case Col::kCpus:
    case Col::kSockets:
      return MinPlus(g.nodes, &NodeRow::cpus);
    case Col::kSct:
      return MinPlus(g.nodes, &NodeRow::cpus) + ":1:1";  // Slurm's split of a bare CPU count
    case Col::kCores:
    case Col::kThreads:
      return "1";
    case Col::kMemory:
      return MinPlus(g.nodes, &NodeRow::memory);
    case Col::kStateCompact:
      return first.state;
    case Col::kStateLong:
      return LongState(first.state);
    case Col::kGres:
      return first.gres;
    case Col::kReason:
      return first.reason;
    case Col::kNodeList:
    case Col::kHostnames:
      return CompressHostlist(names);
    case Col::kFeatures:
      return "(null)";
    case Col::kDisk:
      return "0";
    case Col::kWeight:
      return "1";
    case Col::kSize:
      return "1-infinite";
    case Col::kRoot:
      return "no";
    case Col::kOversubscribe:
      return "NO";
    case Col::kGroups:
      return "all";
    case Col::kCluster:
      return "corral";
  }
  return "";
}

// Slurm's _print_str: a width pads (right- or left-justified) and cuts; 0 prints as it is.
std::string Cell(const std::string& s, int width, bool right, bool cut) {
  if (width <= 0) return s;
  std::string v = s;
  if (cut && static_cast<int>(v.size()) > width) v.resize(width);
  if (static_cast<int>(v.size()) >= width) return v;
  std::string fill(width - v.size(), ' ');
  return right ? fill + v : v + fill;
}

// The widths Slurm's default layouts compute from the data: PARTITION at least 9 and the
// longest name (with its '*'), NODELIST (-N) at least 9 and the longest list.
void SizeToData(std::vector<Field>& fields, const std::vector<Group>& groups,
                const std::vector<std::string>& partitions, bool node_lists) {
  int part = 9, list = 9;
  for (const Group& g : groups) {
    part = std::max(part,
                    static_cast<int>(partitions[g.partition].size()) + (g.partition == 0 ? 1 : 0));
    list = std::max(list, static_cast<int>(Value(Col::kNodeList, g, partitions).size()));
  }
  for (Field& f : fields) {
    if (f.def == nullptr) continue;
    if (f.def->col == Col::kPartition) {
      f.width = part;
      f.width_from_data = true;
    }
    if (node_lists && f.def->col == Col::kNodeList) {
      f.width = list;
      f.width_from_data = true;
    }
  }
}

std::string Line(const std::vector<Field>& fields, const Group* g,
                 const std::vector<std::string>& partitions) {
  std::string line;
  for (const Field& f : fields) {
    if (f.def == nullptr) {
      line += f.suffix;
      continue;
    }
    if (g == nullptr) {  // the header: NODELIST and HOSTNAMES are never cut
      const bool list = f.def->col == Col::kNodeList || f.def->col == Col::kHostnames;
      line += Cell(f.def->header, f.width, f.right, !list) + f.suffix;
      continue;
    }
    std::string v = Value(f.def->col, *g, partitions);
    if (f.def->col == Col::kPartition && g->partition == 0) {
      // The default partition's mark: appended, or over the last character that fits.
      if (f.width == 0 || static_cast<int>(v.size()) < f.width) {
        v += "*";
      } else {
        v[f.width - 1] = '*';
      }
    }
    line += Cell(v, f.width, f.right, true) + f.suffix;
  }
  return line + "\n";
}

std::string DateLine(TimeMs now) {
  std::time_t t = static_cast<std::time_t>(now / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char date[64];
  std::strftime(date, sizeof(date), "%a %b %e %H:%M:%S %Y", &tm);
  return std::string(date) + "\n";
}

}  // namespace

std::string SinfoState(const NodeView& n) {
  const int64_t used = n.gpus_used, gpus = static_cast<int64_t>(n.node.gpus.size());
  const NodeState st = n.node.state();
  std::string s;
  if (st == NodeState::kReady && !n.node.unhealthy.empty()) {
    s = used == 0 ? "drain" : "drng";  // Slurm drains a node failing its health check
  } else if (st == NodeState::kReady) {
    s = used == 0 ? "idle" : (used >= gpus ? "alloc" : "mix");
  } else if (st == NodeState::kDraining) {
    s = "drng";
  } else if (st == NodeState::kDrained) {
    s = "drain";
  } else if (st == NodeState::kUnreachable) {
    s = "down*";
  } else {
    s = "down";
  }
  // A node in a reservation that is on now: Slurm's MAINT and RESERVED states.
  if (!n.reservation.empty() && (st == NodeState::kReady || st == NodeState::kDraining)) {
    s = n.maintenance ? "maint" : "resv";
  }
  return s;
}

Result<std::string> RenderSinfo(const std::vector<NodeView>& nodes,
                                const std::vector<std::string>& partitions, const SinfoOptions& o,
                                TimeMs now) {
  const bool custom = !o.format.empty() || !o.long_format.empty();
  auto fields = !o.format.empty() ? ParseShortFormat(o.format)
                                  : ParseLongFormat(custom ? o.long_format : DefaultLayout(o));
  if (!fields.ok()) return fields.status();
  std::vector<size_t> parts;
  for (size_t p = 0; p < partitions.size(); ++p) {
    if (o.only_partitions.empty() || std::find(o.only_partitions.begin(), o.only_partitions.end(),
                                               partitions[p]) != o.only_partitions.end()) {
      parts.push_back(p);
    }
  }
  std::vector<NodeRow> rows;
  for (const NodeView& n : nodes) {
    NodeRow r = RowOf(n);
    if (StateWanted(r.state, o.only_states)) rows.push_back(std::move(r));
  }
  std::vector<Group> groups = GroupNodes(rows, parts, *fields, o);
  if (!custom) SizeToData(*fields, groups, partitions, o.per_node);
  std::string out;
  if (o.header && o.long_output) out += DateLine(now);
  if (o.header) out += Line(*fields, nullptr, partitions);
  for (const Group& g : groups) out += Line(*fields, &g, partitions);
  return out;
}

}  // namespace corral::slurm

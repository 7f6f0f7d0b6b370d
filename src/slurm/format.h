// How Slurm's commands show Corral's jobs and nodes: state names, squeue's %-formats, sacct's
// fields, `scontrol show job`, sinfo. Pure, any thread.
#pragma once

#include <string>
#include <vector>

#include "core/codec.h"
#include "core/job.h"
#include "core/status.h"
#include "core/views.h"

namespace corral::slurm {

// Text helpers the Slurm renderers and the CLI's Slurm commands share: ASCII lower case (Slurm's
// keywords and field names match case-insensitively), and a comma list without empty items.
std::string AsciiLower(std::string s);
std::vector<std::string> SplitCommaList(const std::string& s);

// One %-field of an -o format (squeue, sprio): "%.10i" is field `i`, 10 wide, right-aligned;
// "%-8j" and "%8j" are left-aligned. A width cuts a longer value to it.
struct PercentField {
  std::string prefix;  // the literal text before the field
  char letter = 0;
  int width = 0;  // 0: as wide as the value
  bool right = false;
};
struct PercentFormat {
  std::vector<PercentField> fields;
  std::string tail;  // the literal text after the last field
};
// Splits an -o format into its fields. A format that ends inside a field is an error naming
// the option.
Result<PercentFormat> ParsePercentFormat(const std::string& format);
// `value` laid out in field `f`: cut and padded to its width, after its prefix.
std::string PercentCell(std::string value, const PercentField& f);

// PENDING RUNNING COMPLETED FAILED CANCELLED TIMEOUT PREEMPTED NODE_FAIL OUT_OF_MEMORY.
std::string SlurmState(const Job& j);
// squeue's compact form: PD R CD F CA TO PR NF OOM.
std::string CompactState(const std::string& state);

// "12", or "12_3" for index 3 of array 12.
std::string SlurmJobId(const Job& j);

// squeue's TIME/TIME_LIMIT: "M:SS", "H:MM:SS", "D-HH:MM:SS".
std::string SqueueTime(DurationMs ms);
// sacct's Elapsed/Timelimit: "HH:MM:SS", "D-HH:MM:SS".
std::string SacctTime(DurationMs ms);
// sacct's ExitCode "CODE:SIGNAL": exit 3 -> "3:0", killed by signal 9 -> "0:9".
std::string ExitCodeField(const Job& j);
// How long the current run has run (to `now` while it runs); 0 before it starts.
DurationMs Elapsed(const Job& j, TimeMs now);
// The nodes of the current run, compressed ("n[1-2]"); "" before placement.
std::string NodeList(const Job& j);

// squeue's default: "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R".
extern const char kSqueueDefaultFormat[];
// squeue --start's: pending jobs with their estimated start (%S) and nodes (%Y, SCHEDNODES).
extern const char kSqueueStartFormat[];
// Renders jobs with an squeue -o format. An unknown %X is an error naming it.
Result<std::string> RenderSqueue(const std::vector<Job>& jobs, const std::string& format,
                                 bool header, TimeMs now);

struct SacctOptions {
  std::vector<std::string> fields = {"JobID",     "JobName", "Partition", "Account",
                                     "AllocCPUS", "State",   "ExitCode"};
  bool parsable2 = false;  // '|' between fields, none after the last
  bool parsable = false;   // '|' after every field
  bool header = true;
  bool allocations_only = false;  // -X: no ".batch" step lines
};
// Field names are case-insensitive; an unknown one is an error naming it and the known ones.
Result<std::string> RenderSacct(const std::vector<Job>& jobs, const SacctOptions& o, TimeMs now);

// `scontrol show job`: Key=Value pairs, several per line.
std::string RenderScontrolJob(const Job& j, TimeMs now);

// sinfo from the head's nodes (GET /v1/nodes, read back) and queue names (the partitions; the
// first is the default). `per_node_long`: sinfo -N -l.
std::string RenderSinfo(const std::vector<NodeView>& nodes,
                        const std::vector<std::string>& partitions, bool per_node_long, TimeMs now);

}  // namespace corral::slurm

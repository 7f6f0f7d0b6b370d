// Slurm's hostlist expressions: "node[01-03,07]" for node01 node02 node03 node07, zero
// padding kept, as SLURM_JOB_NODELIST and `scontrol show hostnames` use them.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace corral {

// Compresses names into Slurm's form: names sharing a prefix and a numeric suffix of one
// width fold into one bracket, in ascending order; groups keep the order in which their
// first name appears; names without a numeric suffix stay as they are. Duplicates fold.
std::string CompressHostlist(const std::vector<std::string>& hosts);

// "a[1-3,5]b,c07,d[08-10]" -> a1b a2b a3b a5b c07 d08 d09 d10 (zero padding kept). Errors
// name the expression and what is wrong.
Result<std::vector<std::string>> ExpandHostlist(const std::string& expr);

}  // namespace corral

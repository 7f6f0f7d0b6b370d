#include <gtest/gtest.h>

#include "core/spec.h"
#include "slurm/batch.h"
#include "slurm/options.h"
#include "slurm/patterns.h"

namespace corral::slurm {
namespace {

ParsedOptions Parse(const std::vector<std::string>& args) {
  auto p = ParseOptions(args, SbatchOptionDefs(), /*stop_at_positional=*/true);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : ParsedOptions{};
}

TEST(SlurmOptions, LongShortAttachedAndSeparateValues) {
  ParsedOptions o = Parse({"-N2", "--ntasks-per-node=4", "-J", "train", "--gres", "gpu:2",
                           "--parsable", "--exclusive", "-c8", "run.sh", "--lr", "3"});
  EXPECT_EQ(o.Get("nodes"), "2");
  EXPECT_EQ(o.Get("ntasks-per-node"), "4");
  EXPECT_EQ(o.Get("job-name"), "train");
  EXPECT_EQ(o.Get("gres"), "gpu:2");
  EXPECT_EQ(o.Get("cpus-per-task"), "8");
  EXPECT_TRUE(o.Has("parsable"));
  EXPECT_TRUE(o.Has("exclusive"));
  EXPECT_EQ(o.positional, (std::vector<std::string>{"run.sh", "--lr", "3"}));
}

TEST(SlurmOptions, UnknownOptionsAreCollectedAndMissingValuesNamed) {
  ParsedOptions o = Parse({"--wckey=ALL", "-Q", "--nodes=1"});
  EXPECT_EQ(o.unknown, (std::vector<std::string>{"--wckey=ALL", "-Q"}));
  auto bad = ParseOptions({"--time"}, SbatchOptionDefs(), true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "option --time needs a value");
  auto bad2 = ParseOptions({"-t"}, SbatchOptionDefs(), true);
  ASSERT_FALSE(bad2.ok());
  EXPECT_EQ(bad2.status().message(), "option -t (--time) needs a value");
  auto bad3 = ParseOptions({"--parsable=yes"}, SbatchOptionDefs(), true);
  ASSERT_FALSE(bad3.ok());
  EXPECT_NE(bad3.status().message().find("takes no value"), std::string::npos);
}

// Slurm's options that Corral ignores still take their value when it is written apart: the
// value is not the script ("Unable to open file END").
TEST(SlurmOptions, AnIgnoredOptionTakesItsSpaceSeparatedValue) {
  ParsedOptions o =
      Parse({"--wckey", "END", "--begin", "now", "-M", "c1", "-Q", "--nodes=1", "run.sh"});
  EXPECT_EQ(o.unknown, (std::vector<std::string>{"--wckey=END", "--begin=now", "-M c1", "-Q"}));
  EXPECT_EQ(o.positional, (std::vector<std::string>{"run.sh"}));
  EXPECT_EQ(o.Get("nodes"), "1");
}

TEST(SlurmOptions, DirectivesStopAtTheFirstCommandAndKeepQuotedWords) {
  const std::string script =
      "#!/bin/bash\n"
      "# a comment\n"
      "#SBATCH --job-name=\"my job\" # trailing comment\n"
      "\n"
      "#SBATCH -N 2\n"
      "#SBATCHX --ignored\n"
      "#SBATCH --output=logs/%x-%j.out\n"
      "echo hi\n"
      "#SBATCH --time=5\n";
  std::vector<int> lines;
  auto words = ScriptDirectives(script, &lines);
  EXPECT_EQ(words,
            (std::vector<std::string>{"--job-name=my job", "-N", "2", "--output=logs/%x-%j.out"}));
  EXPECT_EQ(lines, (std::vector<int>{3, 5, 5, 7}));
}

TEST(SlurmOptions, CommandLineWinsOverDirectives) {
  ParsedOptions dir = Parse({"--nodes=2", "--time=10", "--job-name=a"});
  ParsedOptions cmd = Parse({"--nodes=3", "script.sh"});
  ParsedOptions m = MergeOptions(dir, cmd);
  EXPECT_EQ(m.Get("nodes"), "3");
  EXPECT_EQ(m.Get("time"), "10");
  EXPECT_EQ(m.Get("job-name"), "a");
  EXPECT_EQ(m.positional, (std::vector<std::string>{"script.sh"}));
}

TEST(SlurmTime, AcceptsEverySlurmForm) {
  struct Case {
    const char* text;
    int64_t seconds;
  } cases[] = {{"90", 5400},          {"5:30", 330},    {"1:02:03", 3723},
               {"2-0", 172800},       {"1-12", 129600}, {"1-02:30", 95400},
               {"1-00:00:10", 86410}, {"UNLIMITED", 0}, {"0", 0}};
  for (const Case& c : cases) {
    auto t = ParseSlurmTime("time", c.text);
    ASSERT_TRUE(t.ok()) << c.text << ": " << t.status().message();
    EXPECT_EQ(*t, c.seconds * 1000) << c.text;
  }
}

TEST(SlurmTime, RejectsWithTheOptionAndTheForms) {
  for (const char* bad : {"", "abc", "1:2:3:4", "-5", "1-", "5m", "400-00:00:00"}) {
    auto t = ParseSlurmTime("time", bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().message().rfind(std::string("option --time: got \"") + bad + "\"", 0), 0u)
        << t.status().message();
  }
}

TEST(SlurmMemory, UnitsDefaultToMegabytes) {
  EXPECT_EQ(*ParseSlurmMemoryMb("mem", "4000"), 4000);
  EXPECT_EQ(*ParseSlurmMemoryMb("mem", "16G"), 16384);
  EXPECT_EQ(*ParseSlurmMemoryMb("mem", "512M"), 512);
  EXPECT_EQ(*ParseSlurmMemoryMb("mem", "1T"), 1024 * 1024);
  EXPECT_EQ(*ParseSlurmMemoryMb("mem", "1500K"), 2);
  auto bad = ParseSlurmMemoryMb("mem-per-cpu", "4X");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "option --mem-per-cpu: got \"4X\", want a size in MB, or with a K, M, G or T "
            "suffix, e.g. 4000 or 16G");
}

TEST(SlurmPatterns, ExpandEveryField) {
  PatternValues v;
  v.job_id = "42";
  v.array_job_id = "40";
  v.array_index = "2";
  v.job_name = "train";
  v.user = "alice";
  v.node = "gpu01";
  EXPECT_EQ(ExpandPattern("%x-%j.out", v), "train-42.out");
  EXPECT_EQ(ExpandPattern("slurm-%A_%a.out", v), "slurm-40_2.out");
  EXPECT_EQ(ExpandPattern("%u/%N.%t.%4a.%%.%q", v), "alice/gpu01.0.0002.%.%q");
  EXPECT_EQ(ExpandPattern("trailing%", v), "trailing%");
}

TEST(SlurmPatterns, ShellFormReadsTheBatchStepVariables) {
  EXPECT_EQ(PatternToShell("%x-%j.out", "my \"job\"", "bob"),
            "\"my \\\"job\\\"-$SLURM_JOB_ID.out\"");
  EXPECT_EQ(PatternToShell("%A_%a", "n", "u"),
            "\"${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}_${SLURM_ARRAY_TASK_ID:-4294967294}\"");
  EXPECT_EQ(PatternToShell("$HOME/%%", "n", "u"), "\"\\$HOME/%\"");
}

SubmitContext Ctx(const std::string& script) {
  SubmitContext c;
  c.script = script;
  c.script_name = "job.sh";
  c.cwd = "/home/alice/proj";
  c.user = "alice";
  c.environment = {{"PATH", "/usr/bin"}, {"SLURM_JOB_ID", "9"}, {"LR", "0.1"}, {"PWD", "/x"}};
  return c;
}

TEST(SlurmBatch, ReservationGoesIntoTheSpecAndTheEnvironment) {
  auto sub = BuildBatchSpec(Parse({"--reservation=train", "--time=10"}),
                            Ctx("#!/bin/bash\necho hi\n"), false);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  EXPECT_EQ(sub->spec["reservation"], "train");
  EXPECT_NE(std::string(sub->spec["command"][2]).find("export SLURM_JOB_RESERVATION='train'"),
            std::string::npos);
  auto valid = ParseJobSpec(sub->spec);
  ASSERT_TRUE(valid.ok()) << valid.status().message();
  EXPECT_EQ(valid->reservation, "train");
  auto two = BuildBatchSpec(Parse({"--reservation=a,b"}), Ctx("#!/bin/bash\n"), false);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("reservation"), std::string::npos);
}

// Slurm's --nodes=MIN-MAX: an elastic job of MIN to MAX replicas, one per node.
TEST(SlurmBatch, ANodeRangeIsAnElasticJob) {
  auto sub = BuildBatchSpec(Parse({"--nodes=2-4"}), Ctx("#!/bin/sh\n"), false);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  EXPECT_EQ(sub->spec["replicas"], Json({{"min", 2}, {"max", 4}}));
  EXPECT_EQ(sub->spec["max_replicas_per_node"], 1);
  auto spec = ParseJobSpec(sub->spec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_TRUE(spec->IsElastic());
  EXPECT_EQ(spec->min_replicas, 2);
  EXPECT_EQ(spec->replicas, 4);
  auto fixed = BuildBatchSpec(Parse({"--nodes=3"}), Ctx("#!/bin/sh\n"), false);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->spec["replicas"], 3);
}

TEST(SlurmBatch, DatasetsGoIntoTheSpec) {
  auto sub = BuildBatchSpec(Parse({"--dataset=imagenet,cifar@v2:/data/c"}),
                            Ctx("#!/bin/bash\n#SBATCH --time=10\n"), false);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  auto valid = ParseJobSpec(sub->spec);
  ASSERT_TRUE(valid.ok()) << valid.status().message();
  ASSERT_EQ(valid->datasets.size(), 2u);
  EXPECT_EQ(valid->datasets[0].name, "imagenet");
  EXPECT_EQ(valid->datasets[1].version, "v2");
  EXPECT_EQ(valid->datasets[1].mount, "/data/c");
  auto bad = BuildBatchSpec(Parse({"--dataset=no good"}), Ctx("#!/bin/bash\n"), false);
  ASSERT_TRUE(bad.ok());
  auto refused = ParseJobSpec(bad->spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("field 'datasets[0]'"), std::string::npos)
      << refused.status().message();
}

TEST(SlurmBatch, StageOutGoesIntoTheSpec) {
  auto sub = BuildBatchSpec(Parse({"--stage-out=/scratch/out:/shared/results"}),
                            Ctx("#!/bin/bash\n"), false);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  auto valid = ParseJobSpec(sub->spec);
  ASSERT_TRUE(valid.ok()) << valid.status().message();
  EXPECT_EQ(valid->stage_out.dir, "/scratch/out");
  EXPECT_EQ(valid->stage_out.dest, "/shared/results");
  auto bad =
      BuildBatchSpec(Parse({"--stage-out=out:/shared/results"}), Ctx("#!/bin/bash\n"), false);
  ASSERT_TRUE(bad.ok());
  auto refused = ParseJobSpec(bad->spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("field 'stage_out'"), std::string::npos)
      << refused.status().message();
}

TEST(SlurmBatch, MapsTheAllocationOntoTheSpec) {
  ParsedOptions o =
      Parse({"--nodes=2", "--ntasks-per-node=4", "--cpus-per-task=2", "--gpus-per-node=4",
             "--mem=32G", "--time=1:00:00", "-p", "gpu", "--job-name", "ddp", "--array=0-3%2",
             "--dependency=afterok:7", "--chdir=sub", "--qos=high", "--account=gpu"});
  auto sub = BuildBatchSpec(o, Ctx("#!/bin/bash\necho hi\n"), false);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  const Json& s = sub->spec;
  EXPECT_EQ(s["replicas"], 2);
  EXPECT_EQ(s["max_replicas_per_node"], 1);  // Slurm's nodes are distinct machines
  for (const std::string& w : sub->warnings) EXPECT_EQ(w.find("--nodes"), std::string::npos) << w;
  EXPECT_EQ(s["cpus"], 8);
  EXPECT_EQ(s["gpus"], 4);
  EXPECT_EQ(s["memory"], "32768M");
  EXPECT_EQ(s["time_limit"], "3600s");
  EXPECT_EQ(s["queue"], "gpu");
  EXPECT_EQ(s["name"], "ddp");
  EXPECT_EQ(s["array"], "0-3%2");
  EXPECT_EQ(s["dependency"], "afterok:7");
  EXPECT_EQ(s["workdir"], "/home/alice/proj/sub");
  EXPECT_EQ(s["batch"], true);
  // --export=ALL: the submitter's environment, less what describes the submitting shell/job.
  EXPECT_EQ(s["env"]["LR"], "0.1");
  EXPECT_FALSE(s["env"].contains("SLURM_JOB_ID"));
  EXPECT_FALSE(s["env"].contains("PWD"));
  const std::string program = s["command"][2];
  EXPECT_NE(program.find("export SLURM_NTASKS='8'"), std::string::npos);
  EXPECT_NE(program.find("export SLURM_NTASKS_PER_NODE='4(x2)'"), std::string::npos);
  EXPECT_NE(program.find("export SLURM_CPUS_PER_TASK='2'"), std::string::npos);
  EXPECT_NE(program.find("export SLURM_JOB_QOS='high'"), std::string::npos);
  EXPECT_NE(program.find("export SLURM_JOB_ACCOUNT='gpu'"), std::string::npos);
  EXPECT_NE(program.find("export SLURM_SUBMIT_DIR='/home/alice/proj'"), std::string::npos);
  // The spec is one Corral accepts.
  auto valid = ParseJobSpec(s);
  ASSERT_TRUE(valid.ok()) << valid.status().message();
  EXPECT_TRUE(valid->batch);
  EXPECT_EQ(valid->replicas, 2);
  EXPECT_EQ(valid->tasks_per_replica, 1);  // one batch shell per node, not one per task
}

// An account is a queue (sacctmgr lists a user's queues as accounts): -A alone selects it, and
// with -p both must name the same queue.
TEST(SlurmBatch, AccountSelectsTheQueue) {
  auto sub = BuildBatchSpec(Parse({"-A", "gpu"}), Ctx("#!/bin/bash\necho hi\n"), false);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  EXPECT_EQ(sub->spec["queue"], "gpu");
  const std::string program = sub->spec["command"][2];
  EXPECT_NE(program.find("export SLURM_JOB_PARTITION='gpu'"), std::string::npos);
  EXPECT_NE(program.find("export SLURM_JOB_ACCOUNT='gpu'"), std::string::npos);
  auto none = BuildBatchSpec(Parse({}), Ctx("#!/bin/bash\necho hi\n"), false);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->spec.contains("queue"));
  EXPECT_NE(std::string(none->spec["command"][2]).find("export SLURM_JOB_ACCOUNT='default'"),
            std::string::npos);
  auto both = BuildBatchSpec(Parse({"-A", "gpu", "-p", "cpu"}), Ctx("#!/bin/bash\n"), false);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().message().rfind("option --account: got \"gpu\", want the queue of "
                                          "--partition=cpu",
                                          0),
            0u)
      << both.status().message();
}

TEST(SlurmBatch, GpusFromGresTasksOrTotalAndConflictsNamed) {
  auto gpus = [](const std::vector<std::string>& args) -> Json {
    auto sub = BuildBatchSpec(Parse(args), Ctx("#!/bin/sh\n"), false);
    EXPECT_TRUE(sub.ok()) << sub.status().message();
    return sub.ok() ? sub->spec.value("gpus", Json(0)) : Json(-1);
  };
  EXPECT_EQ(gpus({"--gres=gpu:2"}), 2);
  EXPECT_EQ(gpus({"--gres=gpu:a100:3"}), 3);
  EXPECT_EQ(gpus({"--ntasks-per-node=4", "--gpus-per-task=1"}), 4);
  EXPECT_EQ(gpus({"-N", "2", "--gpus=8"}), 4);
  // Shares of one GPU: --gpus 0.25 (one node), or MPS percent.
  EXPECT_EQ(gpus({"--gpus=0.25"}), 0.25);
  EXPECT_EQ(gpus({"--gres=mps:50"}), 0.5);
  auto mps = BuildBatchSpec(Parse({"--gres=mps:30"}), Ctx("#!/bin/sh\n"), false);
  ASSERT_TRUE(mps.ok());
  EXPECT_EQ(mps->spec["gpu_isolation"], "mps");
  auto share = ParseJobSpec(mps->spec);
  ASSERT_TRUE(share.ok()) << share.status().message();
  EXPECT_EQ(share->per_replica.gpu_milli, 300);
  auto both =
      BuildBatchSpec(Parse({"--gres=gpu:1", "--gpus-per-node=2"}), Ctx("#!/bin/sh\n"), false);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("give only one"), std::string::npos);
}

TEST(SlurmBatch, SignalEndsTheLimitEarlyByItsLeadTime) {
  auto sub = BuildBatchSpec(Parse({"--time=10", "--signal=USR1@90"}), Ctx("#!/bin/sh\n"), false);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  EXPECT_EQ(sub->spec["time_limit"], "510s");
  EXPECT_EQ(sub->spec["grace_period"], "90s");
  EXPECT_EQ(sub->spec["checkpoint_signal"], "10");
  // Without B: the script's shell ignores the signal; programs may still catch it.
  EXPECT_NE(sub->spec["command"][2].get<std::string>().find("trap '' 10"), std::string::npos);
  auto shell = BuildBatchSpec(Parse({"--signal=B:USR1@90"}), Ctx("#!/bin/sh\n"), false);
  ASSERT_TRUE(shell.ok());
  EXPECT_EQ(shell->spec["command"][2].get<std::string>().find("trap '' 10"), std::string::npos);
}

TEST(SlurmBatch, BadValuesNameTheOptionAndTheReason) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"--nodes=0"},
       "option --nodes: got \"0\", want a node count such as 2, or a range "
       "MIN-MAX such as 2-4"},
      {{"--ntasks=1", "--nodes=2"},
       "option --ntasks: 1 is fewer than --nodes 2; want at least one task per node"},
      {{"--gres=shard:2"},
       "option --gres: got \"shard:2\", want gpu:N, gpu:TYPE:N or mps:PERCENT, e.g. gpu:4, "
       "gpu:a100:4 or mps:25"},
      {{"--gres=mps:150"},
       "option --gres: got \"mps:150\", want mps:PERCENT with PERCENT from 1 to 99 (a share of "
       "one GPU)"},
      {{"--gpus-per-task=0.5"},
       "option --gpus-per-task: got \"0.5\", want a whole number of GPUs (Slurm has no "
       "fractions per task; for a share of one GPU use --gpus 0.5 with one task, or "
       "--gres=mps:50)"},
      {{"--gpus=1.5"},
       "option --gpus: got \"1.5\", want a whole number of GPUs, or a share of one GPU below 1 "
       "(e.g. 0.25) for a single-node job"},
      {{"--open-mode=sometimes"}, "option --open-mode: got \"sometimes\", want append or truncate"},
      {{"--signal=USR1@900", "--time=10"},
       "option --signal: 900 s before the end is not inside --time 10"},
      {{"--constraint=a100|v100"},
       "option --constraint: got \"a100|v100\", want one feature name, taken as the GPU model "
       "(e.g. a100); expressions are not supported"},
      {{"--output=logs/"},
       "option --output: \"logs/\" names a directory; want a file name "
       "pattern such as slurm-%j.out"},
      {{"--mem-per-gpu=4G"}, "option --mem-per-gpu: the job asks for no GPUs"},
  };
  for (const Case& c : cases) {
    auto sub = BuildBatchSpec(Parse(c.args), Ctx("#!/bin/sh\n"), false);
    ASSERT_FALSE(sub.ok()) << c.args[0];
    EXPECT_EQ(sub.status().message(), c.message);
  }
  auto no_shebang = BuildBatchSpec(Parse({}), Ctx("echo hi\n"), false);
  ASSERT_FALSE(no_shebang.ok());
  EXPECT_NE(no_shebang.status().message().find("first line must start with #!"), std::string::npos);
}

// --mail-type/--mail-user, either form, go into the job's spec, where the head checks them.
TEST(SlurmBatch, MailOptionsGoIntoTheSpec) {
  ParsedOptions o = Parse({"--mail-type", "END,FAIL", "--mail-user=ana@example.org", "run.sh"});
  EXPECT_TRUE(o.unknown.empty());
  auto sub = BuildBatchSpec(o, Ctx("#!/bin/sh\n"), true);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  EXPECT_EQ(sub->spec["mail_type"], "END,FAIL");
  EXPECT_EQ(sub->spec["mail_user"], "ana@example.org");
}

TEST(SlurmBatch, UnknownOptionsWarnOrFailWithStrict) {
  ParsedOptions o = Parse({"--wckey=END", "--nodes=1"});
  auto lax = BuildBatchSpec(o, Ctx("#!/bin/sh\n"), false);
  ASSERT_TRUE(lax.ok());
  ASSERT_EQ(lax->warnings.size(), 1u);
  EXPECT_EQ(lax->warnings[0], "ignoring unknown option(s): --wckey=END");
  auto strict = BuildBatchSpec(o, Ctx("#!/bin/sh\n"), true);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().message(),
            "unknown option(s): --wckey=END (without --strict they are ignored with a "
            "warning)");
}

TEST(SlurmBatch, ExportListsAndBase64) {
  auto sub = BuildBatchSpec(Parse({"--export=NONE"}), Ctx("#!/bin/sh\n"), false);
  ASSERT_TRUE(sub.ok());
  EXPECT_FALSE(sub->spec.contains("env"));
  auto some = BuildBatchSpec(Parse({"--export=LR,EPOCHS=3"}), Ctx("#!/bin/sh\n"), false);
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(some->spec["env"], (Json{{"LR", "0.1"}, {"EPOCHS", "3"}}));
  EXPECT_EQ(Base64(""), "");
  EXPECT_EQ(Base64("f"), "Zg==");
  EXPECT_EQ(Base64("fo"), "Zm8=");
  EXPECT_EQ(Base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(SlurmBatch, PyxisContainerOptions) {
  auto sub = BuildBatchSpec(Parse({"--container-image=admin@registry.local:5000#team/img:v1",
                                   "--container-mounts=/data:/data:ro+rprivate,/scratch",
                                   "--no-container-mount-home", "--container-writable"}),
                            Ctx("#!/bin/sh\necho hi\n"), false);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  EXPECT_EQ(sub->spec["image"], "registry.local:5000/team/img:v1");
  EXPECT_EQ(sub->spec["container_mount_home"], false);
  EXPECT_EQ(sub->spec["container_writable"], true);
  // The submit directory is mounted where the script writes its output.
  const std::string cwd = sub->spec["workdir"];
  EXPECT_EQ(sub->spec["mounts"], Json({"/data:/data:ro", "/scratch:/scratch", cwd + ":" + cwd}));
  EXPECT_EQ(sub->spec["command"][0], "/bin/sh");
  auto spec = ParseJobSpec(sub->spec);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  auto sqsh = BuildBatchSpec(Parse({"--container-image=/x/img.sqsh"}), Ctx("#!/bin/sh\n"), false);
  EXPECT_FALSE(sqsh.ok());
  auto alone = BuildBatchSpec(Parse({"--container-workdir=/w"}), Ctx("#!/bin/sh\n"), false);
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.status().message().find("needs --container-image"), std::string::npos);
}

}  // namespace
}  // namespace corral::slurm

// What the client commands' tests share: a fake transport that answers each call from a
// handler and records what was sent, and a context with a fake clock and environment.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/codec.h"

namespace corral::cli::test {

constexpr TimeMs kT0 = 1763791234000;  // 2025-11-22 06:00:34 UTC

// Answers each call from a handler; records what was sent.
class FakeTransport : public ApiTransport {
 public:
  struct Sent {
    std::string method, path, body;
  };
  Result<ApiReply> Call(const std::string& method, const std::string& path,
                        const std::string& body) override {
    sent.push_back({method, path, body});
    return handler(sent.back());
  }
  // What was sent, as "METHOD path".
  std::vector<std::string> paths() const {
    std::vector<std::string> out;
    for (const Sent& s : sent) out.push_back(s.method + " " + s.path);
    return out;
  }
  // Answers each call from the path alone.
  void OnPath(std::function<Result<ApiReply>(const std::string&)> f) {
    handler = [f = std::move(f)](const Sent& s) { return f(s.path); };
  }
  // Answers every call 200 with `body`.
  void AnswerAll(const Json& body) {
    handler = [body](const Sent&) {
      return Result<ApiReply>(ApiReply{200, "application/json", body.dump(), {}});
    };
  }
  std::vector<Sent> sent;
  std::function<Result<ApiReply>(const Sent&)> handler = [](const Sent&) {
    return Result<ApiReply>(ApiReply{
        404, "application/json", R"({"error":{"code":"not_found","message":"nothing here"}})", {}});
  };
};

inline ApiReply JsonReply(int status, const Json& body) {
  return ApiReply{status, "application/json", body.dump(), {}};
}

struct Harness {
  std::shared_ptr<FakeTransport> fake = std::make_shared<FakeTransport>();
  std::ostringstream out, err;
  std::map<std::string, std::string> env = {{"USER", "ana"}};
  TimeMs now = kT0 + 10 * kMinute;
  std::vector<DurationMs> sleeps;
  CliContext ctx;

  Harness() {
    ctx.out = &out;
    ctx.err = &err;
    ctx.env = [this](const std::string& k) -> std::optional<std::string> {
      auto it = env.find(k);
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
    ctx.addr = "http://head:7070";
    ctx.connect = [this]() -> Result<std::shared_ptr<ApiTransport>> {
      return std::shared_ptr<ApiTransport>(fake);
    };
    ctx.now = [this] { return now; };
    ctx.sleep = [this](DurationMs d) {
      sleeps.push_back(d);
      now += d;
    };
    ctx.cwd = "/home/ana/proj";
    ctx.utc_times = true;
  }
  int Run(const std::string& cmd, const std::vector<std::string>& args) {
    return RunCommand(cmd, args, ctx);
  }
};

// A job as the head would encode it.
inline Job MakeJob(JobId id, JobState state) {
  Job j;
  j.id = id;
  j.owner = "ana";
  j.state = state;
  j.submitted_at = kT0;
  j.spec.command = {"python", "train.py"};
  j.events.push_back({kT0, "submitted", ""});
  return j;
}

inline std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("corral_cli_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// ---- submit ----

}  // namespace corral::cli::test

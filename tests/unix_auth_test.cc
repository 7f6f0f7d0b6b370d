// Who is calling, without a token: a real head serving its local socket (--unix-socket), a real
// agent running jobs as their owners, and `corral` run as Unix users this test creates
// (useradd, runuser). The caller over the socket is the Unix user the kernel names (SO_PEERCRED),
// whatever the request claims; a Unix group an admin maps gets its role; tokens over TCP keep
// their expiry and revocation. On a node's host the agent serves the same socket and forwards
// each call under its node's credential (UnixAuth.ANodesUser...): the head takes the uid only
// from a current node. Needs root; removes its users and group at the end.
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cluster_fixture.h"

namespace corral::testing {
namespace {

using Json = nlohmann::json;

// This process's own names (ctest runs each test in a process of its own, several at once): a
// plain user, another, one in the group the head maps to admin, and that group.
const std::string kAna = "corral-ua-ana-" + std::to_string(getpid());
const std::string kBob = "corral-ua-bob-" + std::to_string(getpid());
const std::string kOli = "corral-ua-oli-" + std::to_string(getpid());
const std::string kOps = "corral-ua-ops-" + std::to_string(getpid());

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// The users and the group, made once for the process and removed after it.
class UnixAuth : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0) return;
    RunCommand({"/usr/sbin/groupadd", kOps});
    for (const std::string& u : {kAna, kBob, kOli}) {
      RunCommand({"/usr/sbin/useradd", "--create-home", "--shell", "/bin/sh", u});
    }
    RunCommand({"/usr/sbin/usermod", "-a", "-G", kOps, kOli});
  }
  static void TearDownTestSuite() {
    if (geteuid() != 0) return;
    for (const std::string& u : {kAna, kBob, kOli}) {
      RunCommand({"/usr/sbin/userdel", "--remove", u});
    }
    RunCommand({"/usr/sbin/groupdel", kOps});
  }
  void SetUp() override {
    if (geteuid() != 0) {
      const char* ci = std::getenv("CI");
      if (ci != nullptr && std::string(ci) == "true") FAIL() << "CI runs this as root: not root";
      GTEST_SKIP() << "needs root: creates Unix users and runs corral and jobs as them";
    }
    for (const std::string& u : {kAna, kBob, kOli}) {
      ASSERT_NE(getpwnam(u.c_str()), nullptr) << "useradd could not create " << u;
    }
    ASSERT_NE(getgrnam(kOps.c_str()), nullptr) << "groupadd could not create " << kOps;
  }

  // A cluster whose head serves a local socket and maps kOps to admin; its agent runs jobs as
  // their owners (the default as root).
  std::unique_ptr<LocalCluster> StartCluster(const std::string& name) {
    socket_ = (std::filesystem::temp_directory_path() /
               ("corral-it-" + name + "-" + std::to_string(getpid())) / "run" / "corral.sock")
                  .string();
    return std::make_unique<LocalCluster>(
        name, 1, 2,
        std::vector<std::string>{"--unix-socket", socket_, "--unix-group-role", kOps + "=admin"},
        std::vector<std::string>{});
  }

  // A cluster whose head serves no local socket and whose one agent (node1, a process of its
  // own) serves its node's users on one: every call of theirs is forwarded under node1's
  // credential. The head maps kOps to admin.
  std::unique_ptr<LocalCluster> StartNodeCluster(const std::string& name) {
    socket_ = (std::filesystem::temp_directory_path() /
               ("corral-it-" + name + "-" + std::to_string(getpid())) / "node-run" / "corral.sock")
                  .string();
    auto c = std::make_unique<LocalCluster>(
        name, 1, 2, std::vector<std::string>{"--unix-group-role", kOps + "=admin"},
        std::vector<std::string>{"--unix-socket", socket_});
    // The socket forwards once the node has its credential (its registration).
    EXPECT_TRUE(WaitUntil(30000, [&] { return As(kAna, {"whoami"}).exit_code == 0; }))
        << As(kAna, {"whoami"}).err;
    return c;
  }

  // `corral ARGS...` as Unix user `user`, with nothing configured but where the socket is: no
  // token, no address, a fresh environment.
  CommandResult As(const std::string& user, const std::vector<std::string>& args,
                   const std::string& corral_addr = "") const {
    std::vector<std::string> argv = {"/usr/sbin/runuser",
                                     "-u",
                                     user,
                                     "--",
                                     "/usr/bin/env",
                                     "-i",
                                     "PATH=/usr/bin:/bin",
                                     "HOME=/nonexistent",
                                     "CORRAL_SOCKET=" + socket_};
    if (!corral_addr.empty()) argv.push_back("CORRAL_ADDR=" + corral_addr);
    argv.push_back(CorralBin());
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv);
  }

  // curl as `user` on the socket: "STATUS BODY".
  CommandResult Curl(const std::string& user, const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {"/usr/sbin/runuser", "-u",   user, "--",
                                     "/usr/bin/curl",     "-s",   "-w", "\n%{http_code}",
                                     "--unix-socket",     socket_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv);
  }

  std::string socket_;
};

// The HTTP status curl printed last (-w), and the body before it.
int StatusOf(const CommandResult& r) {
  return std::atoi(r.out.substr(r.out.rfind('\n') + 1).c_str());
}
std::string BodyOf(const CommandResult& r) { return r.out.substr(0, r.out.rfind('\n')); }

Json WhoAmI(const CommandResult& r) { return Json::parse(r.out, nullptr, false); }

TEST_F(UnixAuth, AUnixUserIsWhoCorralSaysAndItsJobRunsAsThatUser) {
  auto c = StartCluster("unixauth-who");
  struct passwd* ana = getpwnam(kAna.c_str());
  ASSERT_NE(ana, nullptr);

  auto who = As(kAna, {"whoami", "-o", "json"});
  ASSERT_EQ(who.exit_code, 0) << who.err;
  Json j = WhoAmI(who);
  EXPECT_EQ(j["user"], kAna);
  EXPECT_EQ(j["role"], "user");
  EXPECT_EQ(j["via"], "unix_socket");
  EXPECT_EQ(j["uid"], ana->pw_uid);
  auto line = As(kAna, {"whoami"});
  EXPECT_EQ(line.out.rfind(std::string(kAna) + " (user) via the local socket, uid " +
                               std::to_string(ana->pw_uid),
                           0),
            0u)
      << line.out;

  // Root is not an admin over the socket unless a group of its is mapped (none here).
  auto root = As("root", {"whoami", "-o", "json"});
  ASSERT_EQ(root.exit_code, 0) << root.err;
  EXPECT_EQ(WhoAmI(root)["user"], "root");
  EXPECT_EQ(WhoAmI(root)["role"], "user");

  auto sub = As(kAna, {"submit", "--parsable", "--", "/bin/sh", "-c", "id -un"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = FirstLine(sub.out);
  auto waited = As(kAna, {"wait", id, "--timeout", "60s"});
  ASSERT_EQ(waited.exit_code, 0) << waited.out << waited.err;
  auto show = c->Corral({"show", id, "-o", "json"});  // the admin's token, over TCP
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(Json::parse(show.out)["owner"], kAna);
  auto logs = As(kAna, {"logs", id});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, std::string(kAna) + "\n") << "the job ran as its owner's Unix user";

  // Explicitly: CORRAL_ADDR=unix://PATH.
  auto explicit_addr = As(kBob, {"whoami", "-o", "json"}, "unix://" + socket_);
  ASSERT_EQ(explicit_addr.exit_code, 0) << explicit_addr.err;
  EXPECT_EQ(WhoAmI(explicit_addr)["user"], kBob);
}

TEST_F(UnixAuth, AUserCannotClaimAnotherOrActOnAnothersJob) {
  auto c = StartCluster("unixauth-claim");
  auto bob_sub = As(kBob, {"submit", "--parsable", "--", "/bin/sleep", "300"});
  ASSERT_EQ(bob_sub.exit_code, 0) << bob_sub.err;
  const std::string bobs = FirstLine(bob_sub.out);

  // A header naming another user changes nothing: the caller is still ana.
  auto claimed = Curl(kAna, {"-H", std::string("X-Remote-User: ") + kBob, "-H",
                             std::string("X-Corral-User: ") + kBob, "http://localhost/v1/whoami"});
  ASSERT_EQ(StatusOf(claimed), 200) << claimed.out << claimed.err;
  EXPECT_EQ(Json::parse(BodyOf(claimed))["user"], kAna);

  // A token over the socket, even the admin's, is refused: one connection, one identity.
  auto with_token = Curl(kAna, {"-H", "Authorization: Bearer " + c->token(),
                                "http://localhost/v1/jobs/" + bobs + "/cancel", "-X", "POST"});
  EXPECT_EQ(StatusOf(with_token), 400) << with_token.out;
  EXPECT_NE(BodyOf(with_token).find("the local socket takes no token"), std::string::npos)
      << with_token.out;

  // Submitting as bob (the body's "user") is refused.
  const std::string as_bob = Json{{"spec", {{"command", {"/bin/true"}}}}, {"user", kBob}}.dump();
  auto submitted = Curl(kAna, {"-X", "POST", "-H", "Content-Type: application/json", "--data",
                               as_bob, "http://localhost/v1/jobs"});
  EXPECT_EQ(StatusOf(submitted), 403) << submitted.out;

  // Ana cannot cancel bob's job, nor read its output; bob can cancel it.
  auto cancel = As(kAna, {"cancel", bobs});
  EXPECT_NE(cancel.exit_code, 0);
  EXPECT_NE(cancel.err.find("permission denied"), std::string::npos) << cancel.err;
  auto peek = As(kAna, {"logs", bobs});
  EXPECT_NE(peek.exit_code, 0);
  EXPECT_NE(peek.err.find("permission denied"), std::string::npos) << peek.err;
  auto state = c->Corral({"show", bobs, "-o", "json"});
  ASSERT_EQ(state.exit_code, 0);
  EXPECT_NE(Json::parse(state.out)["state"], "cancelled");
  // Exec through the socket: bob's own job answers as bob; ana may open no session in it.
  ASSERT_TRUE(WaitUntil(30000, [&] {
    auto r = c->Corral({"show", bobs, "-o", "json"});
    return Json::parse(r.out, nullptr, false).value("state", "") == "running";
  }));
  auto exec_own = As(kBob, {"exec", bobs, "--", "/usr/bin/id", "-un"});
  EXPECT_EQ(exec_own.exit_code, 0) << exec_own.err;
  EXPECT_EQ(exec_own.out, std::string(kBob) + "\n");
  auto exec_other = As(kAna, {"exec", bobs, "--", "/usr/bin/id", "-un"});
  EXPECT_NE(exec_other.exit_code, 0);
  EXPECT_NE(exec_other.err.find("is for its owner (" + std::string(kBob) + ")"), std::string::npos)
      << exec_other.err;

  auto own = As(kBob, {"cancel", bobs});
  EXPECT_EQ(own.exit_code, 0) << own.err;

  // Every refusal is audited with the Unix user it came from.
  std::string audit;
  {
    auto r = RunCommand({"/bin/cat", c->head_dir() + "/audit.log"});
    audit = r.out;
  }
  EXPECT_NE(
      audit.find("\"from\":\"local uid " + std::to_string(getpwnam(kAna.c_str())->pw_uid) + "\""),
      std::string::npos)
      << audit;
}

TEST_F(UnixAuth, AMappedGroupGetsItsRoleAndAnUnmappedUserDoesNot) {
  auto c = StartCluster("unixauth-groups");
  auto oli = As(kOli, {"whoami", "-o", "json"});
  ASSERT_EQ(oli.exit_code, 0) << oli.err;
  EXPECT_EQ(WhoAmI(oli)["role"], "admin");
  Json groups = WhoAmI(oli)["groups"];
  EXPECT_NE(std::find(groups.begin(), groups.end(), kOps), groups.end()) << groups.dump();

  // Creating a token is for admins: oli may, ana may not.
  auto minted = As(kOli, {"token", "create", "--user", "someone"});
  EXPECT_EQ(minted.exit_code, 0) << minted.err;
  auto refused = As(kAna, {"token", "create", "--user", "someone"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("permission denied"), std::string::npos) << refused.err;

  // An admin acts on anyone's job; ana's job is cancelled by oli.
  auto sub = As(kAna, {"submit", "--parsable", "--", "/bin/sleep", "300"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = FirstLine(sub.out);
  auto bob_cancel = As(kBob, {"cancel", id});
  EXPECT_NE(bob_cancel.exit_code, 0) << "an unmapped user acts on its own jobs only";
  auto oli_cancel = As(kOli, {"cancel", id});
  EXPECT_EQ(oli_cancel.exit_code, 0) << oli_cancel.err;
}

TEST_F(UnixAuth, AnExpiredOrRevokedTokenIsStillRefusedOverTcp) {
  auto c = StartCluster("unixauth-tokens");
  auto tcp_as = [&](const std::string& token, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {CorralBin()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {{"CORRAL_ADDR", c->addr()},
                             {"CORRAL_TOKEN", token},
                             {"CORRAL_SOCKET", socket_},
                             {"CORRAL_CONFIG", c->dir() + "/none.json"}});
  };
  auto short_lived = c->Corral({"token", "create", "--user", kAna, "--expires", "1s"});
  ASSERT_EQ(short_lived.exit_code, 0) << short_lived.err;
  auto revoked = c->Corral({"token", "create", "--user", kAna});
  ASSERT_EQ(revoked.exit_code, 0) << revoked.err;
  const std::string expiring = FirstLine(short_lived.out), gone = FirstLine(revoked.out);
  auto works = tcp_as(gone, {"whoami", "-o", "json"});
  ASSERT_EQ(works.exit_code, 0) << works.err;
  EXPECT_EQ(WhoAmI(works)["via"], "token");

  auto list = c->Corral({"token", "list"});
  std::string id;
  for (size_t at = 0; (at = list.out.find("t-", at)) != std::string::npos; ++at) {
    std::string row = list.out.substr(at, list.out.find('\n', at) - at);
    if (row.find(kAna) != std::string::npos && row.find("never") != std::string::npos) {
      id = row.substr(0, row.find(' '));
    }
  }
  ASSERT_FALSE(id.empty()) << list.out;
  ASSERT_EQ(c->Corral({"token", "revoke", id}).exit_code, 0);
  auto after_revoke = tcp_as(gone, {"whoami"});
  EXPECT_NE(after_revoke.exit_code, 0);
  EXPECT_NE(after_revoke.err.find("invalid or revoked token"), std::string::npos)
      << after_revoke.err;

  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto after_expiry = tcp_as(expiring, {"whoami"});
  EXPECT_NE(after_expiry.exit_code, 0);
  EXPECT_NE(after_expiry.err.find("expired"), std::string::npos) << after_expiry.err;
}

// A user on a node's host (an agent, no head there: the head here serves no socket at all) is
// its Unix user too: the agent forwards each call under its node's credential, and the head
// names the uid and applies the same group roles.
TEST_F(UnixAuth, ANodesUserIsTheirUnixUserThroughItsAgentAndNoOneElse) {
  auto c = StartNodeCluster("unixauth-node");
  struct passwd* ana = getpwnam(kAna.c_str());
  ASSERT_NE(ana, nullptr);
  auto who = As(kAna, {"whoami", "-o", "json"});
  ASSERT_EQ(who.exit_code, 0) << who.err;
  EXPECT_EQ(WhoAmI(who)["user"], kAna);
  EXPECT_EQ(WhoAmI(who)["role"], "user");
  EXPECT_EQ(WhoAmI(who)["via"], "node_socket");
  EXPECT_EQ(WhoAmI(who)["uid"], ana->pw_uid);
  EXPECT_NE(As(kAna, {"whoami"}).out.find("via this node's local socket"), std::string::npos);
  auto root = As("root", {"whoami", "-o", "json"});
  EXPECT_EQ(WhoAmI(root)["role"], "user") << "the node vouches for root as a plain user";

  // Ana's job is hers and runs as her; bob's is his.
  auto sub = As(kAna, {"submit", "--parsable", "--", "/bin/sh", "-c", "id -un"});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string anas = FirstLine(sub.out);
  auto bob_sub = As(kBob, {"submit", "--parsable", "--", "/bin/sleep", "300"});
  ASSERT_EQ(bob_sub.exit_code, 0) << bob_sub.err;
  const std::string bobs = FirstLine(bob_sub.out);
  auto waited = As(kAna, {"wait", anas, "--timeout", "60s"});
  ASSERT_EQ(waited.exit_code, 0) << waited.out << waited.err;
  auto logs = As(kAna, {"logs", anas});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out, std::string(kAna) + "\n");
  for (const auto& [id, owner] : {std::pair{anas, kAna}, std::pair{bobs, kBob}}) {
    auto shown = c->Corral({"show", id, "-o", "json"});  // the admin's token, over TCP
    ASSERT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_EQ(Json::parse(shown.out)["owner"], owner) << shown.out;
  }

  // Ana cannot claim bob, by header or body, nor act on or read his job.
  auto claimed =
      Curl(kAna, {"-H", std::string("X-Corral-User: ") + kBob, "http://localhost/v1/whoami"});
  ASSERT_EQ(StatusOf(claimed), 200) << claimed.out << claimed.err;
  EXPECT_EQ(Json::parse(BodyOf(claimed))["user"], kAna);
  const std::string as_bob = Json{{"spec", {{"command", {"/bin/true"}}}}, {"user", kBob}}.dump();
  auto submitted = Curl(kAna, {"-X", "POST", "-H", "Content-Type: application/json", "--data",
                               as_bob, "http://localhost/v1/jobs"});
  EXPECT_EQ(StatusOf(submitted), 403) << submitted.out;
  auto cancel = As(kAna, {"cancel", bobs});
  EXPECT_NE(cancel.exit_code, 0);
  EXPECT_NE(cancel.err.find("permission denied"), std::string::npos) << cancel.err;
  auto peek = As(kAna, {"logs", bobs});
  EXPECT_NE(peek.exit_code, 0);
  EXPECT_NE(peek.err.find("permission denied"), std::string::npos) << peek.err;
  // A token over the node's socket, even the admin's, is refused, and so is the forwarding
  // route itself (the node forwards for whoever the kernel says is calling, no one else).
  auto with_token = Curl(kAna, {"-H", "Authorization: Bearer " + c->token(),
                                "http://localhost/v1/jobs/" + bobs + "/cancel", "-X", "POST"});
  EXPECT_EQ(StatusOf(with_token), 400) << with_token.out;
  EXPECT_NE(BodyOf(with_token).find("takes no token"), std::string::npos) << with_token.out;
  auto as_root = Curl(kAna, {"http://localhost/v1/forwarded/0/v1/whoami"});
  EXPECT_EQ(StatusOf(as_root), 403) << as_root.out;
  auto state = c->Corral({"show", bobs, "-o", "json"});
  ASSERT_EQ(state.exit_code, 0);
  EXPECT_NE(Json::parse(state.out)["state"], "cancelled");

  // Exec through the node's socket: bob's session in his own job runs as bob.
  ASSERT_TRUE(WaitUntil(30000, [&] {
    auto r = c->Corral({"show", bobs, "-o", "json"});
    return Json::parse(r.out, nullptr, false).value("state", "") == "running";
  }));
  auto exec_own = As(kBob, {"exec", bobs, "--", "/usr/bin/id", "-un"});
  EXPECT_EQ(exec_own.exit_code, 0) << exec_own.err;
  EXPECT_EQ(exec_own.out, std::string(kBob) + "\n");

  // The head's group mapping holds for a node's users: oli (kOps, admin) cancels bob's job.
  auto oli_cancel = As(kOli, {"cancel", bobs});
  EXPECT_EQ(oli_cancel.exit_code, 0) << oli_cancel.err;

  // Ana's refusals are audited with her uid and the node that forwarded them.
  const std::string audit = RunCommand({"/bin/cat", c->head_dir() + "/audit.log"}).out;
  EXPECT_NE(audit.find("\"from\":\"uid " + std::to_string(ana->pw_uid) + " via node at "),
            std::string::npos)
      << audit;
}

// The head takes a forwarded uid only with a current node credential: a user's token on the
// route vouches for no one, and once the node is removed its credential forwards no one.
TEST_F(UnixAuth, ARemovedNodesCredentialForwardsNoOne) {
  auto c = StartNodeCluster("unixauth-removed");
  const std::string uid = std::to_string(getpwnam(kAna.c_str())->pw_uid);
  const std::string credential =
      FirstLine(RunCommand({"/bin/cat", c->dir() + "/agents/node1/node.credential"}).out);
  ASSERT_FALSE(credential.empty());
  auto forward = [&](const std::string& bearer) {
    return RunCommand({"/usr/bin/curl", "-s", "-w", "\n%{http_code}", "-H",
                       "Authorization: Bearer " + bearer,
                       c->addr() + "/v1/forwarded/" + uid + "/v1/whoami"});
  };
  auto by_node = forward(credential);
  ASSERT_EQ(StatusOf(by_node), 200) << by_node.out;
  EXPECT_EQ(Json::parse(BodyOf(by_node))["user"], kAna);
  EXPECT_EQ(StatusOf(forward(c->token())), 403) << "an admin's token vouches for no one";

  c->KillAgent(1);
  auto removed = c->Corral({"nodes", "rm", "node1"});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  auto after = forward(credential);
  EXPECT_EQ(StatusOf(after), 401) << after.out;
  EXPECT_NE(BodyOf(after).find("the forwarding node's credential"), std::string::npos) << after.out;
}

}  // namespace
}  // namespace corral::testing

// The notifier against a real HTTP server on loopback and a sendmail stand-in that writes what
// it is given to files: each notice reaches the webhooks it matches and the mail it asks for,
// failures are retried with backoff and then counted, and nothing blocks the caller.
#include "notify/notifier.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "head/change.h"
#include "net/http_server.h"
#include "notify/sendmail.h"

namespace corral::notify {
namespace {

using namespace std::chrono_literals;

head::JobNotice Notice(NotifyEvent event, const std::string& owner, const std::string& queue) {
  head::JobNotice n;
  n.event = event;
  n.revision = 41;
  n.at = 1'800'000'000'000;
  n.job = 12;
  n.name = "train\nBcc: evil@example.org";  // a header injection attempt
  n.owner = owner;
  n.queue = queue;
  n.state = event == NotifyEvent::kFail ? "failed" : "running";
  n.exit_code = event == NotifyEvent::kFail ? 3 : 0;
  n.reason = event == NotifyEvent::kFail ? "replica 0 exited with code 3" : "";
  return n;
}

// A webhook receiver: answers `fail_first` requests 500, then 200, and keeps the bodies.
class Receiver {
 public:
  explicit Receiver(int fail_first = 0)
      : fail_left_(fail_first), server_([this](net::HttpRequest req, net::Responder r) {
          std::lock_guard<std::mutex> lock(mu_);
          net::HttpResponse res;
          if (fail_left_ > 0) {
            --fail_left_;
            res.status = 500;
          } else {
            bodies_.push_back(req.path + " " + req.body);
          }
          r(res);
        }) {
    auto port = server_.Listen("127.0.0.1", 0);
    EXPECT_TRUE(port.ok());
    url_ = "http://127.0.0.1:" + std::to_string(*port);
    server_.Start();
  }
  std::string url() const { return url_; }
  std::vector<std::string> bodies() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }

 private:
  std::mutex mu_;
  int fail_left_;
  std::vector<std::string> bodies_;
  net::HttpServer server_;
  std::string url_;
};

class NotifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("corral-notify-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_ / "mail");
    sendmail_ = (dir_ / "sendmail").string();
    std::ofstream(sendmail_) << "#!/bin/sh\n# -oi -- TO; the message on stdin\n"
                             << "f=" << (dir_ / "mail").string() << "/$(date +%s%N)-$3\n"
                             << "cat > \"$f\"\n";
    chmod(sendmail_.c_str(), 0755);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<std::string> Mails() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_ / "mail")) {
      std::ifstream f(e.path());
      out.push_back(e.path().filename().string() + "\n" +
                    std::string(std::istreambuf_iterator<char>(f), {}));
    }
    return out;
  }

  NotifierConfig Config() {
    NotifierConfig c;
    c.sendmail = sendmail_;
    c.first_retry = 20ms;
    c.max_retry = 100ms;
    c.timeout = 5s;
    return c;
  }

  std::filesystem::path dir_;
  std::string sendmail_;
  MetricsRegistry metrics_;
};

bool HasLine(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST_F(NotifierTest, EachWebhookGetsTheNoticesItMatches) {
  Receiver all, ana, train;
  NotifierConfig c = Config();
  c.sendmail.clear();
  c.webhooks = {*ParseWebhookTarget("--webhook", all.url() + "/hooks/all"),
                *ParseWebhookTarget("--webhook", "user:ana=" + ana.url() + "/ana"),
                *ParseWebhookTarget("--webhook", "queue:train=" + train.url())};
  {
    Notifier n(c, &metrics_);
    n.Enqueue(Notice(NotifyEvent::kBegin, "ana", "default"));
    n.Enqueue(Notice(NotifyEvent::kFail, "bob", "train"));
    ASSERT_TRUE(n.WaitIdle(10s));
  }
  ASSERT_EQ(all.bodies().size(), 2u);
  EXPECT_EQ(all.bodies()[0].rfind("/hooks/all {", 0), 0u) << all.bodies()[0];
  ASSERT_EQ(ana.bodies().size(), 1u);
  ASSERT_EQ(train.bodies().size(), 1u);
  Json fail = Json::parse(train.bodies()[0].substr(train.bodies()[0].find(' ') + 1));
  EXPECT_EQ(fail["event"], "fail");
  EXPECT_EQ(fail["job"], 12);
  EXPECT_EQ(fail["owner"], "bob");
  EXPECT_EQ(fail["exit_code"], 3);
  EXPECT_EQ(fail["revision"], 41);
  EXPECT_TRUE(HasLine(metrics_.Render(),
                      "corral_notifications_total{channel=\"webhook\",outcome=\"sent\"} 4"))
      << metrics_.Render();
}

TEST_F(NotifierTest, MailGoesForTheTypesTheJobAskedToItsAddress) {
  NotifierConfig c = Config();
  c.mail_domain = "example.org";
  head::JobNotice begin = Notice(NotifyEvent::kBegin, "ana", "default");
  begin.notify.events = static_cast<uint32_t>(NotifyEvent::kEnd);
  head::JobNotice failed = Notice(NotifyEvent::kFail, "ana", "default");
  failed.notify = begin.notify;  // END covers a failed end too
  head::JobNotice other = Notice(NotifyEvent::kEnd, "bob", "default");
  other.notify = {static_cast<uint32_t>(NotifyEvent::kEnd), "bob@lab.example.com"};
  head::JobNotice unasked = Notice(NotifyEvent::kEnd, "carol", "default");
  {
    Notifier n(c, &metrics_);
    for (const auto& notice : {begin, failed, other, unasked}) n.Enqueue(notice);
    ASSERT_TRUE(n.WaitIdle(10s));
  }
  std::vector<std::string> mails = Mails();
  ASSERT_EQ(mails.size(), 2u);
  std::sort(mails.begin(), mails.end(), [](const std::string& a, const std::string& b) {
    return a.substr(a.find('-')) < b.substr(b.find('-'));
  });
  EXPECT_NE(mails[0].find("-ana@example.org\n"), std::string::npos) << mails[0];
  EXPECT_TRUE(HasLine(mails[0], "To: ana@example.org")) << mails[0];
  EXPECT_TRUE(HasLine(mails[0],
                      "Subject: Corral Job_id=12 Name=train Bcc: evil@example.org Failed, "
                      "failed, ExitCode 3"))
      << mails[0];
  EXPECT_FALSE(HasLine(mails[0], "Bcc: evil@example.org")) << "a name cannot add a header";
  EXPECT_NE(mails[0].find("Why: replica 0 exited with code 3"), std::string::npos);
  EXPECT_NE(mails[1].find("-bob@lab.example.com\n"), std::string::npos) << mails[1];
}

TEST_F(NotifierTest, AFailedDeliveryIsRetriedWithBackoffThenCountedFailed) {
  Receiver flaky(/*fail_first=*/2);
  NotifierConfig c = Config();
  c.max_attempts = 4;
  c.webhooks = {*ParseWebhookTarget("--webhook", flaky.url())};
  c.sendmail = (dir_ / "no-such-sendmail").string();
  head::JobNotice n = Notice(NotifyEvent::kEnd, "ana", "default");
  n.notify.events = static_cast<uint32_t>(NotifyEvent::kEnd);
  {
    Notifier notifier(c, &metrics_);
    notifier.Enqueue(n);
    ASSERT_TRUE(notifier.WaitIdle(10s));
  }
  EXPECT_EQ(flaky.bodies().size(), 1u) << "delivered once, after two 500s";
  const std::string text = metrics_.Render();
  EXPECT_TRUE(HasLine(text, "corral_notifications_total{channel=\"webhook\",outcome=\"sent\"} 1"))
      << text;
  EXPECT_TRUE(HasLine(text, "corral_notification_retries_total{channel=\"webhook\"} 2")) << text;
  EXPECT_TRUE(HasLine(text, "corral_notifications_total{channel=\"mail\",outcome=\"failed\"} 1"))
      << text;
  EXPECT_TRUE(HasLine(text, "corral_notification_retries_total{channel=\"mail\"} 3")) << text;
}

TEST_F(NotifierTest, ASendmailThatFailsIsAnErrorSayingHow) {
  std::string failing = (dir_ / "failing").string();
  std::ofstream(failing) << "#!/bin/sh\ncat >/dev/null\nexit 75\n";
  chmod(failing.c_str(), 0755);
  Status st = RunSendmail(failing, "ana", "To: ana\n\nhi\n", 5s);
  EXPECT_EQ(st.message(), "sendmail: " + failing + " exited with code 75");
  std::string hanging = (dir_ / "hanging").string();
  std::ofstream(hanging) << "#!/bin/sh\nexec sleep 60\n";
  chmod(hanging.c_str(), 0755);
  st = RunSendmail(hanging, "ana", "x", 200ms);
  EXPECT_NE(st.message().find("did not finish within 200 ms"), std::string::npos) << st.message();
  EXPECT_TRUE(RunSendmail(sendmail_, "ana", "To: ana\n\nhi\n", 5s).ok());
  EXPECT_EQ(Mails().size(), 1u);
}

TEST(WebhookTarget, ParsesScopesAndNamesTheFlagInErrors) {
  auto all = ParseWebhookTarget("--webhook", "http://127.0.0.1:9/x");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->scope, WebhookTarget::Scope::kAll);
  auto q = ParseWebhookTarget("--webhook", "queue:org/team=https://hooks.example.org/corral");
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->scope, WebhookTarget::Scope::kQueue);
  EXPECT_EQ(q->who, "org/team");
  EXPECT_EQ(q->url, "https://hooks.example.org/corral");
  for (const char* bad : {"user:=http://x:1", "queue:q", "ftp://x/y", "user:ana=nothing"}) {
    auto r = ParseWebhookTarget("--webhook", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().rfind("flag '--webhook': got \"", 0), 0u)
        << r.status().message();
  }
}

TEST(MailTypes, ParseSlurmsListsAndRefuseWhatIsNotTaken) {
  auto t = ParseMailTypes("mail_type", "END,fail");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(MailTypesText(*t), "end,fail");
  EXPECT_EQ(MailTypesText(*ParseMailTypes("mail_type", "ALL")), "begin,end,fail,requeue,preempt");
  EXPECT_EQ(*ParseMailTypes("mail_type", "NONE"), 0u);
  auto bad = ParseMailTypes("mail_type", "END,TIME_LIMIT_90");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("\"time_limit_90\" is not taken"), std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(ParseMailTypes("mail_type", "NONE,END").ok());
  EXPECT_FALSE(ValidateMailUser("mail_user", "a@b, c@d").ok());
  EXPECT_FALSE(ValidateMailUser("mail_user", "a@b\nBcc: c@d").ok());
  EXPECT_TRUE(ValidateMailUser("mail_user", "ana@example.org").ok());
}

}  // namespace
}  // namespace corral::notify

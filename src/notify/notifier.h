// Delivers job notices (head/job_notice.h) to webhooks and by mail, off the head's state
// machine: a bounded queue and one thread of its own, retries with backoff, never blocking
// the caller. Each notice is delivered at least once while this head lives (a head that dies
// with notices queued loses them; the standby that takes over tells of what it commits).
//
// Threads: Enqueue from any thread (the head's state machine calls it); the delivery thread
// owns the HTTP clients and runs sendmail; the destructor joins it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/metrics.h"
#include "core/status.h"
#include "head/job_notice.h"

namespace corral::net {
class HttpClient;
}

namespace corral::notify {

// A webhook the head calls for jobs: every job's, one user's or one queue's.
struct WebhookTarget {
  enum class Scope { kAll, kUser, kQueue };
  Scope scope = Scope::kAll;
  std::string who;  // the user or the queue (kUser, kQueue)
  std::string url;  // http(s)://HOST:PORT/PATH
  bool Matches(const head::JobNotice& n) const;
};
// "URL", "user:NAME=URL" or "queue:NAME=URL"; a bad one is an error naming `flag`.
Result<WebhookTarget> ParseWebhookTarget(const std::string& flag, const std::string& text);

struct NotifierConfig {
  std::vector<WebhookTarget> webhooks;
  std::string sendmail;     // the program mail goes through; "": no mail is sent
  std::string mail_domain;  // appended as @DOMAIN to an address without '@' (Slurm's MailDomain)
  int max_attempts = 6;     // a delivery's tries before it is counted failed
  std::chrono::milliseconds first_retry{1000};  // doubling up to max_retry
  std::chrono::milliseconds max_retry{60000};
  std::chrono::milliseconds timeout{10000};  // one webhook call, or one sendmail run
  size_t max_queued = 10000;                 // more waiting deliveries: new ones are dropped
};

// The mail about notice `n` to `to`, headers and body, as sendmail -oi reads it.
std::string MailMessage(const head::JobNotice& n, const std::string& to);

class Notifier {
 public:
  // Counts into `metrics` (corral_notifications_total{channel,outcome},
  // corral_notification_retries_total{channel}); it must outlive the notifier.
  Notifier(NotifierConfig config, MetricsRegistry* metrics);
  ~Notifier();
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // Queues the deliveries `n` asks for (matching webhooks; mail if its job wants it). Never
  // blocks on delivery. Any thread.
  void Enqueue(const head::JobNotice& n);
  // Whether everything queued has been delivered or given up within `timeout` (tests).
  bool WaitIdle(std::chrono::milliseconds timeout);

 private:
  using Clock = std::chrono::steady_clock;
  enum class Channel { kWebhook, kMail };
  struct Delivery {
    Channel channel = Channel::kWebhook;
    std::string target;   // the webhook's URL, or the mail's address
    std::string payload;  // the JSON body, or the whole mail
    int attempt = 0;
    Clock::time_point due;
  };

  void Run();
  Status Deliver(const Delivery& d);
  Status PostWebhook(const std::string& url, const std::string& body);
  void Settle(Delivery d, const Status& outcome);
  static const char* ChannelName(Channel c);

  const NotifierConfig config_;
  MetricsRegistry* metrics_;
  std::map<std::string, std::unique_ptr<net::HttpClient>> clients_;  // delivery thread's own

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::multimap<Clock::time_point, Delivery> queued_;  // GUARDED_BY(mu_), by due time
  int in_flight_ = 0;                                  // GUARDED_BY(mu_)
  bool stopping_ = false;                              // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace corral::notify

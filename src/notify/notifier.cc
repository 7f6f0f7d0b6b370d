#include "notify/notifier.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/time.h"
#include "net/http_client.h"
#include "net/url.h"
#include "notify/sendmail.h"

namespace corral::notify {
namespace {

// A header's text: a job's name may hold anything, a mail header no line break.
std::string HeaderText(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < ' ' || c == 0x7f) c = ' ';
  }
  return out;
}

const char* NoticeVerb(NotifyEvent e) {
  switch (e) {
    case NotifyEvent::kBegin:
      return "Began";
    case NotifyEvent::kEnd:
      return "Ended";
    case NotifyEvent::kFail:
      return "Failed";
    case NotifyEvent::kRequeue:
      return "Requeued";
    case NotifyEvent::kPreempt:
      return "Preempted";
  }
  return "Changed";
}

std::string MailAddress(const std::string& user, const std::string& domain) {
  if (domain.empty() || user.find('@') != std::string::npos) return user;
  return user + "@" + domain;
}

}  // namespace

bool WebhookTarget::Matches(const head::JobNotice& n) const {
  switch (scope) {
    case Scope::kAll:
      return true;
    case Scope::kUser:
      return n.owner == who;
    case Scope::kQueue:
      return n.queue == who;
  }
  return false;
}

Result<WebhookTarget> ParseWebhookTarget(const std::string& flag, const std::string& text) {
  WebhookTarget t;
  std::string url = text;
  for (auto [prefix, scope] : {std::pair{"user:", WebhookTarget::Scope::kUser},
                               std::pair{"queue:", WebhookTarget::Scope::kQueue}}) {
    if (text.rfind(prefix, 0) != 0) continue;
    size_t eq = text.find('=');
    t.scope = scope;
    t.who = eq == std::string::npos
                ? ""
                : text.substr(std::string(prefix).size(), eq - std::string(prefix).size());
    if (t.who.empty()) {
      return InvalidArgument("flag '" + flag + "': got \"" + text + "\", want " + prefix +
                             "NAME=URL");
    }
    url = text.substr(eq + 1);
  }
  auto parsed = net::ParseUrl(url);
  if (!parsed.ok()) {
    return InvalidArgument("flag '" + flag + "': got \"" + text +
                           "\", want [user:NAME=|queue:NAME=]http(s)://HOST:PORT/PATH (" +
                           parsed.status().message() + ")");
  }
  t.url = url;
  return t;
}

std::string MailMessage(const head::JobNotice& n, const std::string& to) {
  std::string subject = "Corral Job_id=" + std::to_string(n.job) + " Name=" + n.name + " " +
                        NoticeVerb(n.event) + ", " + n.state;
  if (n.event == NotifyEvent::kEnd || n.event == NotifyEvent::kFail) {
    subject += ", ExitCode " + std::to_string(n.exit_code);
  }
  std::string body = "Job " + std::to_string(n.job) + " (" + n.name + ") of " + n.owner +
                     " in queue " + n.queue + ": " + NoticeVerb(n.event) + " at " +
                     FormatUtc(n.at) + "; now " + n.state + ".\n";
  if (!n.reason.empty()) body += "Why: " + n.reason + "\n";
  body += "See: corral show " + std::to_string(n.job) + "\n";
  return "To: " + HeaderText(to) + "\nSubject: " + HeaderText(subject) +
         "\nContent-Type: text/plain; charset=utf-8\nAuto-Submitted: auto-generated\n\n" + body;
}

Notifier::Notifier(NotifierConfig config, MetricsRegistry* metrics)
    : config_(std::move(config)), metrics_(metrics) {
  metrics_->Describe("corral_notifications_total", MetricsRegistry::Type::kCounter,
                     "Job notices delivered (sent), given up after every retry (failed) or "
                     "dropped with the queue full, per channel (webhook, mail)");
  metrics_->Describe("corral_notification_retries_total", MetricsRegistry::Type::kCounter,
                     "Job notice deliveries tried again after a failure, per channel");
  thread_ = std::thread([this] { Run(); });
}

Notifier::~Notifier() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

const char* Notifier::ChannelName(Channel c) { return c == Channel::kMail ? "mail" : "webhook"; }

void Notifier::Enqueue(const head::JobNotice& n) {
  std::vector<Delivery> out;
  const auto now = Clock::now();
  const std::string body = NoticeJson(n).dump();
  for (const WebhookTarget& w : config_.webhooks) {
    if (w.Matches(n)) out.push_back({Channel::kWebhook, w.url, body, 0, now});
  }
  if (!config_.sendmail.empty() && n.MailWanted()) {
    std::string to =
        MailAddress(n.notify.mail_user.empty() ? n.owner : n.notify.mail_user, config_.mail_domain);
    out.push_back({Channel::kMail, to, MailMessage(n, to), 0, now});
  }
  if (out.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Delivery& d : out) {
      if (queued_.size() >= config_.max_queued) {
        metrics_->Add("corral_notifications_total",
                      {{"channel", ChannelName(d.channel)}, {"outcome", "dropped"}}, 1);
        continue;
      }
      queued_.emplace(d.due, std::move(d));
    }
  }
  wake_.notify_all();
}

bool Notifier::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_for(lock, timeout, [this] { return queued_.empty() && in_flight_ == 0; });
}

void Notifier::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (stopping_) return;
    if (queued_.empty()) {
      idle_.notify_all();
      wake_.wait(lock);
      continue;
    }
    auto first = queued_.begin();
    if (first->first > Clock::now()) {
      wake_.wait_until(lock, first->first);
      continue;
    }
    Delivery d = std::move(first->second);
    queued_.erase(first);
    ++in_flight_;
    lock.unlock();
    Status outcome = Deliver(d);
    Settle(std::move(d), outcome);
    lock.lock();
    --in_flight_;
  }
}

Status Notifier::Deliver(const Delivery& d) {
  if (d.channel == Channel::kMail) {
    return RunSendmail(config_.sendmail, d.target, d.payload, config_.timeout);
  }
  return PostWebhook(d.target, d.payload);
}

Status Notifier::PostWebhook(const std::string& url, const std::string& body) {
  auto parsed = net::ParseUrl(url);
  if (!parsed.ok()) return parsed.status();
  const std::string base = parsed->scheme + "://" + parsed->HostPort();
  auto& client = clients_[base];
  if (!client) client = std::make_unique<net::HttpClient>(base, "");
  auto answer = client->Request("POST", parsed->path.empty() ? "/" : parsed->path, body,
                                config_.timeout, {{"Content-Type", "application/json"}});
  if (!answer.ok()) return answer.status();
  if (answer->status < 200 || answer->status > 299) {
    return Unavailable("webhook " + url + " answered " + std::to_string(answer->status));
  }
  return Status::Ok();
}

void Notifier::Settle(Delivery d, const Status& outcome) {
  const char* channel = ChannelName(d.channel);
  if (outcome.ok()) {
    metrics_->Add("corral_notifications_total", {{"channel", channel}, {"outcome", "sent"}}, 1);
    return;
  }
  if (++d.attempt >= config_.max_attempts) {
    spdlog::warn("job notice to {} ({}) given up after {} tries: {}", d.target, channel, d.attempt,
                 outcome.message());
    metrics_->Add("corral_notifications_total", {{"channel", channel}, {"outcome", "failed"}}, 1);
    return;
  }
  metrics_->Add("corral_notification_retries_total", {{"channel", channel}}, 1);
  auto backoff = config_.first_retry * (1 << std::min(d.attempt - 1, 16));
  d.due = Clock::now() + std::min<std::chrono::milliseconds>(backoff, config_.max_retry);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_.emplace(d.due, std::move(d));
  }
}

}  // namespace corral::notify

// HttpServer, HttpClient and AsyncHttpClient over TLS on 127.0.0.1: the right CA and name
// connect; plain HTTP, a wrong CA or a wrong name get nothing.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "net/async_http_client.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/tls_certs.h"
#include "net/tls_context.h"

namespace corral::net {
namespace {

using namespace std::chrono_literals;

Handler Hello() {
  return [](HttpRequest req, Responder respond) {
    HttpResponse r;
    r.content_type = "text/plain";
    r.body = "hello " + req.path;
    respond(std::move(r));
  };
}

struct Pki {
  CertAndKey ca = *MakeCa("test CA");
  CertAndKey other_ca = *MakeCa("someone else's CA");
  std::shared_ptr<const TlsClientContext> trust = *TlsClientContext::FromCaPem(ca.cert_pem);
};

struct TlsServer {
  explicit TlsServer(std::shared_ptr<TlsServerContext> tls)
      : server(Hello(), HttpServerOptions{.io_threads = 1, .tls = std::move(tls)}) {
    port = *server.Listen("127.0.0.1", 0);
    server.Start();
  }
  std::string Url(const std::string& host = "127.0.0.1") const {
    return "https://" + host + ":" + std::to_string(port);
  }
  HttpServer server;
  int port = 0;
};

std::shared_ptr<TlsServerContext> ServerFor(const CertAndKey& ca,
                                            const std::vector<std::string>& sans) {
  auto leaf = IssueCertificate(ca, "server", sans);
  return *TlsServerContext::FromPem(leaf->cert_pem, leaf->key_pem);
}

TEST(Tls, AClientTrustingTheCaTalksToTheServerOverOneConnection) {
  Pki pki;
  TlsServer ts(ServerFor(pki.ca, {"localhost", "127.0.0.1"}));
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    HttpClient client(ts.Url(host), "tok", {.tls = pki.trust});
    for (int i = 0; i < 3; ++i) {
      auto r = client.Get("/x", 5s);
      ASSERT_TRUE(r.ok()) << host << ": " << r.status().ToString();
      EXPECT_EQ(r->status, 200);
      EXPECT_EQ(r->body, "hello /x");
    }
    EXPECT_EQ(client.connections_opened(), 1) << "keep-alive over TLS";
  }
}

TEST(Tls, PlainHttpOnATlsPortGetsNoAnswer) {
  Pki pki;
  TlsServer ts(ServerFor(pki.ca, {"127.0.0.1"}));
  HttpClient plain("http://127.0.0.1:" + std::to_string(ts.port), "");
  auto r = plain.Get("/x", 5s);
  ASSERT_FALSE(r.ok()) << "got HTTP " << r->status;
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
}

TEST(Tls, AClientWithAnotherCaIsRefusedSayingWhy) {
  Pki pki;
  TlsServer ts(ServerFor(pki.ca, {"127.0.0.1"}));
  auto wrong = *TlsClientContext::FromCaPem(pki.other_ca.cert_pem);
  HttpClient client(ts.Url(), "", {.tls = wrong});
  auto r = client.Get("/x", 5s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(r.status().message().find("certificate verify failed"), std::string::npos)
      << r.status().message();
}

TEST(Tls, ACertificateForAnotherNameIsRefused) {
  Pki pki;
  TlsServer ts(ServerFor(pki.ca, {"head.example", "10.0.0.1"}));
  HttpClient by_ip(ts.Url("127.0.0.1"), "", {.tls = pki.trust});
  auto r = by_ip.Get("/x", 5s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("address mismatch"), std::string::npos)
      << r.status().message();
  HttpClient by_name(ts.Url("localhost"), "", {.tls = pki.trust});
  r = by_name.Get("/x", 5s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("hostname mismatch"), std::string::npos)
      << r.status().message();
}

TEST(Tls, AServerWithoutACertificateServesOnceOneIsInstalled) {
  Pki pki;
  auto ctx = TlsServerContext::WithoutCertificate();
  TlsServer ts(ctx);
  HttpClient client(ts.Url(), "", {.tls = pki.trust});
  ASSERT_FALSE(client.Get("/x", 5s).ok());
  auto leaf = IssueCertificate(pki.ca, "agent", {"127.0.0.1"});
  ASSERT_TRUE(ctx->Replace(leaf->cert_pem, leaf->key_pem).ok());
  auto r = client.Get("/x", 5s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->body, "hello /x");
  auto mismatched = ctx->Replace(leaf->cert_pem, pki.ca.key_pem);
  EXPECT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.message().find("does not match"), std::string::npos);
}

TEST(Tls, TheAsyncClientVerifiesToo) {
  Pki pki;
  TlsServer ts(ServerFor(pki.ca, {"127.0.0.1"}));
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Result<HttpResponse>> got;
  auto done = [&](Result<HttpResponse> r) {
    std::lock_guard lock(mu);
    got.push_back(std::move(r));
    cv.notify_all();
  };
  AsyncHttpClient trusting(pki.trust);
  AsyncHttpClient distrusting(*TlsClientContext::FromCaPem(pki.other_ca.cert_pem));
  trusting.Request(ts.Url(), "", "GET", "/a", 5s, done);
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return got.size() == 1; }));
  }
  distrusting.Request(ts.Url(), "", "GET", "/b", 5s, done);
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return got.size() == 2; }));
  ASSERT_TRUE(got[0].ok()) << got[0].status().ToString();
  EXPECT_EQ(got[0]->body, "hello /a");
  ASSERT_FALSE(got[1].ok());
  EXPECT_NE(got[1].status().message().find("certificate verify failed"), std::string::npos)
      << got[1].status().message();
}

TEST(Tls, AnUnreadableCaFileIsNamed) {
  auto r = TlsClientContext::FromCaFile("/nonexistent/ca.pem");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/ca.pem"), std::string::npos);
}

}  // namespace
}  // namespace corral::net

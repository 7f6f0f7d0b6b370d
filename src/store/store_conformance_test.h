// The Store conformance suite: every semantic of the Store interface, asserted on each backend.
// A backend's test file defines a StoreBackend and instantiates the suite with it
// (sqlite_store_test.cc, postgres_store_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "store/store.h"

namespace corral::store {

// A job of ana's running `true`, in `state`: what the stores' tests write.
inline Job MakeJob(JobId id, JobState state) {
  Job j;
  j.id = id;
  j.owner = "ana";
  j.spec.command = {"true"};
  j.state = state;
  return j;
}

// One place a store lives (a file, a database), reached both through the Store and around it.
class StoreBackend {
 public:
  virtual ~StoreBackend() = default;
  // "" or why this backend cannot run here: the test is skipped with that message.
  virtual std::string SkipReason() = 0;
  // A fresh, empty location for the test `name`.
  virtual Status Prepare(const std::string& name) = 0;
  // Opens the Store on that location (migrating it), as a head would.
  virtual Result<std::unique_ptr<Store>> Open() = 0;
  // Runs SQL on the location behind the Store's back (to build old stores and inspect);
  // returns the first column of the first row, "" if none.
  virtual Result<std::string> Sql(const std::string& sql) = 0;
  // The tables of schema version 1 in this backend's dialect: what a store written before
  // schema versioning holds (it has no schema_version table).
  virtual std::string SchemaV1() = 0;
  // SQL whose answer is "1" when index `name` exists, "0" when not.
  virtual std::string IndexExists(const std::string& name) = 0;
};

struct BackendParam {
  std::string name;
  std::function<std::unique_ptr<StoreBackend>()> make;
  friend void PrintTo(const BackendParam& p, std::ostream* os) { *os << p.name; }
};

class StoreConformance : public ::testing::TestWithParam<BackendParam> {
 protected:
  void SetUp() override;
  std::unique_ptr<StoreBackend> backend_;
};

std::string BackendName(const ::testing::TestParamInfo<BackendParam>& info);

}  // namespace corral::store

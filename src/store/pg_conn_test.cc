// The parts of the libpq wrapper that need no server.
#include "store/pg_conn.h"

#include <gtest/gtest.h>

namespace corral::store::pg {
namespace {

TEST(NamesSeveralHosts, AUriOrAKeywordStringWithAHostListIsAStoreMeantToFailOver) {
  EXPECT_TRUE(NamesSeveralHosts(
      "postgresql://corral@db1:5432,db2:5432/corral?target_session_attrs=read-write"));
  EXPECT_TRUE(NamesSeveralHosts("host=db1,db2 port=5432,5433 dbname=corral"));
  EXPECT_TRUE(NamesSeveralHosts("hostaddr=10.0.0.1,10.0.0.2 dbname=corral"));
  EXPECT_FALSE(NamesSeveralHosts("postgresql://corral@db1:5432/corral"));
  EXPECT_FALSE(NamesSeveralHosts("postgres://corral@127.0.0.1/corral?connect_timeout=2"));
  EXPECT_FALSE(NamesSeveralHosts("host=db1 dbname=corral"));
  EXPECT_FALSE(NamesSeveralHosts("postgresql://[unterminated"));
}

}  // namespace
}  // namespace corral::store::pg

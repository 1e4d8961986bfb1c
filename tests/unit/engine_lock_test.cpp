#include <gtest/gtest.h>
#include <sys/stat.h>

#include "store/engine_lock.hpp"
#include "temp_home.hpp"

using leuria::store::EngineLock;

TEST(EngineLock, OneHolderPerHome) {
  TempHome home;
  auto first = EngineLock::take(home.dir);
  ASSERT_TRUE(first) << first.error();

  // flock locks belong to the open file, so a second take conflicts even within one process.
  auto second = EngineLock::take(home.dir);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error(), "Another Leuria engine is already running with " + home.dir.string() +
                                "; stop it first (or set LEURIA_HOME).");

  struct stat st{};
  ASSERT_EQ(::stat((home.dir / "engine.lock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // Moving keeps the lock; dropping the last holder frees it.
  EngineLock moved = std::move(*first);
  EXPECT_FALSE(EngineLock::take(home.dir));
  { EngineLock gone = std::move(moved); }
  EXPECT_TRUE(EngineLock::take(home.dir));
}

TEST(EngineLock, AHomeThatCannotHoldTheFileSaysWhy) {
  TempHome home;
  auto r = EngineLock::take(home.dir / "missing");
  ASSERT_FALSE(r);
  EXPECT_TRUE(r.error().starts_with("Cannot open ")) << r.error();
}

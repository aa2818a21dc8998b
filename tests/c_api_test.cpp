#include "trace_helpers.hpp"

extern "C" int tinescope_c_api_record(const char* path);

namespace tinescope::test {
namespace {

using namespace format;

TEST(CApi, RecordsFromC99) {
  const std::string path = temp_path("c-api");
  unlink(path.c_str());
  ASSERT_EQ(tinescope_c_api_record(path.c_str()), 0);
  Collected c = read_trace(path);
  std::vector<uint16_t> types;
  for (const OwnedEvent& o : c.events)
    if (o.e.feedlet != kMetadataFeedlet) types.push_back(o.e.type);
  ASSERT_EQ(types.size(), 16u);
  EXPECT_EQ(types[0], kThreadName);
  EXPECT_EQ(types[1], kIntervalBegin);
  EXPECT_EQ(types[14], kIntervalEnd);
  EXPECT_EQ(types[15], kMetadata);
  auto deadlines = c.of_type(kJobDeadline);
  ASSERT_EQ(deadlines.size(), 1u);
  EXPECT_GT(deadlines[0]->e.u[2], deadlines[0]->e.ts) << "a deadline 1 ms ahead";
  auto priorities = c.of_type(kTaskPriority);
  ASSERT_EQ(priorities.size(), 1u);
  EXPECT_EQ(c.name(priorities[0]->e.u[0]), "c.task");
  EXPECT_EQ(priorities[0]->e.i(1), 3);
  EXPECT_EQ(c.catalog.channel_name(3), "c.channel") << "ts_channel_name";
  EXPECT_EQ(c.catalog.channel_label(3), "c.channel (3)");
  EXPECT_EQ(c.catalog.channel_label(4), "4");
  auto counters = c.of_type(kCounterInt);
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0]->e.i(1), 42);
  auto sends = c.of_type(kMessageSend);
  ASSERT_EQ(sends.size(), 1u);
  EXPECT_EQ(sends[0]->bytes[3], "abc");
  const EventTypeDef* def = nullptr;
  for (uint16_t code = kFirstUserType; code <= kMaxEventType && !def; ++code)
    if (const EventTypeDef* d = c.catalog.schema.find(code); d && d->name == "c.user") def = d;
  ASSERT_NE(def, nullptr);
  auto users = c.of_type(def->code);
  ASSERT_EQ(users.size(), 1u);
  EXPECT_EQ(users[0]->e.u[0], 4096u);
  EXPECT_DOUBLE_EQ(users[0]->e.f(1), 0.25);
  EXPECT_EQ(c.catalog.feedlets.at(users[0]->e.feedlet).name, "c-thread");
  unlink(path.c_str());
}

}  // namespace
}  // namespace tinescope::test
